"""``memvault consolidate [--apply]``: merge memories that restate each other, from a terminal.

Same handler as the ``consolidate`` tool (``memvault.service.memory.consolidate``): without
``--apply`` it lists the proposals and writes nothing; with it, it writes them (undo one
with the ``restore`` tool, given the merged memory's id). Project: ``--project`` (``""``
= the global scope), else the project of the git work tree the current folder is in, else
``MEMVAULT_PROJECT``, else the current folder itself (not ``/``, home or a system folder),
else the global scope (as ``memvault index``). User: ``--user``.

Like ``memvault import``, it opens the store itself, so it refuses while the data dir's
owner process runs (it names its pid and how many clients it serves), and holds the
owner's start lock and lock while it runs: even the dry run reads the vector index,
which the owner holds. From a connected client, call the ``consolidate`` tool instead.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from memvault.cli.common import log_to_stderr, no_owner, run_project, settings_of, store_flags

ACTOR = "memvault-cli"
"""History actor of merges written from the terminal."""


def add_parser(sub) -> None:
    """Add the ``consolidate`` sub-command to ``sub`` (the ``memvault`` sub-parsers)."""
    sp = sub.add_parser("consolidate", help="propose (or --apply) merges of memories that restate each other")
    store_flags(sp)
    sp.add_argument("--apply", action="store_true", help="write the merges (default: only list them)")
    sp.add_argument("--limit", type=int, default=20, help="most merges listed or applied, 1-100 (default 20)")
    sp.add_argument("--json", action="store_true", help="print the result as JSON (the tool's reply)")
    sp.set_defaults(func=cmd_consolidate)


def cmd_consolidate(args: argparse.Namespace) -> int:
    """List or apply the merges of one scope; 0 when done, 1 on error (an owner runs, a bad argument)."""
    os.umask(0o077)
    log_to_stderr("WARNING")
    import anyio

    from memvault.service.errors import MemvaultError
    from memvault.service.memory.consolidate import ConsolidateArgs, consolidate
    from memvault.service.runtime import Runtime
    from memvault.service.scope.project import make_scope

    settings = settings_of(args)
    project, source = run_project(args, settings)
    scope = make_scope(settings.server.user_id, project, source, include_global=False)
    call = ConsolidateArgs(dry_run=not args.apply, limit=args.limit, project_given=args.project is not None)

    async def run() -> int:
        rt = await Runtime.open(settings)
        try:
            await rt.load()
            res = await consolidate(rt, scope, call, actor=ACTOR)
        except MemvaultError as exc:
            sys.stderr.write(f"memvault consolidate: {exc}\n")
            return 1
        finally:
            await rt.close()
        sys.stdout.write(json.dumps(res.model_dump(), ensure_ascii=False, indent=2) + "\n" if args.json
                         else _text(res.model_dump()))
        return 0

    with no_owner(settings, "consolidate", "opens the vector index, which the owner holds (from a connected "
                  "client, call the consolidate tool instead)") as refusal:
        if refusal:
            sys.stderr.write(f"memvault consolidate: {refusal}\n")
            return 1
        return anyio.run(run)


def _text(res: dict) -> str:
    """The result for a person: each proposal with its members, then one summary line."""
    out = []
    for p in res["proposals"]:
        head = f"merged into {p['merged_id']}" if p["merged_id"] else f"would merge {len(p['member_ids'])} memories"
        out.append(f"{head}, keeping {p['kept_id']}: {p['content']}")
        out += [f"  - {m['id']}  {m['content_preview']}" for m in p["members"]]
    where = res["scope"]["project"] or "(global)"
    verb = "applied" if res["applied"] else "proposed"
    hint = ("Run again with --apply to write them; the restore tool, given a merged id, undoes a merge."
            if res["proposals"] and not res["applied"] else res["hint"])
    out.append(f"{len(res['proposals'])} of {res['clusters_found']} merges {verb} in project {where} "
               f"({res['scanned']} memories compared). {hint}")
    return "\n".join(out) + "\n"
