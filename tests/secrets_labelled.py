"""The labelled sets of secrets and look-alikes: ``tests/data/secrets_labelled.jsonl`` (the
regression set) and ``tests/data/secrets_structure.jsonl`` (the structure set: 162
secrets of 76 vendors and prose passwords in 34 languages, 159 look-alikes: test cards,
placeholders, templates, commit and file hashes, UUIDs, documented example keys, base64
images, version strings, public ids, prose about passwords).

One JSON object a line: ``text``, ``secret`` (true: a credential that must be refused;
false: a look-alike that must pass), ``note`` (what it is), and ``exact: true`` for the
cases that must always be right; the structure set adds ``family`` (the vendor, ``lang:xx``
for a prose password in language xx, or the kind of look-alike). The structure set is
split in two halves by line: odd lines (1st, 3rd, ...) are the ``tune`` half, which the
detector was tuned on; even lines are the ``guard`` half, kept back from tuning, on which
tests/unit/test_secrets_structure.py holds its floors. Random parts of a text are written as ``$[class:n]``
and filled here from a generator seeded with the text itself, so the file holds no
real-shaped credential (secret scanners and push protection leave it alone) and every
run sees the same strings. Classes: ``b62`` (letters and digits), ``b64``, ``b64url``,
``hex``, ``upper`` (A-Z, 0-9), ``lower`` (a-z, 0-9), ``alpha``, ``digits``, ``a2z7`` (AWS key ids), ``age``
(bech32, upper case), ``pw`` (a password: upper and lower case, a digit and a symbol).

Run ``python -m tests.secrets_labelled`` for the precision / recall table and the
misclassified texts (``python -m tests.secrets_labelled structure [tune|guard]`` for the
structure set or one half); ``tests/unit/test_secrets_labelled.py`` and
``tests/unit/test_secrets_structure.py`` hold the floors.
"""

from __future__ import annotations

import json
import random
import re
import string
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).parent / "data" / "secrets_labelled.jsonl"
STRUCTURE = Path(__file__).parent / "data" / "secrets_structure.jsonl"

_CLASSES = {
    "b62": string.ascii_letters + string.digits,
    "b64": string.ascii_letters + string.digits + "+/",
    "b64url": string.ascii_letters + string.digits + "_-",
    "hex": "0123456789abcdef",
    "upper": string.ascii_uppercase + string.digits,
    "lower": string.ascii_lowercase + string.digits,
    "alpha": string.ascii_letters,
    "digits": string.digits,
    "a2z7": string.ascii_uppercase + "234567",
    "age": "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L",
}
_PW_SYMBOLS = "!*+-_.~"
_SLOT = re.compile(r"\$\[(\w+):(\d+)\]")


def _password(rng: random.Random, n: int) -> str:
    chars = [rng.choice(string.ascii_letters + string.digits + _PW_SYMBOLS) for _ in range(n - 3)]
    for c in (rng.choice(string.ascii_uppercase), rng.choice(string.digits), rng.choice(_PW_SYMBOLS)):
        chars.insert(rng.randrange(1, len(chars) + 1), c)
    return rng.choice(string.ascii_lowercase) + "".join(chars)[: n - 1]


def expand(template: str) -> str:
    """``template`` with each ``$[class:n]`` filled (same template, same result)."""
    rng = random.Random(template)

    def fill(m: re.Match[str]) -> str:
        cls, n = m.group(1), int(m.group(2))
        if cls == "pw":
            return _password(rng, n)
        return "".join(rng.choice(_CLASSES[cls]) for _ in range(n))

    return _SLOT.sub(fill, template)


@dataclass(frozen=True)
class Case:
    """One labelled text (expanded), whether it is a secret, what it is, and whether it is an exact case."""

    text: str
    secret: bool
    note: str
    exact: bool = False
    family: str = ""
    half: str = ""


def load(path: Path = DATA) -> list[Case]:
    """Every case of the labelled set at ``path``, expanded; ``half`` is ``tune`` for the
    1st, 3rd, ... case, ``guard`` for the 2nd, 4th, ..."""
    cases = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            half = "tune" if len(cases) % 2 == 0 else "guard"
            cases.append(Case(expand(row["text"]), bool(row["secret"]), row["note"], bool(row.get("exact")),
                              row.get("family", ""), half))
    return cases


@dataclass(frozen=True)
class Score:
    """Counts and rates of a detector on the labelled set; ``missed`` and ``false_alarms`` are the cases it got wrong."""

    tp: int
    fp: int
    fn: int
    tn: int
    missed: list[Case]
    false_alarms: list[Case]

    @property
    def precision(self) -> float:
        return self.tp / (self.tp + self.fp) if self.tp + self.fp else 1.0

    @property
    def recall(self) -> float:
        return self.tp / (self.tp + self.fn) if self.tp + self.fn else 1.0


def evaluate(flags: Callable[[str], bool], cases: list[Case] | None = None) -> Score:
    """Score ``flags(text) -> is a secret`` on ``cases`` (the whole set by default)."""
    cases = load() if cases is None else cases
    missed = [c for c in cases if c.secret and not flags(c.text)]
    false_alarms = [c for c in cases if not c.secret and flags(c.text)]
    positives = sum(c.secret for c in cases)
    negatives = len(cases) - positives
    return Score(positives - len(missed), len(false_alarms), len(missed), negatives - len(false_alarms),
                 missed, false_alarms)


def main() -> None:
    from memvault.policy.secrets import find_secret

    structure = sys.argv[1:2] == ["structure"]
    cases = load(STRUCTURE if structure else DATA)
    if structure and sys.argv[2:3]:
        cases = [c for c in cases if c.half == sys.argv[2]]
    s = evaluate(lambda t: find_secret(t) is not None, cases)
    out = sys.stdout
    name = f"structure set{' (' + sys.argv[2] + ' half)' if structure and sys.argv[2:3] else ''}" if structure \
        else "labelled set"
    out.write(f"{name}: {s.tp + s.fn} secrets, {s.fp + s.tn} look-alikes\n\n")
    out.write("| precision | recall | TP | FP | FN | TN |\n| --- | --- | --- | --- | --- | --- |\n")
    out.write(f"| {s.precision:.3f} | {s.recall:.3f} | {s.tp} | {s.fp} | {s.fn} | {s.tn} |\n")
    for title, rows in (("missed", s.missed), ("false alarms", s.false_alarms)):
        if rows:
            out.write(f"\n{title}:\n")
            for c in rows:
                out.write(f"  - {c.half + ' ' if c.half and structure else ''}{c.note}: {c.text[:100]!r}\n")


if __name__ == "__main__":
    main()
