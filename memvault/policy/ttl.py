"""Expiry (time to live) of memories.

Pure functions: the caller passes ``now`` (unix seconds, float, already shifted by the
settings' clock offset). Expiry times are unix seconds too; ``None`` means "never".
"""

from __future__ import annotations

import math

from memvault.policy.units import SECONDS_PER_DAY

__all__ = ["resolve_expiry", "is_expired"]


def _check_days(days: float, what: str) -> float:
    if isinstance(days, bool) or not isinstance(days, (int, float)):
        raise ValueError(f"{what} must be a number of days, got {type(days).__name__}")
    if math.isnan(days) or math.isinf(days):
        raise ValueError(f"{what} must be a finite number of days, got {days}")
    if days <= 0:
        raise ValueError(
            f"{what} must be greater than 0 days, got {days}; "
            "omit it to use the default, or use forget to remove a memory now"
        )
    return float(days)


def resolve_expiry(now: float, ttl_days: float | None, default_days: float | None) -> float | None:
    """Absolute expiry time (unix seconds) for a memory written at ``now``.

    ``ttl_days`` is the caller's choice; when it is ``None`` the kind's default
    (``Settings.policies.default_ttl_days(kind)``) applies, and when that is ``None`` too the
    memory never expires (returns ``None``). Fractional days are allowed (0.5 = 12 h).

    Raises ValueError with a message naming the bad value when the chosen number of days
    is <= 0, NaN or infinite, when ``now`` is not finite, or when the result overflows.
    """
    if not math.isfinite(now):
        raise ValueError(f"now must be a finite unix time in seconds, got {now}")
    if ttl_days is not None:
        days = _check_days(ttl_days, "ttl_days")
    elif default_days is not None:
        days = _check_days(default_days, "the default TTL")
    else:
        return None
    expires_at = now + days * SECONDS_PER_DAY
    if not math.isfinite(expires_at):
        raise ValueError(f"ttl_days={days} is too large to represent as an expiry time")
    return expires_at


def is_expired(expires_at: float | None, now: float) -> bool:
    """True once ``now >= expires_at`` (the expiry instant itself counts as expired).

    ``expires_at=None`` never expires. Both are unix seconds.
    """
    return expires_at is not None and now >= expires_at
