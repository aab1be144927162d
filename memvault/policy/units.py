"""Units shared by the policies and the services that call them.

Times in memvault are unix seconds (float); settings and tool arguments speak in days.
"""

from __future__ import annotations

__all__ = ["SECONDS_PER_DAY"]

SECONDS_PER_DAY = 86_400.0
"""Seconds in one day: days * SECONDS_PER_DAY = seconds (no leap seconds in unix time)."""
