"""Pydantic result models of ``restore`` and ``history``: the public contract clients read.

Times are ISO 8601 UTC strings. New fields may be added; none may be renamed.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from memvault.service.memory.models import Scope
from memvault.vocabulary import Visibility


class RestoreResult(BaseModel):
    """Outcome of ``restore``: the memory is active and recalled again; or, for a merged
    memory (``consolidate``), the merge is undone: its members are active again."""

    id: str
    status: Literal["restored", "merge_undone"] = "restored"
    previous_status: Literal["deleted", "superseded", "active"] = Field(
        description="deleted (forgotten or evicted) or superseded, before the restore; active for a merge undone.")
    content_preview: str
    kind: str
    key: str | None = None
    expires_at: str | None = None
    superseded_ids: list[str] = Field(
        default_factory=list, description="Active memories it displaced (they held its key); now superseded by it.")
    restored_ids: list[str] = Field(default_factory=list, description="Merge undone: the members active again.")
    retired_ids: list[str] = Field(default_factory=list, description="Merge undone: the merged memory, now forgotten.")
    reason: str = Field(description="What was done, in one sentence.")
    scope: Scope = Field(description="The memory's own project.")


class HistoryItem(BaseModel):
    """One recorded change of one memory."""

    memory_id: str
    action: str = Field(description="added, reinforced, superseded, forgotten, evicted, expired, purged or restored.")
    at: str
    actor: str | None = Field(None, description="Client or memvault process that made the change.")
    reason: str | None = None
    project: str = ""
    status: str | None = Field(None, description="The memory's status after the change; null once erased.")
    key: str | None = None
    superseded_by: str | None = None
    content: str | None = Field(None, description="Text at this version (cut); null once erased, or when "
                                "content_repeated.")
    content_truncated: bool = False
    content_repeated: bool = Field(False, description="Same text as this memory's newer entry above; not repeated.")
    consolidated_from: list[str] | None = Field(None, description="Ids of the memories this change merged.")
    visibility: Visibility | None = Field(None, description="shared or private (to the agent that wrote it); "
                                          "null once erased.")


class HistoryResult(BaseModel):
    """Outcome of ``history``: changes newest first, bounded in count and size."""

    entries: list[HistoryItem]
    total: int = Field(description="Entries recorded in all (the reply lists the newest).")
    truncated: bool = Field(description="True when entries were left out or a content was cut.")
    scope: Scope
