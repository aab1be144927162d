"""memvault's settings, grouped by concern (pydantic-settings, env prefix ``MEMVAULT_``).

Only what a user or an operator sets lives here; the tuning constants (ranking weights,
candidate counts, reply budgets, calibrated thresholds) are module constants beside the
code that uses them, each saying where its value comes from. The defaults the hooks share
are in ``memvault.defaults`` (no pydantic). CLI flags override the environment (see
``memvault.cli``); the variable of a former setting is ignored with one warning line on
stderr (``warn_former_settings``).

``Settings`` holds one group per concern; code reads ``settings.<group>.<field>``:

========== ==================== ===================================================
group      class                what it decides
========== ==================== ===================================================
server     ServerSettings       who is served, the default project, the owner process
storage    StorageSettings      where data lives, which vector engine
embedding  EmbeddingSettings    which model, where it is cached
policies   PolicySettings       what is written and how long it lives (memories, tasks)
ranking    RankingSettings      what recall leaves out by default
documents  DocumentSettings     what index_docs reads, in what batches
========== ==================== ===================================================

Environment names are flat and unchanged: field ``<group>.<name>`` is set by
``MEMVAULT_<NAME>`` (``ranking.min_relevance`` by ``MEMVAULT_MIN_RELEVANCE``), because every field name
is unique across the groups. Keyword arguments are flat too: ``Settings(min_relevance=0.5,
data_dir=p)`` puts each value in its group, and the other fields of that group still
come from the environment.
"""

from __future__ import annotations

import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, ValidationError, field_validator, model_validator
from pydantic_core import PydanticUndefined
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from memvault import defaults
from memvault.vocabulary import Kind

DEFAULT_MODEL = defaults.MODEL
default_data_dir = defaults.data_dir
default_model_cache_dir = defaults.model_cache_dir


class _Group(BaseSettings):
    """A group of settings read from ``MEMVAULT_<FIELD>`` environment variables."""

    model_config = SettingsConfigDict(env_prefix=defaults.ENV_PREFIX, extra="ignore")


class ServerSettings(_Group):
    """Who this server serves and in which project by default."""

    user_id: str = Field(default=defaults.USER_ID, min_length=1, max_length=128, description="Tenant id of this server's user.")
    project: str | None = Field(
        default=None, description="Project when the client offers no MCP roots and the server was not started inside a "
        "git work tree; unset = the start folder itself (global in /, home and system folders)."
    )
    agent_id: str | None = Field(
        default=None, min_length=1, max_length=128, description="Agent id of this server's client, owner of its "
        "private memories; unset = the client's MCP name (set it to tell apart agents that share a client)."
    )
    owner: bool = Field(
        default=True, description="memvault serve relays its client to the data dir's owner process (started on "
        "demand); false serves the client in this process alone (one process per store)."
    )
    owner_idle_s: float = Field(
        default=300.0, gt=0, description="Seconds without a client after which the owner exits."
    )
    http_tokens_file: Path | None = Field(
        default=None, description="serve --http: JSON object {token or 'sha256:<hex>': user id}, mode 0600; "
        "required when bound off loopback."
    )


class StorageSettings(_Group):
    """Where the data lives and which vector engine indexes it."""

    data_dir: Path = Field(default_factory=default_data_dir, description="Data folder (0700).")
    qdrant_url: str | None = Field(default=None, description="Use a Qdrant server instead of embedded Qdrant Edge.")
    qdrant_api_key: str | None = Field(default=None, description="API key of that Qdrant server.")

    @field_validator("data_dir", mode="after")
    @classmethod
    def _expand(cls, v: Path) -> Path:
        return v.expanduser()


