"""Argument types for tool signatures, as the SDK validates them before a tool runs.

``KindArg``: a memory kind, matched without regard to case or surrounding spaces
("Preference", " FACT ") so an assistant's capitalisation is not an error; the input
schema still lists the kinds in lower case (``memvault.vocabulary.KINDS``).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator

from memvault.vocabulary import Kind


def folded(value: Any) -> Any:
    """``value`` stripped and lower-cased when it is a string; anything else unchanged (pydantic rejects it)."""
    return value.strip().lower() if isinstance(value, str) else value


KindArg = Annotated[Kind, BeforeValidator(folded)]
