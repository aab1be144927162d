"""Discovery (what gets indexed) and the path guard (what may be read), on real folders."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from memvault.ingest.discovery import DiscoveredFile, discover
from memvault.ingest.pathguard import PathNotAllowed, check_allowed

MB = 1 << 20


def write(root: Path, rel: str, content: str | bytes = "text\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def rels(roots: list[Path], **kw) -> list[str]:
    kw.setdefault("max_file_bytes", MB)
    return [f.rel for f in discover(roots, **kw)]


def test_gitignore_root_nested_and_negation(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.log\n/secret.txt\ngenerated/\n!keep.log\n")
    write(tmp_path, "README.md")
    write(tmp_path, "app.log")
    write(tmp_path, "keep.log")
    write(tmp_path, "secret.txt")
    write(tmp_path, "sub/secret.txt")  # "/secret.txt" is anchored to the root's folder
    write(tmp_path, "generated/out.md")
    write(tmp_path, "sub/deep/generated/x.md")  # "generated/" matches at any depth
    # nested: patterns relative to docs/, and a deeper file overrides the root's
    write(tmp_path, "docs/.gitignore", "/draft.md\n!debug.log\ntmp/\n")
    write(tmp_path, "docs/draft.md")
    write(tmp_path, "docs/guide.md")
    write(tmp_path, "docs/debug.log")
    write(tmp_path, "docs/tmp/a.md")
    write(tmp_path, "draft.md")  # docs/.gitignore does not reach its parent

    got = rels([tmp_path])
    assert got == [
        "README.md",
        "docs/debug.log",
        "docs/guide.md",
        "draft.md",
        "keep.log",
        "sub/secret.txt",
    ]


def test_enclosing_repository_gitignore_applies_to_a_subfolder_root(tmp_path: Path) -> None:
    (tmp_path / ".git" / "info").mkdir(parents=True)
    write(tmp_path, ".git/info/exclude", "*.private\n")
    write(tmp_path, ".gitignore", "docs/_gen/\n")
    write(tmp_path, "docs/index.md")
    write(tmp_path, "docs/_gen/api.md")
    write(tmp_path, "docs/notes.private")
    assert rels([tmp_path / "docs"]) == ["index.md"]


def test_default_ignores_and_virtualenvs(tmp_path: Path) -> None:
    write(tmp_path, "src/main.py")
    for rel in [
        ".git/config", "node_modules/pkg/index.js", ".venv/lib/x.py", "venv/lib/x.py",
        "src/__pycache__/main.cpython-311.pyc", "build/out.txt", "dist/pkg.txt",
        ".tox/log.txt", ".mypy_cache/x.json", "target/debug/x.txt", "web/.next/x.js",
        "myenv/pyvenv.cfg", "myenv/lib/site.py", ".env", "app.min.js",
    ]:
        write(tmp_path, rel)
    write(tmp_path, "env/settings.yaml")  # a folder called env that is no virtualenv stays
    assert rels([tmp_path]) == ["env/settings.yaml", "src/main.py"]


def test_extra_ignores(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    write(tmp_path, "old/b.md")
    write(tmp_path, "c.rst")
    assert rels([tmp_path], extra_ignores=["old/", "*.rst"]) == ["a.md"]


def test_binary_skipped_pdf_and_utf16_kept(tmp_path: Path) -> None:
    write(tmp_path, "image.png", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    write(tmp_path, "blob.txt", b"looks like text\x00but is not")
    write(tmp_path, "late_nul.txt", b"a" * 9000 + b"\x00")  # NUL past the 8 KiB sniff
    write(tmp_path, "paper.pdf", b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n<<>>\x00\nendobj\n")
    write(tmp_path, "wide.txt", "hello".encode("utf-16"))  # BOM + NUL bytes, still text
    write(tmp_path, "ok.md", "fine")
    assert rels([tmp_path]) == ["late_nul.txt", "ok.md", "paper.pdf", "wide.txt"]


def test_big_file_skipped(tmp_path: Path) -> None:
    write(tmp_path, "small.txt", "x" * 100)
    write(tmp_path, "exact.txt", "x" * 1000)
    write(tmp_path, "big.txt", "x" * 1001)
    assert rels([tmp_path], max_file_bytes=1000) == ["exact.txt", "small.txt"]
    # a file named directly obeys the size limit too
    assert rels([tmp_path / "big.txt"], max_file_bytes=1000) == []


def test_symlinks_never_escape_and_never_duplicate(tmp_path: Path) -> None:
    root = tmp_path / "root"
    outside = tmp_path / "outside"
    write(outside, "secret.md", "do not index")
    write(root, "real/doc.md", "inside")
    (root / "link_out.md").symlink_to(outside / "secret.md")
    (root / "dir_out").symlink_to(outside, target_is_directory=True)
    (root / "alias.md").symlink_to(root / "real" / "doc.md")  # inside: yields the target once
    (root / "dir_in").symlink_to(root / "real", target_is_directory=True)
    (root / "dangling.md").symlink_to(tmp_path / "nowhere.md")

    found = list(discover([root], max_file_bytes=MB))
    assert [f.rel for f in found] == ["alias.md"]
    assert found[0].path == (root / "real" / "doc.md").resolve()
    assert all(f.path.is_relative_to(root.resolve()) for f in found)


def test_records_and_order_are_deterministic(tmp_path: Path) -> None:
    for rel in ["b/z.md", "a.md", "b/a.md", "c.txt", "B.md"]:
        write(tmp_path, rel, rel)
    file_root = write(tmp_path / "elsewhere", "single.md", "one file")
    first = list(discover([tmp_path / "b", file_root, tmp_path], max_file_bytes=MB))
    second = list(discover([tmp_path / "b", file_root, tmp_path], max_file_bytes=MB))
    assert first == second
    assert [f.rel for f in first] == [
        "a.md", "z.md",  # root b first, as given
        "single.md",  # a file root is taken as it is, named by its own name
        "B.md", "a.md", "c.txt",  # sorted by name; b/* and elsewhere/* were already yielded
    ]
    rec = next(f for f in first if f.rel == "c.txt")
    assert isinstance(rec, DiscoveredFile)
    assert rec.path == (tmp_path / "c.txt").resolve() and rec.path.is_absolute()
    assert rec.size == len("c.txt")
    assert rec.mtime == pytest.approx(os.stat(tmp_path / "c.txt").st_mtime)
    # each real file exactly once across overlapping roots
    assert len({f.path for f in first}) == len(first) == 6


def test_file_root_bypasses_ignore_rules(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.log\n")
    log = write(tmp_path, "run.log", "named on purpose")
    assert rels([log]) == ["run.log"]
    assert rels([tmp_path]) == []


def test_missing_root_is_skipped(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    assert rels([tmp_path / "nope", tmp_path]) == ["a.md"]


# ----------------------------------------------------------------------------- path guard


def test_check_allowed_accepts_inside_and_returns_resolved(tmp_path: Path) -> None:
    root = tmp_path / "allowed"
    doc = write(root, "docs/a.md")
    assert check_allowed(doc, [root]) == doc.resolve()
    assert check_allowed(root, [root]) == root.resolve()
    # "..": collapsed first, then checked; staying inside is fine
    assert check_allowed(root / "docs" / ".." / "docs" / "a.md", [root]) == doc.resolve()
    # a path that does not exist yet is checked lexically
    assert check_allowed(root / "new" / "x.md", [root]) == (root / "new" / "x.md").resolve()


def test_check_allowed_refuses_dotdot_traversal(tmp_path: Path) -> None:
    root = tmp_path / "allowed"
    root.mkdir()
    write(tmp_path, "secret.txt")
    with pytest.raises(PathNotAllowed, match="outside the allowed directories"):
        check_allowed(root / ".." / "secret.txt", [root])
    with pytest.raises(PathNotAllowed):
        check_allowed(Path("/etc/passwd"), [root])
    # a sibling whose name starts with the root's name is not inside it
    sibling = write(tmp_path, "allowed-evil/x.md")
    with pytest.raises(PathNotAllowed):
        check_allowed(sibling, [root])


def test_check_allowed_refuses_symlink_escape(tmp_path: Path) -> None:
    root = tmp_path / "allowed"
    root.mkdir()
    secret = write(tmp_path / "outside", "secret.md")
    (root / "link.md").symlink_to(secret)
    (root / "linkdir").symlink_to(secret.parent, target_is_directory=True)
    with pytest.raises(PathNotAllowed, match="resolves to"):
        check_allowed(root / "link.md", [root])
    with pytest.raises(PathNotAllowed):
        check_allowed(root / "linkdir" / "secret.md", [root])
    # a second allowed root that contains the target makes it fine
    assert check_allowed(root / "link.md", [root, tmp_path / "outside"]) == secret.resolve()


def test_check_allowed_through_symlinked_root_and_no_roots(tmp_path: Path) -> None:
    real = tmp_path / "real"
    doc = write(real, "a.md")
    (tmp_path / "alias").symlink_to(real, target_is_directory=True)
    assert check_allowed(tmp_path / "alias" / "a.md", [tmp_path / "alias"]) == doc.resolve()
    with pytest.raises(PathNotAllowed, match="no directories are allowed"):
        check_allowed(doc, [])
    assert issubclass(PathNotAllowed, ValueError)


def test_malformed_gitignore_pattern_skips_only_that_line(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "[z-a]\n*.log\n")  # a bad range, then a good pattern
    write(tmp_path, "a.md")
    write(tmp_path, "b.log")
    assert rels([tmp_path]) == ["a.md"]


def test_every_skip_is_reported_with_its_kind(tmp_path: Path) -> None:
    write(tmp_path, "a.md")
    write(tmp_path, "big.md", "x" * 2000)
    write(tmp_path, "img.png", b"\x89PNG\x00\x00")
    write(tmp_path, "node_modules/x.js")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    (tmp_path / "dangling.md").symlink_to(tmp_path / "nowhere")
    named_fifo = tmp_path / "fifo"
    skipped: list = []
    got = [f.rel for f in discover([tmp_path, named_fifo, tmp_path / "loop"], max_file_bytes=1000,
                                   on_skip=skipped.append)]
    assert got == ["a.md"]
    kinds = {(s.rel, s.named): s.kind for s in skipped}
    assert kinds == {
        ("big.md", False): "too_large", ("dangling.md", False): "broken_symlink", ("fifo", False): "not_a_regular_file",
        ("img.png", False): "binary", ("loop", False): "symlink_loop", ("node_modules", False): "ignored",
        ("fifo", True): "not_a_regular_file", ("loop", True): "symlink_loop",
    }
    assert all(s.reason for s in skipped)


def test_a_file_turned_into_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    from memvault.ingest.discovery import read_regular_file

    os.mkfifo(tmp_path / "p")
    with pytest.raises(OSError, match="named pipe"):
        read_regular_file(tmp_path / "p", 1000)
    write(tmp_path, "grown.md", "y" * 50)
    with pytest.raises(OSError, match="size limit"):
        read_regular_file(tmp_path / "grown.md", 10)
    assert read_regular_file(tmp_path / "grown.md", 50) == b"y" * 50


def test_hidden_files_and_folders_are_read_only_when_named(tmp_path: Path) -> None:
    write(tmp_path, "README.md", "Ignore *.log files.")
    write(tmp_path, ".gitignore", "*.log\n")
    write(tmp_path, ".env.example", "API_URL=http://localhost\n")
    write(tmp_path, ".github/workflows/ci.yml", "on: push\n")
    write(tmp_path, ".github/.hidden-note.md", "deep")
    write(tmp_path, "docs/.draft.md", "draft")
    write(tmp_path, "docs/guide.md", "guide")
    skipped: list = []
    assert [f.rel for f in discover([tmp_path], max_file_bytes=MB, on_skip=skipped.append)] == [
        "README.md", "docs/guide.md"]
    assert {s.rel for s in skipped if s.kind == "hidden"} == {".env.example", ".github", ".gitignore", "docs/.draft.md"}
    # named: read, ripgrep's way (a named hidden folder's plain files; its hidden ones still not)
    assert rels([tmp_path / ".gitignore", tmp_path / ".env.example"]) == [".gitignore", ".env.example"]
    assert rels([tmp_path / ".github"]) == ["workflows/ci.yml"]