class EmbeddingSettings(_Group):
    """Which embedding model, from where."""

    embedding_model: str = Field(default=DEFAULT_MODEL, description="fastembed model name.")
    model_path: Path | None = Field(default=None, description="Local folder with an ONNX model for embedding_model.")
    model_cache_dir: Path | None = Field(
        default=None, description="Where the converted default model is kept, shared by every data dir; default "
        "the per-user cache folder (~/.cache/memvault/models on Linux)."
    )

    @field_validator("model_path", "model_cache_dir", mode="after")
    @classmethod
    def _expand(cls, v: Path | None) -> Path | None:
        return v.expanduser() if v is not None else None


class PolicySettings(_Group):
    """What a write may hold, which writes are kept, and how long memories and tasks live."""

    max_content_chars: int = Field(default=20_000, ge=100, description="Longest memory accepted, characters.")
    importance_threshold: float = Field(default=0.3, ge=0, le=1, description="Writes scoring below are declined.")
    capacity_per_scope: int = Field(default=50_000, ge=10, description="Active memories per (user, project).")
    consolidate_every_hours: float | None = Field(
        default=None, gt=0,
        description="Apply consolidate to every scope this often, hours (unset = never: run it by hand).",
    )
    ttl_days_episode: float | None = Field(default=180.0, gt=0, description="Default TTL of an episode, days.")
    ttl_days_note: float | None = Field(default=90.0, gt=0, description="Default TTL of a note, days.")
    ttl_days_fact: float | None = Field(default=None, gt=0, description="Default TTL of a fact, days (unset = none).")
    ttl_days_decision: float | None = Field(default=None, gt=0, description="Default TTL of a decision, days.")
    ttl_days_preference: float | None = Field(default=None, gt=0, description="Default TTL of a preference, days.")
    ttl_days_procedure: float | None = Field(default=None, gt=0, description="Default TTL of a procedure, days.")
    task_idle_ttl_days: float = Field(
        default=7.0, gt=0,
        description="An open task not updated for this many days expires (per-call ttl_days overrides).",
    )
    task_retention_days: float = Field(
        default=30.0, gt=0, description="Days a done or abandoned task stays readable before it is purged."
    )

    def default_ttl_days(self, kind: Kind) -> float | None:
        """Default TTL for a memory kind in days (None = never expires)."""
        return getattr(self, f"ttl_days_{kind}")


class RankingSettings(_Group):
    """What recall leaves out when the call does not say."""

    min_relevance: float = Field(
        default=0.0, ge=0, le=1, description="Default of recall's min_relevance: results with a lower calibrated "
        "relevance are left out (0: none are; the reply still says when nothing looks relevant).",
    )


class DocumentSettings(_Group):
    """What index_docs may read, and how many chunks it embeds and commits at once."""

    docs_allowed_dirs: list[Path] = Field(
        default_factory=list,
        description="Folders index_docs may read besides the client's MCP roots "
        '(env: JSON list, e.g. MEMVAULT_DOCS_ALLOWED_DIRS=\'["~/notes"]\').',
    )
    docs_max_file_bytes: int = Field(default=10_000_000, ge=1, description="Larger files are skipped by index_docs.")
    docs_batch_chunks: int = Field(
        default=512, ge=1, description="Chunks gathered across files per embedding batch, committed together: "
        "fewer hold less memory and lose less work to a stop, more index faster (a batch's chunks are "
        "embedded in length order, so a larger one pads fewer tokens).")

    @field_validator("docs_allowed_dirs", mode="after")
    @classmethod
    def _expand_all(cls, v: list[Path]) -> list[Path]:
        return [p.expanduser() for p in v]


GROUPS: dict[str, type[_Group]] = {
    "server": ServerSettings,
    "storage": StorageSettings,
    "embedding": EmbeddingSettings,
    "policies": PolicySettings,
    "ranking": RankingSettings,
    "documents": DocumentSettings,
}
"""Group attribute of Settings -> its class, in the order of the README table."""


