"""Precision and recall of the secret detector on the labelled set (``tests/secrets_labelled.py``).

Floors a little under the measured values (docs/secrets.md has the table and the
command); the cases marked ``exact`` must always be right.
"""

from __future__ import annotations

import pytest

from memvault.policy.secrets import find_secret
from tests.secrets_labelled import load

RECALL_FLOOR = 0.95
PRECISION_FLOOR = 0.95

CASES = load()


def flags(text: str) -> bool:
    return find_secret(text) is not None


def test_the_set_is_large_and_varied() -> None:
    secrets = [c for c in CASES if c.secret]
    lookalikes = [c for c in CASES if not c.secret]
    assert len(secrets) >= 60 and len(lookalikes) >= 60
    assert any("密" in c.text for c in secrets) and any("密" in c.text for c in lookalikes)
    assert "$[" not in "".join(c.text for c in CASES)  # every slot filled


def test_precision_and_recall_floors() -> None:
    from tests.secrets_labelled import evaluate

    s = evaluate(flags, CASES)
    wrong = [f"missed {c.note}: {c.text[:80]!r}" for c in s.missed]
    wrong += [f"false alarm {c.note}: {c.text[:80]!r}" for c in s.false_alarms]
    assert s.recall >= RECALL_FLOOR and s.precision >= PRECISION_FLOOR, (
        f"recall {s.recall:.3f} precision {s.precision:.3f}\n" + "\n".join(wrong))


@pytest.mark.parametrize("case", [c for c in CASES if c.exact], ids=lambda c: c.note)
def test_exact_cases(case) -> None:
    assert flags(case.text) is case.secret, (case.text, find_secret(case.text))
