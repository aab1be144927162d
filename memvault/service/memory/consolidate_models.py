"""Pydantic result models of ``consolidate``: the public contract clients read.

Times are ISO 8601 UTC strings. New fields may be added; none may be renamed.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from memvault.service.memory.models import Scope


class ProposalMember(BaseModel):
    """One memory of a proposed merge."""

    id: str
    content_preview: str
    kind: str
    created_at: str


class Proposal(BaseModel):
    """Memories of one scope that restate each other, and the one memory that would stand for them."""

    member_ids: list[str] = Field(description="The memories merged (oldest first).")
    kept_id: str = Field(description="Member whose text is kept: the most specific one.")
    content: str = Field(description="Text of the merged memory (the kept member's; cut when long).")
    content_truncated: bool = False
    kind: str
    key: str | None = None
    importance: float = Field(description="Highest importance of the members.")
    tags: list[str] = Field(default_factory=list, description="Every member's tags.")
    sources: list[str] = Field(default_factory=list, description="Every member's source.")
    created_at: str = Field(description="Earliest member's creation time.")
    expires_at: str | None = None
    members: list[ProposalMember] = Field(default_factory=list)
    merged_id: str | None = Field(None, description="Id of the merged memory, once applied.")


class ConsolidateResult(BaseModel):
    """Outcome of ``consolidate``: proposals (dry run) or the merges applied, bounded in count and size."""

    applied: bool = Field(description="True when the proposals listed were written (dry_run=false).")
    proposals: list[Proposal]
    clusters_found: int = Field(description="Merges found in all (the reply lists at most limit of them).")
    scanned: int = Field(description="Active memories compared (the newest, at most 5000 per run).")
    truncated: bool = Field(description="True when proposals were left out by limit or the size budget.")
    hint: str = Field(description="What to do next, in one sentence.")
    scope: Scope