def _group_of() -> dict[str, str]:
    out: dict[str, str] = {}
    for group, cls in GROUPS.items():
        for name in cls.model_fields:
            if name in out:
                raise TypeError(f"setting {name!r} is in both {out[name]!r} and {group!r}; "
                                f"MEMVAULT_{name.upper()} must name one field")
            out[name] = group
    return out


GROUP_OF: dict[str, str] = _group_of()
"""Field name (= ``MEMVAULT_<NAME>`` lower-cased, prefix dropped) -> its group."""


class Settings(BaseModel):
    """memvault settings: one group per concern (module docstring), each read from
    ``MEMVAULT_<FIELD>``; flat keyword arguments override the environment.

    Raises pydantic.ValidationError for a value out of range, TypeError for a keyword
    that names no setting.
    """

    server: ServerSettings = Field(default_factory=ServerSettings)
    storage: StorageSettings = Field(default_factory=StorageSettings)
    embedding: EmbeddingSettings = Field(default_factory=EmbeddingSettings)
    policies: PolicySettings = Field(default_factory=PolicySettings)
    ranking: RankingSettings = Field(default_factory=RankingSettings)
    documents: DocumentSettings = Field(default_factory=DocumentSettings)

    if TYPE_CHECKING:
        # What the constructor really takes: groups by name or flat setting names
        # (``Settings(min_relevance=0.5, data_dir=p)``), sorted into groups by ``_route_flat_names``.
        # Type checkers would otherwise see only the group fields.
        def __init__(self, **settings: Any) -> None: ...

    @model_validator(mode="before")
    @classmethod
    def _route_flat_names(cls, data: Any) -> Any:
        """``{"min_relevance": 0.5}`` -> ``{"ranking": RankingSettings(min_relevance=0.5)}`` (the rest from the env)."""
        if not isinstance(data, dict):
            return data
        routed: dict[str, dict[str, Any]] = {}
        out: dict[str, Any] = {}
        for name, value in data.items():
            if name in GROUPS:
                if isinstance(value, dict):
                    routed.setdefault(name, {}).update(value)
                else:
                    out[name] = value
            elif name in GROUP_OF:
                routed.setdefault(GROUP_OF[name], {})[name] = value
            else:
                raise TypeError(f"{name!r} is not a memvault setting; known: {', '.join(sorted(GROUP_OF))}")
        for group, values in routed.items():
            if group in out:
                raise TypeError(f"settings of {group!r} given both as a {GROUPS[group].__name__} and by name")
            out[group] = GROUPS[group](**values)
        return out

    @property
    def db_path(self) -> Path:
        """SQLite file of record (truth)."""
        return self.storage.data_dir / defaults.DB_FILE

    @property
    def vectors_dir(self) -> Path:
        """Embedded Qdrant Edge shards live under here, one folder per collection."""
        return self.storage.data_dir / "vectors"

    @property
    def models_dir(self) -> Path:
        """Converted / cached embedding models: ``model_cache_dir``, else the per-user cache
        (``default_model_cache_dir``), shared by every data dir."""
        return self.embedding.model_cache_dir or default_model_cache_dir()

    @property
    def legacy_models_dir(self) -> Path:
        """Where earlier versions kept a converted model in each data dir (``<data dir>/models``),
        moved into ``models_dir`` once (``memvault.embedding.model_cache``)."""
        return self.storage.data_dir / "models"


class ConfigError(Exception):
    """A setting has a value memvault cannot use. ``str(exc)`` is one sentence for a person:
    each bad ``MEMVAULT_*`` variable (or command-line flag), its value, what is allowed."""


_SECRET = re.compile(r"key|token|secret|password", re.IGNORECASE)
_FIELD_IN_SETTINGS_ERROR = re.compile(r'field "([^"]+)"')


def _default_of(name: str) -> str | None:
    group = GROUP_OF.get(name)
    if group is None:
        return None
    info = GROUPS[group].model_fields[name]
    if info.default is PydanticUndefined or info.default is None:
        return None
    return repr(info.default) if isinstance(info.default, str) else str(info.default)


