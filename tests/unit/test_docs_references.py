"""Code and docs stand alone: no issue numbers, no documents the repository does not hold.

A reader of memvault/, docs/, README.md or CHANGELOG.md has only the repository. A pointer
to an issue tracker entry ("issue 27", "issue #27", a bare "#27", "as the issue asks") or
to a document kept elsewhere (a "DESIGN" document, a file under ``../shared``) sends them
somewhere they cannot follow. Allowed: a public reference into another project (``owner/repo#123``), a
standard's number (``PKCS #12``, ``Unicode TS #39``), and naming the benchmark data
directory ``../shared/bench`` itself (the ``--data`` default of ``bench/``; bench/ and
tests/ read data from it by path and are not scanned).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

# "issue 27", "Issues #3"; not "issue-42" (an example task id).
ISSUE_WORD = re.compile(r"\bissues?\s+#?\d+", re.IGNORECASE)
# A tracker entry named without its number: "spelled out by the issues", "the issue asks for".
ISSUE_CITED = re.compile(
    r"\b(?:by|in|per|see|from) the issues?\b|\bthe issues? (?:asks?|says|names|spells?|wants|requires)\b",
    re.IGNORECASE,
)
# A bare "#27": not inside a word or a path ("PKCS#8", "owner/repo#123", "&#39;").
BARE_NUMBER = re.compile(r"(?<![\w&/])#\d+\b")
# Standards cited by number: "PKCS #12", "Unicode TS #39", "UTS #46", "RFC #..." .
STANDARD_BEFORE = re.compile(r"\b(?:PKCS|TS|UTS|RFC|ISO)\s*$")
DESIGN_DOC = re.compile(r"\bDESIGN\b(?:\.md)?")
# ../shared itself or anything under it but the bench data directory named as a whole.
SHARED = re.compile(r"\.\./shared\b(?!/bench\b(?![/\w.-]))")


def problems(text: str) -> list[str]:
    """Each offending reference in ``text`` as ``"line N: <match>"``; empty when clean."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        hits = [m.group(0) for m in ISSUE_WORD.finditer(line)]
        hits += [m.group(0) for m in ISSUE_CITED.finditer(line)]
        hits += [
            m.group(0)
            for m in BARE_NUMBER.finditer(line)
            if not STANDARD_BEFORE.search(line[: m.start()])
        ]
        hits += [m.group(0) for m in DESIGN_DOC.finditer(line)]
        hits += [m.group(0) for m in SHARED.finditer(line)]
        found += [f"line {number}: {hit!r}" for hit in hits]
    return found


def scanned_files() -> list[Path]:
    files = [p for p in (ROOT / "memvault").rglob("*") if p.suffix in {".py", ".md"}]
    files += list((ROOT / "docs").rglob("*.md"))
    files += [p for p in (ROOT / "README.md", ROOT / "CHANGELOG.md") if p.exists()]
    return sorted(files)


def test_scan_covers_code_and_docs() -> None:
    names = {p.relative_to(ROOT).as_posix() for p in scanned_files()}
    assert "README.md" in names
    assert "CHANGELOG.md" in names
    assert "docs/benchmarks.md" in names
    assert "memvault/service/memory/remember.py" in names


def test_no_issue_numbers_or_outside_documents() -> None:
    report = []
    for path in scanned_files():
        for problem in problems(path.read_text(encoding="utf-8")):
            report.append(f"{path.relative_to(ROOT)} {problem}")
    assert not report, "references a reader of the repository cannot follow:\n" + "\n".join(report)


@pytest.mark.parametrize(
    "text",
    [
        "Field names spelled out by issue 27 are fixed.",
        "see Issue #4 for the rules",
        "fixed in #27",
        "Field names spelled out by the issues are fixed.",
        "under the hour the issue asks for",
        "(#112)",
        'see DESIGN "Policies"',
        "as DESIGN.md says",
        "read ../shared/notes.md",
        "protocol: ../shared/bench/README.md",
        "data from `../shared`",
    ],
)
def test_checker_flags(text: str) -> None:
    assert problems(text)


@pytest.mark.parametrize(
    "text",
    [
        "task ids such as 'issue-42'",
        "a PEM key (PKCS#8, PKCS #12)",
        "the highly restrictive level of Unicode TS #39",
        "worked around modelcontextprotocol/python-sdk#2751",
        "data from `../shared/bench` (`--data DIR` to override)",
        "[docs/benchmarks.md](docs/benchmarks.md#consolidation)",
        "issues are reported on stderr",
        "the issue with long lines is their width",
    ],
)
def test_checker_allows(text: str) -> None:
    assert not problems(text)
