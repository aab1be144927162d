"""A health summary of an open runtime: the checks of ``memvault doctor`` that a serving process can make.

The process that holds the stores (the owner) checks them in place: SQLite (schema),
the model (loaded), the vector index against SQLite (live memories without a point,
points without a live memory), what the index takes on its disk and the room left,
repairs running in the background, and collections set aside as damaged. Each check is one
line with what is wrong and the command that fixes it.
"""

from __future__ import annotations

from dataclasses import dataclass

from memvault.service.runtime import MEMORY_COLLECTION, Runtime


@dataclass(frozen=True)
class Check:
    """One line of the summary: what was checked, whether it is fine, and the detail (or fix)."""

    name: str
    ok: bool
    detail: str


async def health(rt: Runtime) -> list[Check]:
    """The checks, in order: sqlite, model, vector index, its disk use, repairs running, set-aside
    collections. Never raises for a failed check: it is reported as a line with ``ok=False``."""
    checks = [Check("sqlite", True, f"schema {await rt.facts.schema_version()}, {rt.settings.db_path}")]
    if not rt.vectors and rt.error is None:
        checks.append(Check("model", True, "still loading"))
        return checks
    try:
        emb, vectors = await rt.ready()
    except Exception as exc:
        checks.append(Check("model", False, f"the model or vector index failed to load: {exc}"))
        return checks
    checks.append(Check("model", True, f"{emb.model_id} (dim {emb.dim})"))
    wanted = await rt.facts.indexable_ids(rt.clock.now())
    present = await rt.run_sync(vectors.ids, MEMORY_COLLECTION)
    missing, orphans = len(wanted - present), len(present - wanted)
    if missing or orphans:
        checks.append(Check("vector index", False, f"{len(present)} points for {len(wanted)} live memories: "
                            f"{missing} without a point, {orphans} points without a memory; run `memvault reindex` "
                            "(after closing the clients)"))
    else:
        checks.append(Check("vector index", True, f"{len(present)} points for {len(wanted)} live memories"))
    report = await rt.run_sync(vectors.disk_report)
    if report is not None:
        checks.append(Check("vector index disk", report[0], report[1]))
    for name, state in rt.repairing.items():
        checks.append(Check(f"collection {name}", False, state.describe(name) + "; calls are served meanwhile"))
    for name, aside in rt.set_aside.items():
        checks.append(Check(f"collection {name}", False, f"set aside as damaged ({aside.reason}); rebuilt from SQLite"))
    return checks
