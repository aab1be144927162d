"""``memvault export`` and ``memvault import``: a data dir's records as a JSON Lines file.

The format and the rules are in ``memvault.service.transfer``. ``export`` reads SQLite
directly, in one read transaction: it never blocks a running owner (WAL), so it works
while clients are connected. ``import`` writes, and a running owner would not see the new
memories in its vector index, so it refuses while the data dir's owner process runs (it
names its pid and how many clients it serves) and, while it writes, holds the owner's
start lock and lock: a client started meanwhile waits for the import to finish. A
``--dry-run`` writes nothing and runs beside an owner.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from memvault.cli.common import log_to_stderr, no_owner, settings_of

if TYPE_CHECKING:
    from memvault.service.transfer import ImportSummary


def add_parser(sub) -> None:
    """Add the ``export`` and ``import`` sub-commands to ``sub`` (the ``memvault`` sub-parsers)."""
    sp = sub.add_parser("export", help="write memories, their history, tasks and the document registry "
                        "as JSON Lines")
    sp.add_argument("--data-dir", help="data folder (env MEMVAULT_DATA_DIR)")
    sp.add_argument("--user", dest="only_user", metavar="USER", help="only this user's records (documents: "
                    "those this user indexed); default: every user")
    sp.add_argument("--project", dest="only_project", metavar="PROJECT",
                    help="only this project's records ('' = the global scope); default: every project")
    sp.add_argument("-o", "--output", metavar="FILE", help="file to write (default: stdout)")
    sp.add_argument("file", metavar="FILE", nargs="?", help="file to write, as -o ('-' or none: stdout)")
    sp.set_defaults(func=cmd_export)

    sp = sub.add_parser("import", help="add the records of an export file (never overwrites)")
    sp.add_argument("--data-dir", help="data folder (env MEMVAULT_DATA_DIR)")
    sp.add_argument("file", metavar="FILE", help="an export file ('-' = stdin)")
    sp.add_argument("--dry-run", action="store_true", help="write nothing; print what would be imported")
    sp.set_defaults(func=cmd_import)


def cmd_export(args: argparse.Namespace) -> int:
    """Write the export to ``--output`` (atomically) or stdout; counts on stderr. 0, or 1 on error."""
    os.umask(0o077)  # memories are private: the file is 0600
    from memvault.clock import Clock
    from memvault.service.transfer import export_lines

    log_to_stderr("WARNING")
    settings = settings_of(args)
    lines = export_lines(settings, Clock().now(), user=args.only_user,
                         project=args.only_project)
    counts: dict[str, int] = {}
    if args.file is not None and args.output is not None and args.file != args.output:
        sys.stderr.write(f"memvault export: two files given ({args.file} and -o {args.output}); give one\n")
        return 2
    args.output = args.output or args.file
    if args.output in (None, "-"):
        _write(lines, sys.stdout, counts)
    else:
        target = Path(args.output)
        try:
            fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
        except OSError as exc:
            sys.stderr.write(f"memvault export: cannot write {target}: {exc.strerror or exc}\n")
            return 1
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
                _write(lines, out, counts)
            os.replace(tmp, target)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
    done = ", ".join(f"{n} {t}" for t, n in counts.items()) or "no records"
    sys.stderr.write(f"memvault export: {done}" + (f" written to {args.output}\n" if args.output else "\n"))
    return 0


def _write(lines: Iterator[str], out, counts: dict[str, int]) -> None:
    import json

    header = True
    for line in lines:
        out.write(line + "\n")
        if header:
            header = False
            continue
        kind = json.loads(line)["type"]
        counts[kind] = counts.get(kind, 0) + 1


def _read(path: str) -> list[str]:
    """The lines of the export file (``-``: stdin); raises InvalidArgument when it cannot be read."""
    from memvault.service.errors import InvalidArgument

    try:
        if path == "-":
            return sys.stdin.read().splitlines()
        return Path(path).read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise InvalidArgument(f"{path} is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except OSError as exc:
        raise InvalidArgument(f"cannot read {path}: {exc.strerror or exc}") from None


def cmd_import(args: argparse.Namespace) -> int:
    """Import an export file; prints the summary on stdout. 0 when done (records may be skipped),
    1 when the file is invalid, the owner runs or the store cannot be opened (nothing written)."""
    os.umask(0o077)
    from memvault.service.transfer import import_records, parse_export

    log_to_stderr("WARNING")
    import anyio

    settings = settings_of(args)
    parsed = parse_export(_read(args.file))  # the whole file is checked before anything is opened
    if args.dry_run:
        summary = anyio.run(lambda: import_records(settings, parsed, dry_run=True))
    else:
        with no_owner(settings) as refusal:
            if refusal:
                sys.stderr.write(f"memvault import: {refusal}\n")
                return 1
            summary = anyio.run(lambda: import_records(settings, parsed))
    _summary(summary)
    return 0


def _summary(s: ImportSummary) -> None:
    """The summary on stdout: one line per record type, then the skipped records named."""
    from memvault.service.transfer import SHOWN

    verb = "would import" if s.dry_run else "imported"
    out = ["dry run: nothing was written" if s.dry_run else "import done"]
    width = max(map(len, s.counts))
    for name, c in s.counts.items():
        out.append(f"  {name:<{width}}  {c.imported} {verb}, {c.skipped_existing} skipped (already there), "
                   f"{c.skipped_secret} skipped (hold a secret)")
    for name, ids in s.existing.items():
        more = f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
        out.append(f"already there ({name}, {len(ids)}): {', '.join(ids[:SHOWN])}{more}")
    for name, ident, kind in s.secrets:
        out.append(f"not imported, holds a secret ({kind}): {name} {ident}")
    if not s.dry_run and s.counts["memory"].imported:
        out.append("the imported memories are added to the search index when memvault next starts")
    if s.counts["doc_file"].imported:
        out.append("documents are registered without their text: run `memvault index` on their folders to "
                   "search them")
    sys.stdout.write("\n".join(out) + "\n")