def _shown(name: str, value: Any) -> str:
    if _SECRET.search(name):
        return "(hidden)"
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 80 else text[:79] + "…"


def _problems(exc: ValidationError | SettingsError, flags: dict[str, str]) -> list[str]:
    """One phrase per bad setting: ``MEMVAULT_CAPACITY_PER_SCOPE='abc' is not allowed: <what is>; unset it for the default 50000``."""
    out: list[str] = []
    if isinstance(exc, SettingsError):
        m = _FIELD_IN_SETTINGS_ERROR.search(str(exc))
        name = m.group(1) if m else ""
        var = f"MEMVAULT_{name.upper()}" if name else "a MEMVAULT_* variable"
        value = os.environ.get(var, "")
        cause = f" ({exc.__cause__})" if exc.__cause__ else ""
        out.append(f"{var}={_shown(name, value)} cannot be read{cause}: it must be JSON, e.g. "
                   f"{var}='[\"~/notes\"]'")
        return out
    for err in exc.errors():
        loc = [str(p) for p in err.get("loc", ())]
        name = loc[0] if loc else ""
        var = flags.get(name) or (f"MEMVAULT_{name.upper()}" if name else "a setting")
        item = f" (item {'.'.join(loc[1:])})" if len(loc) > 1 else ""
        default = _default_of(name)
        tail = f"; unset it for the default {default}" if default is not None else ""
        out.append(f"{var}={_shown(name, err.get('input'))}{item} is not allowed: {err.get('msg', 'invalid')}{tail}")
    return out


_warned: set[str] = set()


def former_settings(environ: dict[str, str]) -> list[str]:
    """One sentence per ``MEMVAULT_*`` variable of ``environ`` that was a setting once and is
    not now (``defaults.REMOVED``), sorted: it is ignored, and where its value is fixed now.
    Other names (a test's or a bench's own variables) are not settings and not named."""
    out = []
    for var in sorted(defaults.memvault_environ(environ)):
        name = var[len(defaults.ENV_PREFIX):].lower()
        if name in defaults.REMOVED and name not in GROUP_OF:
            out.append(f"memvault: {var} is no longer a setting and is ignored (its value is fixed in the code: "
                       f"{defaults.REMOVED[name]})")
    return out


def warn_former_settings(environ: dict[str, str] | None = None) -> None:
    """Write ``former_settings`` to stderr, each at most once per process (stdout may be the protocol)."""
    for line in former_settings(dict(os.environ) if environ is None else environ):
        if line not in _warned:
            _warned.add(line)
            sys.stderr.write(line + "\n")


def load_settings(flags: dict[str, str] | None = None, **overrides: Any) -> Settings:
    """``Settings(**overrides)``, or ConfigError naming every bad value at once; a former
    setting's ``MEMVAULT_*`` variable is ignored with one line on stderr (``warn_former_settings``).

    ``flags``: setting name -> the command-line flag that gave its override (named in the
    message instead of the environment variable), e.g. ``{"user_id": "--user"}``.
    Raises ConfigError (its message is one line; see the class) and TypeError for an
    override that names no setting.
    """
    flags = flags or {}
    warn_former_settings()
    problems: list[str] = []
    for group, cls in GROUPS.items():  # every group, so that one message names every bad variable
        values = {k: v for k, v in overrides.items() if GROUP_OF.get(k) == group}
        try:
            cls(**values)
        except (ValidationError, SettingsError) as exc:
            problems.extend(_problems(exc, flags))
    if not problems:
        try:
            return Settings(**overrides)
        except (ValidationError, SettingsError) as exc:
            problems = _problems(exc, flags)
    raise ConfigError("memvault's settings are invalid: " + "; ".join(problems) + ". Fix them where memvault's "
                      "environment is set (your MCP client's server entry, or the shell), then restart it.")
