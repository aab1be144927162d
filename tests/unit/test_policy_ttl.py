"""TTL policy: expiry resolution and the expired check."""

from __future__ import annotations

import math

import pytest

from memvault.policy.ttl import is_expired, resolve_expiry
from memvault.policy.units import SECONDS_PER_DAY

NOW = 1_750_000_000.0


def test_explicit_ttl_wins_over_default() -> None:
    assert resolve_expiry(NOW, 2, 180) == NOW + 2 * SECONDS_PER_DAY


def test_default_applies_when_ttl_is_none() -> None:
    assert resolve_expiry(NOW, None, 90.0) == NOW + 90 * SECONDS_PER_DAY


def test_no_ttl_and_no_default_never_expires() -> None:
    assert resolve_expiry(NOW, None, None) is None


def test_fractional_days() -> None:
    assert resolve_expiry(NOW, 0.5, None) == NOW + 43_200


@pytest.mark.parametrize("bad", [0, 0.0, -1, -0.001, math.nan, math.inf, -math.inf])
def test_bad_ttl_is_rejected_with_a_clear_message(bad: float) -> None:
    with pytest.raises(ValueError, match="ttl_days must be"):
        resolve_expiry(NOW, bad, 30)


@pytest.mark.parametrize("bad", [0, -5, math.nan])
def test_bad_default_is_rejected(bad: float) -> None:
    with pytest.raises(ValueError, match="default TTL"):
        resolve_expiry(NOW, None, bad)


def test_non_number_ttl_is_rejected() -> None:
    with pytest.raises(ValueError, match="number of days"):
        resolve_expiry(NOW, "7", None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="number of days"):
        resolve_expiry(NOW, True, None)  # type: ignore[arg-type]


def test_overflowing_ttl_is_rejected() -> None:
    with pytest.raises(ValueError, match="too large"):
        resolve_expiry(NOW, 1e305, None)


def test_non_finite_now_is_rejected() -> None:
    with pytest.raises(ValueError, match="now"):
        resolve_expiry(math.nan, 1, None)


def test_is_expired_boundaries() -> None:
    exp = resolve_expiry(NOW, 1, None)
    assert exp is not None
    assert not is_expired(exp, NOW)
    assert not is_expired(exp, exp - 0.001)
    assert is_expired(exp, exp)  # the expiry instant itself is expired
    assert is_expired(exp, exp + 1)


def test_none_never_expires() -> None:
    assert not is_expired(None, NOW)
    assert not is_expired(None, 1e18)
