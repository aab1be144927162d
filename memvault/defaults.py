"""The defaults of the settings that both ``memvault.config`` and the hooks read, standard library only.

The hooks (``memvault context``, ``memvault hook ...``) run on every session start and must
not import pydantic (about 0.3 s, most of a hook's budget), so the values they share with
``memvault.config`` are written here once and both read them: the data dir, the user, the
model and where it is cached, the SQLite file's name, and the ``MEMVAULT_`` prefix.

``REMOVED`` names the variables that were settings once and whose values are now fixed
in the code (each a module constant beside the code that uses it); setting one is not an
error, it is ignored with one warning line (``memvault.config.warn_former_settings``).
"""

from __future__ import annotations

from pathlib import Path

ENV_PREFIX = "MEMVAULT_"
"""Every setting is read from ``MEMVAULT_<NAME>`` (names are case-insensitive)."""

USER_ID = "local"
"""The tenant a server serves when no ``--user`` / ``MEMVAULT_USER_ID`` is given."""

MODEL = "intfloat/multilingual-e5-small"
"""The embedding model when no ``MEMVAULT_EMBEDDING_MODEL`` is given."""

DB_FILE = "memvault.db"
"""The SQLite file of record inside the data dir."""


def data_dir() -> Path:
    """The platform's per-user data folder for memvault (e.g. ``~/.local/share/memvault``)."""
    import platformdirs  # here, not at the top: a hook that is given --data-dir never imports it

    return Path(platformdirs.user_data_dir("memvault", appauthor=False))


def model_cache_dir() -> Path:
    """The platform's per-user cache folder for memvault's models (e.g. ``~/.cache/memvault/models``):
    one converted model per user and machine, shared by every data dir."""
    import platformdirs

    return Path(platformdirs.user_cache_dir("memvault", appauthor=False)) / "models"


def memvault_environ(environ: dict[str, str]) -> dict[str, str]:
    """The ``MEMVAULT_*`` variables of ``environ``, names upper-cased (as pydantic-settings matches them)."""
    return {k.upper(): v for k, v in environ.items() if k.upper().startswith(ENV_PREFIX)}


REMOVED: dict[str, str] = {
    "clock_offset_s": "the system clock (tests give the server a memvault.clock.Clock)",
    "owner_start_timeout_s": "memvault.process.forwarder.OWNER_START_TIMEOUT_S",
    "flush_interval_s": "memvault.service.upkeep.housekeeping.FLUSH_INTERVAL_S",
    "hnsw_after_points": "memvault.service.upkeep.index_build.HNSW_AFTER_POINTS",
    "embed_batch_size": "memvault.embedding.embedder.EMBED_BATCH_SIZE",
    "dedup_threshold": "memvault.policy.dedup.DEDUP_THRESHOLD",
    "consolidate_min_cosine": "memvault.policy.consolidation.MIN_COSINE",
    "task_state_max_bytes": "memvault.service.profile.tasks.TASK_STATE_MAX_BYTES",
    "task_history_max": "memvault.service.profile.tasks.TASK_HISTORY_MAX",
    "weight_relevance": "memvault.policy.ranking.WEIGHT_RELEVANCE",
    "weight_importance": "memvault.policy.ranking.WEIGHT_IMPORTANCE",
    "weight_recency": "memvault.policy.ranking.WEIGHT_RECENCY",
    "half_life_days": "memvault.policy.ranking.HALF_LIFE_DAYS",
    "candidates": "memvault.service.search.CANDIDATES",
    "fusion_dense_weight": "memvault.service.search.DENSE_WEIGHT",
    "neighbour_lift": "memvault.policy.neighbours.NEIGHBOUR_LIFT",
    "language_neutral": "memvault.service.centroids.LANGUAGE_NEUTRAL",
    "forget_query_min_relevance": "memvault.service.memory.forget.QUERY_MIN_COSINE",
    "max_k": "memvault.service.validation.MAX_K",
    "content_budget_chars": "memvault.policy.budget.CONTENT_BUDGET_CHARS",
    "reply_budget_chars": "memvault.policy.budget.REPLY_BUDGET_CHARS",
    "context_budget_chars": "memvault.service.profile.profile.CONTEXT_BUDGET_CHARS",
    "task_list_max": "memvault.service.profile.tasks.TASK_LIST_MAX",
    "profile_max_preferences": "memvault.service.profile.profile.MAX_PREFERENCES",
    "profile_max_facts": "memvault.service.profile.profile.MAX_FACTS",
    "profile_value_chars": "memvault.service.profile.profile.VALUE_CHARS",
    "docs_result_chars": "memvault.service.documents.search.RESULT_CHARS",
}
"""Former setting (field name) -> the module constant that now holds its value (``module.NAME``)."""
