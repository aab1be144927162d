"""Find the files worth indexing under some roots: .gitignore-aware, no binaries, no escapes.

The walk honours every ``.gitignore`` on the way (git's own semantics through
``pathspec``'s ``GitIgnoreSpec``: patterns are relative to the folder holding the file,
a deeper file overrides a shallower one, ``!negation`` re-includes, an ignored folder is
never entered), plus the enclosing repository's ``.gitignore`` files above the root and
``.git/info/exclude``, plus a default ignore list of VCS folders, dependency folders,
virtualenvs, caches and build outputs.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterator, Sequence
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


class _Ignorer:
    """The fixed ignores (defaults + caller's, relative to the root, always win), then a
    stack of (base folder, compiled .gitignore) with git's precedence: deepest decides."""

    def __init__(self, root: Path, fixed: GitIgnoreSpec, specs: list[tuple[Path, GitIgnoreSpec]]):
        self.root = root
        self.fixed = fixed
        self.specs = specs

    def pushed(self, base: Path, spec: GitIgnoreSpec | None) -> _Ignorer:
        if spec is None:
            return self
        return _Ignorer(self.root, self.fixed, self.specs + [(base, spec)])

    def ignored(self, path: Path, is_dir: bool) -> bool:
        suffix = "/" if is_dir else ""
        if self.fixed.match_file(path.relative_to(self.root).as_posix() + suffix):
            return True
        for base, spec in reversed(self.specs):
            rel = path.relative_to(base).as_posix() + suffix
            include = spec.check_file(rel).include
            if include is not None:
                return include
        return False


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


def _enclosing_repo_specs(root: Path) -> list[tuple[Path, GitIgnoreSpec]]:
    """Ignore files of the git repository around ``root``, from its top down to ``root``'s parent.

    Git applies them to ``root``'s contents too, so ``memvault index docs/`` inside a
    repository skips what the repository's top-level .gitignore skips.
    """
    top = next((f for f in (root, *root.parents) if (f / ".git").exists()), None)
    if top is None:
        return []
    specs: list[tuple[Path, GitIgnoreSpec]] = []
    if (top / ".git").is_dir():
        exclude = _load_gitignore(top / ".git" / "info" / "exclude")
        if exclude is not None:
            specs.append((top, exclude))
    above = [f for f in root.parents if f == top or f.is_relative_to(top)]
    for folder in reversed(above):  # shallow first: deeper files take precedence
        spec = _load_gitignore(folder / ".gitignore")
        if spec is not None:
            specs.append((folder, spec))
    return specs


def _is_binary(path: Path) -> bool:
    """NUL byte in the first 8 KiB means binary; PDF and BOM-marked UTF-16/32 are text here."""
    try:
        with path.open("rb") as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError as exc:
        log.warning("cannot read %s: %s", path, exc)
        return True
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
) -> Iterator[DiscoveredFile]:
    """Yield the indexable files under ``roots``, each real file once, in a deterministic order.

    roots: folders to walk, or files taken as they are (no ignore rules apply to a file
        named directly; the binary and size checks still do). Missing roots are logged
        and skipped.
    max_file_bytes: files larger than this are skipped (logged at INFO).
    extra_ignores: more gitwildmatch patterns, relative to each root (e.g. ``"docs/old/"``).
    Order: roots in the order given; inside a root, depth-first with entries sorted by name.
    Skipped: .gitignored paths, DEFAULT_IGNORES, virtualenvs, binary files (NUL byte in the
    first 8 KiB, except PDF), files over the size limit, and any symlink whose target is
    outside the root (links inside the root are not walked twice: a linked folder is never
    entered, a linked file yields its target once).
    """
    fixed = GitIgnoreSpec.from_lines([*DEFAULT_IGNORES, *extra_ignores])
    seen: set[Path] = set()
    for given in roots:
        root = Path(os.path.expanduser(given)).resolve()
        if not root.exists():
            log.warning("skipping %s: no such file or folder", given)
            continue
        if root.is_file():
            found = _accept_file(root, root, root.name, max_file_bytes, seen)
            if found is not None:
                yield found
            continue
        ignorer = _Ignorer(root, fixed, _enclosing_repo_specs(root))
        yield from _walk(root, root, ignorer, max_file_bytes, seen)


def _walk(
    root: Path, folder: Path, ignorer: _Ignorer, max_file_bytes: int, seen: set[Path]
) -> Iterator[DiscoveredFile]:
    ignorer = ignorer.pushed(folder, _load_gitignore(folder / ".gitignore"))
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        log.warning("cannot list %s: %s", folder, exc)
        return
    for entry in entries:
        path = folder / entry.name
        try:
            is_link = entry.is_symlink()
            st = os.stat(path)  # follows links; a dangling one raises
        except OSError:
            log.debug("skipping %s: dangling link or unreadable", path)
            continue
        is_dir = stat.S_ISDIR(st.st_mode)
        if ignorer.ignored(path, is_dir):
            continue
        rel = path.relative_to(root).as_posix()
        if is_link:
            target = path.resolve()
            if not target.is_relative_to(root):
                log.info("skipping %s: symlink to %s, outside %s", rel, target, root)
                continue
            if is_dir:
                continue  # its target inside the root is walked in its own place
        if is_dir:
            if _is_virtualenv(path):
                continue
            yield from _walk(root, path, ignorer, max_file_bytes, seen)
        elif stat.S_ISREG(st.st_mode):
            found = _accept_file(path, root, rel, max_file_bytes, seen)
            if found is not None:
                yield found


def _accept_file(
    path: Path, root: Path, rel: str, max_file_bytes: int, seen: set[Path]
) -> DiscoveredFile | None:
    real = path.resolve()
    if real in seen:
        return None
    try:
        st = real.stat()
    except OSError as exc:
        log.warning("cannot stat %s: %s", path, exc)
        return None
    if st.st_size > max_file_bytes:
        log.info("skipping %s: %d bytes > max_file_bytes %d", rel, st.st_size, max_file_bytes)
        return None
    if _is_binary(real):
        log.debug("skipping %s: binary", rel)
        return None
    seen.add(real)
    return DiscoveredFile(path=real, rel=rel, size=st.st_size, mtime=st.st_mtime)
