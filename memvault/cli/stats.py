"""``memvault stats [--json]``: how many memories are stored, by user, project, kind and status.

Read-only from the SQLite file (no model, no owner needed; safe while an owner runs).
The table has one row per user and project (``(global)`` for the shared scope; a project's
readable name, its id beside it when they differ) with a column per status and the
active memories' kinds; ``--json`` prints ``{"data_dir": ..., "groups": [{"user_id",
"project", "kind", "status", "count"}, ...]}`` for scripts.
"""

from __future__ import annotations

import argparse
import json
import sqlite3
import sys
from collections import Counter, defaultdict
from typing import Any

from memvault.cli.common import settings_of, store_flags

STATUS_ORDER = ("active", "superseded", "deleted")
"""Status columns in this order first; any other status follows, sorted."""


def add_parser(sub) -> None:
    """Add ``stats`` to ``sub`` (the ``memvault`` sub-parsers)."""
    sp = sub.add_parser("stats", help="counts of stored memories (a table; --json for scripts)")
    store_flags(sp)
    sp.add_argument("--json", action="store_true", help="one JSON object, for scripts")
    sp.set_defaults(func=cmd_stats)


def _groups(args: argparse.Namespace) -> tuple[str, list[dict[str, Any]]]:

    settings = settings_of(args)
    if not settings.db_path.exists():
        return str(settings.storage.data_dir), []
    try:
        con = sqlite3.connect(f"file:{settings.db_path}?mode=ro", uri=True)
        try:
            rows = con.execute(
                "SELECT user_id, project, kind, status, COUNT(*) FROM memories GROUP BY 1,2,3,4 ORDER BY 1,2,3,4"
            ).fetchall()
        finally:
            con.close()
    except sqlite3.Error as exc:
        from memvault.service.errors import StoreUnavailable
        from memvault.service.failures import open_failure

        raise StoreUnavailable(open_failure(exc, settings.storage.data_dir, settings.db_path)) from exc
    keys = ("user_id", "project", "kind", "status", "count")
    return str(settings.storage.data_dir), [dict(zip(keys, r, strict=True)) for r in rows]


def render_table(data_dir: str, groups: list[dict[str, Any]]) -> str:
    """The table ``memvault stats`` prints (see the module docstring)."""
    from memvault.service.scope.project import readable_name

    if not groups:
        return f"data dir  {data_dir}\nno memories stored yet\n"
    statuses = [s for s in STATUS_ORDER if any(g["status"] == s for g in groups)]
    statuses += sorted({g["status"] for g in groups} - set(statuses))
    counts: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    kinds: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)
    for g in groups:
        key = (g["user_id"], g["project"])
        counts[key][g["status"]] += g["count"]
        if g["status"] == "active":
            kinds[key][g["kind"]] += g["count"]
    header = ["user", "project", *statuses, "total", "active kinds"]
    rows: list[list[str]] = []
    for (user, project), c in sorted(counts.items()):
        name = readable_name(project)
        shown = "(global)" if project == "" else name if name == project else f"{name} ({project})"
        kind_text = ", ".join(f"{k} {n}" for k, n in sorted(kinds[(user, project)].items(), key=lambda kv: -kv[1]))
        rows.append([user, shown, *(str(c[s]) for s in statuses), str(sum(c.values())), kind_text or "-"])
    total = Counter[str]()
    for c in counts.values():
        total.update(c)
    rows.append(["", "all", *(str(total[s]) for s in statuses), str(sum(total.values())), ""])
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    numeric = {i for i, h in enumerate(header) if h in statuses or h == "total"}

    def line(cells: list[str]) -> str:
        out = [c.rjust(widths[i]) if i in numeric else c.ljust(widths[i]) for i, c in enumerate(cells)]
        return "  ".join(out).rstrip()

    return "\n".join([f"data dir  {data_dir}", line(header), line(["-" * w for w in widths]),
                      *(line(r) for r in rows)]) + "\n"


def cmd_stats(args: argparse.Namespace) -> int:
    """Print the counts as a table (``--json``: as JSON); 0."""
    data_dir, groups = _groups(args)
    if args.json:
        sys.stdout.write(json.dumps({"data_dir": data_dir, "groups": groups}, indent=2) + "\n")
    else:
        sys.stdout.write(render_table(data_dir, groups))
    return 0
