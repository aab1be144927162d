"""The results of the document tools: ``IndexDocsResult`` (``index_docs``) and
``SearchDocsResult`` with its ``DocHit`` items (``search_docs``).

Their field names are the public contract of the tools' replies.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from memvault.service.memory.models import Scope


class SkippedPath(BaseModel):
    """A path ``index_docs`` did not index, and why."""

    path: str = Field(description="The path (relative to the workspace root when under it).")
    kind: str = Field(description="not_a_regular_file | too_large | symlink_loop | broken_symlink | "
                      "symlink_outside | unreadable | binary | ignored | hidden | virtualenv | nothing_to_index")
    reason: str = Field(description="Why, in a sentence, with what would be read instead.")


class IndexDocsResult(BaseModel):
    """Outcome of ``index_docs``: what happened to each file found, and how long it took."""

    scope: Scope
    collection: str
    added: int = Field(description="Files indexed for the first time.")
    changed: int = Field(description="Files whose content changed: re-chunked, old chunks removed.")
    unchanged: int = Field(description="Files already indexed with the same content: nothing embedded.")
    removed: int = Field(description="Files indexed before under these paths that are gone (or now ignored).")
    chunks_embedded: int = Field(description="Chunks embedded in this run.")
    chunks_total: int = Field(description="Chunks of this collection and project after the run.")
    failed: list[str] = Field(default_factory=list, description="Files that could not be read, with the reason.")
    withheld: list[str] = Field(
        default_factory=list,
        description="Parts of files left out of the index because they hold a secret (private key, token, "
                    "password): 'path: lines 12-61: a private key block'. The rest of each file is indexed; "
                    "remove the secret from the file (keep it in a vault) and index again.")
    skipped: list[SkippedPath] = Field(
        default_factory=list,
        description="Paths not indexed, with the reason: every path named in the call that was not indexed, "
                    "and any file under a named folder left out for a reason other than being binary, ignored or "
                    "hidden (those are counted in a named folder's entry when nothing under it could be indexed). "
                    "At most 100; skipped_total counts them all.")
    skipped_total: int = Field(0, description="How many paths skipped lists before it was cut to 100.")
    seconds: float


class DocHit(BaseModel):
    """One search_docs result: cite ``path`` lines ``start_line``-``end_line`` (or ``page``)."""

    path: str = Field(description="File path (relative to the workspace root when indexed from one).")
    heading: str | None = Field(None, description="Heading path, e.g. 'Install > From source'.")
    symbol: str | None = Field(None, description="Code: the definition the chunk belongs to.")
    start_line: int
    end_line: int
    page: int | None = Field(None, description="PDF page (1-based).")
    text: str
    text_truncated: bool = False
    shown_end_line: int = Field(description="Last line shown whole in text; open the file from the next one for the rest.")
    score: float = Field(description="Fused rank score of the dense and keyword channels, 0..1 (orders results).")
    collection: str
    project: str
    relevance: float = Field(0.0, description="Calibrated relevance, 0..1: the estimated probability that the chunk is "
                             "what the query asks about (0.5 = as likely as not; fitted on memories, read it as a "
                             "guide for long chunks).")


class SearchDocsResult(BaseModel):
    """Outcome of ``search_docs``: chunks best first, bounded in count and size."""

    scope: Scope
    results: list[DocHit]
    truncated: bool = Field(description="True when a text was cut or results were dropped by the size budget.")
    below_min_relevance: int = Field(0, description="How many of the k best-ranked chunks were left out for a "
                                     "relevance below min_relevance.")
    nothing_indexed: bool = Field(False, description="True when no document at all is indexed in the projects and "
                                  "collection searched: an empty results list then means nothing was indexed, not "
                                  "that nothing matched (hint says what to run).")
    hint: str | None = Field(None, description="What to do when nothing_indexed: the tool or command to run.")
