"""Pydantic result models of the memory tools: the public contract clients read.

Field names are a public contract: they stay fixed; new fields may be added. Times are
ISO 8601 UTC strings; scores are floats in [0, 1].
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from memvault.vocabulary import Visibility

ScopeSource = Literal["argument", "roots", "cwd", "settings", "global"]
"""How a call's project was chosen: the tool's ``project`` argument, the client's MCP roots,
the folder the server was started in, the ``project`` setting, or none (the global scope)."""


class Scope(BaseModel):
    """Where a call read or wrote: the tenant and the project(s)."""

    user_id: str
    project: str = Field(description="Project written to or read first; '' is the user's global scope.")
    project_name: str = Field(
        "", description="Readable name of the project (its repository or folder name); '' for the global scope."
    )
    projects_read: list[str] = Field(default_factory=list, description="Every project a read looked at.")
    source: ScopeSource = Field(
        description="How the project was chosen: tool argument, client's MCP roots, the folder the server was "
        "started in (cwd), settings, or none (global)."
    )
    agent: str | None = Field(
        None, description="The agent the call acts for (MEMVAULT_AGENT_ID, else the client's name): it reads shared "
        "memories and its own private ones. null: the user (command line), who reads every memory."
    )


class RememberResult(BaseModel):
    """Outcome of ``remember``: what happened to the write and why."""

    id: str | None = Field(description="Id of the stored or reinforced memory; null when declined.")
    status: Literal["stored", "reinforced", "superseded", "declined"]
    reason: str = Field(description="Why this status, in one sentence.")
    importance: float | None = None
    expires_at: str | None = None
    superseded_ids: list[str] = Field(default_factory=list)
    evicted_ids: list[str] = Field(
        default_factory=list, description="Memories removed by the per-scope capacity to make room."
    )
    scope: Scope


class MemoryOut(BaseModel):
    """One recalled memory. ``content`` may be cut (see ``content_truncated``)."""

    id: str
    content: str
    content_truncated: bool = False
    kind: str
    key: str | None = None
    tags: list[str] = Field(default_factory=list)
    project: str = ""
    score: float = Field(description="Final rank score: relevance, importance and recency combined.")
    relevance: float = Field(description="Calibrated relevance to the query, 0..1: the estimated probability that this "
                             "memory is what the query asks about (0.5 = as likely as not), comparable across "
                             "queries and languages.")
    similarity: float | None = Field(None, description="Dense cosine similarity to the query, if a dense hit.")
    importance: float
    created_at: str
    last_accessed_at: str
    source: str | None = None
    expires_at: str | None = None
    visibility: Visibility = Field(
        "shared", description="shared: every agent of the user reads it; private: only the agent that wrote it.")
    neighbour_of: str | None = Field(
        None, description="Set when this memory ranks here as context: the id of the better hit it was written next "
        "to in the same conversation (its own relevance is the relevance field).")


class RecallResult(BaseModel):
    """Outcome of ``recall``: ranked memories, bounded in count and size."""

    scope: Scope
    memories: list[MemoryOut]
    truncated: bool = Field(description="True when a content was cut or results were dropped by the size budget.")
    query_note: str | None = Field(None, description="How the query was interpreted, when it was changed.")
    min_relevance: float = Field(0.0, description="The relevance bar applied: memories below it were left out.")
    below_min_relevance: int = Field(0, description="How many of the k best-ranked memories were left out for a "
                                     "relevance below min_relevance.")
    relevance_note: str | None = Field(None, description="Set when nothing cleared min_relevance, or when no returned "
                                       "memory looks relevant: says so and gives the best relevance seen.")
    nothing_relevant: bool = Field(False, description="True when no memory reached the relevance of a likely answer "
                                   "(0.3): what is returned, if anything, probably does not answer the query.")
    index_note: str | None = Field(None, description="Set while the vector index is being repaired in the background: "
                                   "results may leave out memories not yet re-indexed.")


class ForgottenItem(BaseModel):
    """A memory that forget removed (or would remove, on a dry run)."""

    id: str
    content_preview: str
    kind: str | None = None
    project: str | None = None
    similarity: float | None = None


class ForgetResult(BaseModel):
    """Outcome of ``forget``."""

    forgotten: list[ForgottenItem] = Field(description="What was forgotten (at most 50 listed; see count).")
    count: int = Field(description="How many memories were forgotten (or would be, on a dry run).")
    listed_truncated: bool = False
    dry_run: bool
    hard: bool = False
    scope: Scope
