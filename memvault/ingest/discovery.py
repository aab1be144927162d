"""Find the files worth indexing under some roots: .gitignore-aware, no binaries, no escapes.

The walk honours every ``.gitignore`` on the way (git's own semantics through
``pathspec``'s ``GitIgnoreSpec``: patterns are relative to the folder holding the file,
a deeper file overrides a shallower one, ``!negation`` re-includes, an ignored folder is
never entered), plus the enclosing repository's ``.gitignore`` files above the root and
``.git/info/exclude``, plus a default ignore list of VCS folders, dependency folders,
virtualenvs, caches and build outputs. Hidden files and folders (a name starting with
``.``: ``.gitignore``, ``.env.example``, ``.github/``) are skipped unless named as a root,
as ripgrep does; inside a named hidden folder its plain files are read.

Every path left out is reported to the caller's ``on_skip`` with its reason
(``Skipped``), so that a tool can say why a file it was asked for was not indexed.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from pathspec import GitIgnoreSpec

log = logging.getLogger(__name__)

# Folders and files nobody wants in a documentation index. Gitwildmatch patterns, matched
# against the path relative to the root at every depth. A folder holding ``pyvenv.cfg``
# or ``conda-meta/`` is a virtualenv whatever its name (so a plain ``env/`` folder of
# configuration files is kept, a virtualenv called ``env`` is not).
DEFAULT_IGNORES: tuple[str, ...] = (
    # version control
    ".git", ".hg", ".svn", ".bzr", "_darcs", ".jj",
    # dependencies and virtualenvs
    "node_modules/", "bower_components/", ".venv/", "venv/", ".pnpm-store/", ".yarn/",
    "site-packages/", "vendor/bundle/",
    # caches
    "__pycache__/", ".mypy_cache/", ".pytest_cache/", ".ruff_cache/", ".hypothesis/",
    ".tox/", ".nox/", ".cache/", ".parcel-cache/", ".turbo/", ".gradle/", ".terraform/",
    ".ipynb_checkpoints/", "htmlcov/", ".coverage", "coverage/",
    # build outputs
    "build/", "dist/", "target/", "_build/", ".next/", ".nuxt/", ".svelte-kit/",
    ".output/", "*.egg-info/", ".eggs/", "cmake-build-*/",
    # editor and OS litter
    ".idea/", ".vscode/", ".DS_Store", "Thumbs.db", "*.swp", "*~",
    # secrets and machine files that are never documentation
    ".env", ".env.*", "*.pem", "*.key", "*.p12", "*.pfx", "id_rsa*", "id_dsa*", "id_ecdsa*", "id_ed25519*",
    ".ssh/", ".aws/", ".gnupg/", ".netrc", ".pgpass", ".npmrc", ".pypirc", "credentials", "*.kdbx",
    # generated or compiled files that pass the text sniff
    "*.pyc", "*.pyo", "*.min.js", "*.min.css", "*.map", "*.lock", "package-lock.json",
    "pnpm-lock.yaml",
)

SNIFF_BYTES = 8192
_TEXT_BOMS = (b"\xef\xbb\xbf", b"\xff\xfe", b"\xfe\xff")  # UTF-16/32 text holds NUL bytes


@dataclass(frozen=True, slots=True)
class DiscoveredFile:
    """One file to index.

    path: absolute, symlinks resolved (the file actually read).
    rel: posix path relative to the root it was found under (a file given directly as a
        root has its own name); stable across machines, used in citations.
    size: bytes. mtime: seconds since the epoch (``st_mtime``).
    """

    path: Path
    rel: str
    size: int
    mtime: float


SKIP_KINDS: tuple[str, ...] = (
    "not_a_regular_file", "too_large", "symlink_loop", "broken_symlink", "symlink_outside", "unreadable",
    "binary", "ignored", "hidden", "virtualenv",
)
"""The ``Skipped.kind`` values. The first six are surprises a person wants to hear about
wherever they happen; the last four are what a folder is expected to hold (images,
dependencies, caches) and are worth naming only for a path given directly."""


@dataclass(frozen=True, slots=True)
class Skipped:
    """A path left out of the index, and why.

    path: as found (absolute, symlinks not resolved). rel: posix path relative to the root
    it was found under (a root's own name for a root). kind: one of ``SKIP_KINDS``.
    reason: one sentence for a person (what is wrong, what would be read). root: the root
    (as given, resolved) it belongs to; ``named`` is true when it is that root itself.
    """

    path: Path
    rel: str
    kind: str
    reason: str
    root: Path
    named: bool = False


OnSkip = Callable[[Skipped], None]

_FILE_TYPES = ((stat.S_ISFIFO, "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket"),
               (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"))


def file_type(mode: int) -> str:
    """What kind of file ``st_mode`` describes, in words ("a named pipe (FIFO)", "a folder", ...)."""
    if stat.S_ISDIR(mode):
        return "a folder"
    return next((what for test, what in _FILE_TYPES if test(mode)), "not a regular file")


def not_regular(mode: int) -> str:
    """The reason given for a path that is neither a regular file nor a folder."""
    return f"{file_type(mode)}, not a regular file: only regular files are read"


def too_large(size: int, limit: int) -> str:
    """The reason given for a file over the size limit."""
    return (f"{size:,} bytes, over the size limit of {limit:,} bytes (setting docs_max_file_bytes, "
            "MEMVAULT_DOCS_MAX_FILE_BYTES)")


def stat_failure(exc: OSError, is_link: bool) -> tuple[str, str]:
    """(kind, reason) of a path whose ``os.stat`` failed with ``exc``."""
    if exc.errno == errno.ELOOP:
        return "symlink_loop", "a symbolic link loop (its links lead back to themselves): there is nothing to read"
    if is_link and exc.errno == errno.ENOENT:
        return "broken_symlink", "a symbolic link to a file that does not exist"
    return "unreadable", f"cannot be read: {exc.strerror or exc}"


HIDDEN_REASON = "hidden (its name starts with '.'): hidden files and folders are read only when named"
BINARY_REASON = ("binary (a NUL byte in its first 8 KiB): index_docs reads text, Markdown, reStructuredText, "
                 "code, HTML and PDF")


class _Ignorer:
    """The fixed ignores (defaults + caller's, relative to the root, always win), then a
    stack of (base folder, compiled .gitignore) with git's precedence: deepest decides."""

    def __init__(self, root: Path, fixed: GitIgnoreSpec, specs: list[tuple[Path, GitIgnoreSpec, Path]]):
        self.root = root
        self.fixed = fixed
        self.specs = specs

    def pushed(self, base: Path, spec: GitIgnoreSpec | None) -> _Ignorer:
        if spec is None:
            return self
        return _Ignorer(self.root, self.fixed, self.specs + [(base, spec, base / ".gitignore")])

    def ignored(self, path: Path, is_dir: bool) -> str | None:
        """Why ``path`` is ignored (a sentence), or None when it is not."""
        suffix = "/" if is_dir else ""
        if self.fixed.match_file(path.relative_to(self.root).as_posix() + suffix):
            return ("ignored by default (version control, dependencies, caches, build output, editor files, "
                    "keys and credentials); name it to index it")
        for base, spec, source in reversed(self.specs):
            rel = path.relative_to(base).as_posix() + suffix
            include = spec.check_file(rel).include
            if include is not None:
                return f"ignored by {source}; name it to index it" if include else None
        return None


def _load_gitignore(path: Path) -> GitIgnoreSpec | None:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return None
    try:
        spec = GitIgnoreSpec.from_lines(lines)
    except Exception:  # pathspec raises on a malformed pattern; git skips just that line
        good = []
        for line in lines:
            try:
                GitIgnoreSpec.from_lines([line])
            except Exception as exc:
                log.warning("%s: ignoring pattern %r: %s", path, line, exc)
            else:
                good.append(line)
        spec = GitIgnoreSpec.from_lines(good)
    return spec if len(spec) else None


def _enclosing_repo_specs(root: Path) -> list[tuple[Path, GitIgnoreSpec, Path]]:
    """Ignore files of the git repository around ``root``, from its top down to ``root``'s parent.

    Git applies them to ``root``'s contents too, so ``memvault index docs/`` inside a
    repository skips what the repository's top-level .gitignore skips.
    """
    top = next((f for f in (root, *root.parents) if (f / ".git").exists()), None)
    if top is None:
        return []
    specs: list[tuple[Path, GitIgnoreSpec, Path]] = []
    if (top / ".git").is_dir():
        exclude = _load_gitignore(top / ".git" / "info" / "exclude")
        if exclude is not None:
            specs.append((top, exclude, top / ".git" / "info" / "exclude"))
    above = [f for f in root.parents if f == top or f.is_relative_to(top)]
    for folder in reversed(above):  # shallow first: deeper files take precedence
        spec = _load_gitignore(folder / ".gitignore")
        if spec is not None:
            specs.append((folder, spec, folder / ".gitignore"))
    return specs


def _is_binary(path: Path) -> bool:
    """NUL byte in the first 8 KiB means binary; PDF and BOM-marked UTF-16/32 are text here.

    Opened without blocking (a file replaced by a named pipe since it was listed does
    not hang the walk). Raises OSError when the file cannot be read.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        head = fh.read(SNIFF_BYTES)
    if head.startswith(b"%PDF-") or head.startswith(_TEXT_BOMS):
        return False
    return b"\x00" in head


def _is_virtualenv(folder: Path) -> bool:
    return (folder / "pyvenv.cfg").is_file() or (folder / "conda-meta").is_dir()


def discover(
    roots: Sequence[Path],
    *,
    max_file_bytes: int,
    extra_ignores: Sequence[str] = (),
    on_skip: OnSkip | None = None,
) -> Iterator[DiscoveredFile]:
    """Yield the indexable files under ``roots``, each real file once, in a deterministic order.

    roots: folders to walk, or files taken as they are (no ignore rules apply to a file
        named directly; the binary and size checks still do). Missing roots are logged
        and skipped.
    max_file_bytes: files larger than this are skipped.
    extra_ignores: more gitwildmatch patterns, relative to each root (e.g. ``"docs/old/"``).
    on_skip: called with a ``Skipped`` for every path left out (a root that is no file or
        folder, a file too large, a symlink loop, binary, ignored, ...); an ignored folder
        is reported once, not file by file.
    Order: roots in the order given; inside a root, depth-first with entries sorted by name.
    Skipped: hidden files and folders (unless a root), .gitignored paths, DEFAULT_IGNORES,
    virtualenvs, binary files (NUL byte in the
    first 8 KiB, except PDF), files over the size limit, anything that is not a regular
    file or a folder (named pipes, sockets, devices), symlink loops and dangling links,
    and any symlink whose target is outside the root (links inside the root are not
    walked twice: a linked folder is never entered, a linked file yields its target once).
    """
    fixed = GitIgnoreSpec.from_lines([*DEFAULT_IGNORES, *extra_ignores])
    seen: set[Path] = set()

    def skip(path: Path, rel: str, kind: str, reason: str, root: Path, named: bool = False) -> None:
        log.info("skipping %s: %s", path, reason)
        if on_skip is not None:
            on_skip(Skipped(path, rel, kind, reason, root, named))

    for given in roots:
        given = Path(os.path.expanduser(given))
        try:
            st = os.stat(given)  # follows links
            root = given.resolve()
        except (OSError, RuntimeError) as exc:  # RuntimeError: Path.resolve on a symlink loop
            if isinstance(exc, OSError) and exc.errno == errno.ENOENT and not given.is_symlink():
                log.warning("skipping %s: no such file or folder", given)
                continue
            kind, reason = stat_failure(exc if isinstance(exc, OSError) else OSError(errno.ELOOP, str(exc)),
                                        given.is_symlink())
            skip(given, given.name, kind, reason, given, True)
            continue
        if stat.S_ISREG(st.st_mode):
            found = _accept_file(root, root, root.name, max_file_bytes, seen, skip, named=True)
            if found is not None:
                yield found
            continue
        if not stat.S_ISDIR(st.st_mode):
            skip(given, given.name, "not_a_regular_file", not_regular(st.st_mode), root, True)
            continue
        ignorer = _Ignorer(root, fixed, _enclosing_repo_specs(root))
        yield from _walk(root, root, ignorer, max_file_bytes, seen, skip)


_Skip = Callable[..., None]


def _walk(
    root: Path, folder: Path, ignorer: _Ignorer, max_file_bytes: int, seen: set[Path], skip: _Skip
) -> Iterator[DiscoveredFile]:
    ignorer = ignorer.pushed(folder, _load_gitignore(folder / ".gitignore"))
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        skip(folder, folder.relative_to(root).as_posix() or folder.name, "unreadable",
             f"cannot list this folder: {exc.strerror or exc}", root)
        return
    for entry in entries:
        path = folder / entry.name
        rel = path.relative_to(root).as_posix()
        if entry.name.startswith("."):  # before any other check: .git and the like are never looked into
            skip(path, rel, "hidden", HIDDEN_REASON, root)
            continue
        is_link = entry.is_symlink()
        try:
            st = os.stat(path)  # follows links; a dangling one or a loop raises
        except OSError as exc:
            skip(path, rel, *stat_failure(exc, is_link), root)
            continue
        is_dir = stat.S_ISDIR(st.st_mode)
        why = ignorer.ignored(path, is_dir)
        if why is not None:
            skip(path, rel, "ignored", why, root)
            continue
        if is_link:
            try:
                target = path.resolve()
            except (OSError, RuntimeError) as exc:
                skip(path, rel, *stat_failure(exc if isinstance(exc, OSError) else OSError(errno.ELOOP, str(exc)),
                                             True), root)
                continue
            if not target.is_relative_to(root):
                skip(path, rel, "symlink_outside", f"a symbolic link to {target}, outside the folder being indexed "
                     f"({root}); index that folder to read it", root)
                continue
            if is_dir:
                continue  # its target inside the root is walked in its own place
        if is_dir:
            if _is_virtualenv(path):
                skip(path, rel, "virtualenv", "a Python virtual environment (installed packages)", root)
                continue
            yield from _walk(root, path, ignorer, max_file_bytes, seen, skip)
        elif stat.S_ISREG(st.st_mode):
            found = _accept_file(path, root, rel, max_file_bytes, seen, skip)
            if found is not None:
                yield found
        else:
            skip(path, rel, "not_a_regular_file", not_regular(st.st_mode), root)


def _accept_file(
    path: Path, root: Path, rel: str, max_file_bytes: int, seen: set[Path], skip: _Skip, *, named: bool = False
) -> DiscoveredFile | None:
    real = path.resolve()
    if real in seen:
        return None
    try:
        st = real.stat()
    except OSError as exc:
        skip(path, rel, *stat_failure(exc, False), root, named)
        return None
    if not stat.S_ISREG(st.st_mode):  # replaced since it was listed
        skip(path, rel, "not_a_regular_file", not_regular(st.st_mode), root, named)
        return None
    if st.st_size > max_file_bytes:
        skip(path, rel, "too_large", too_large(st.st_size, max_file_bytes), root, named)
        return None
    try:
        binary = _is_binary(real)
    except OSError as exc:
        skip(path, rel, "unreadable", f"cannot be read: {exc.strerror or exc}", root, named)
        return None
    if binary:
        skip(path, rel, "binary", BINARY_REASON, root, named)
        return None
    seen.add(real)
    return DiscoveredFile(path=real, rel=rel, size=st.st_size, mtime=st.st_mtime)


def read_regular_file(path: Path, max_bytes: int) -> bytes:
    """The bytes of the regular file at ``path``, read without ever blocking on it.

    Opened non-blocking and checked on the open descriptor, so a file replaced by a
    named pipe or a device since it was discovered is refused instead of hanging the
    reader, and one grown past ``max_bytes`` is refused instead of filling memory.
    Raises OSError (its message says which of these, or the system's reason).
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise OSError(not_regular(st.st_mode))
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise OSError(f"grew past the size limit since it was found: {too_large(st.st_size, max_bytes)}")
    return data
