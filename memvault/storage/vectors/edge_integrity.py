"""Integrity of an embedded Qdrant Edge collection's files, and setting a damaged one aside.

The closing record: a clean close writes, into the collection record
(``collection.json``), the size and mtime of every file of the shard (``shard_files``);
the next open compares the files with it (``changed_files``) and refuses a collection
whose files were truncated, rewritten or deleted while memvault was not running. The
record is marked open again before the engine loads the shard, since loading rewrites
some files itself (it applies and deletes its journals): a process that dies while
loading must leave no closing record behind.

Setting aside (``move_aside``): a damaged collection folder is moved to
``<root>.broken-<UTC time>/<name>`` (the newest ``BROKEN_KEPT`` such folders are kept)
so that it can be made anew and rebuilt from SQLite, but only while its disk keeps
room to rebuild it beside (``edge_disk.room_to_keep``: older copies go first); when even
that is not enough, its files are deleted instead (SQLite holds every point anyway).
"""

from __future__ import annotations

import logging
import os
import shutil
import time
from pathlib import Path

from . import edge_disk

log = logging.getLogger(__name__)

BROKEN_KEPT = 3
"""Damaged collections set aside: the newest this many ``<root>.broken-*`` folders are kept."""


def shard_files(sdir: Path) -> dict[str, list[int]]:
    """Every file under ``sdir``: path relative to it (POSIX) -> [size in bytes, mtime in ns]."""
    out: dict[str, list[int]] = {}
    for path in sorted(sdir.rglob("*")):
        if path.is_file():
            st = path.stat()
            out[path.relative_to(sdir).as_posix()] = [st.st_size, st.st_mtime_ns]
    return out


def changed_files(sdir: Path, closed: dict[str, list[int]]) -> list[str]:
    """How the files under ``sdir`` differ from a closing record (``shard_files`` at close),
    one phrase per file (``"wal/open-1 (size 33554432 -> 0)"``), sorted by path."""
    now = shard_files(sdir)
    out = []
    for rel in sorted(set(closed) | set(now)):
        old, new = closed.get(rel), now.get(rel)
        if old == new:
            continue
        if new is None:
            out.append(f"{rel} (deleted)")
        elif old is None:
            out.append(f"{rel} (new)")
        elif old[0] != new[0]:
            out.append(f"{rel} (size {old[0]} -> {new[0]})")
        else:
            out.append(f"{rel} (rewritten)")
    return out


def move_aside(root: Path, name: str) -> str:
    """Move collection folder ``root/name`` (closed, not locked) to ``<root>.broken-<UTC time>/<name>``
    and return the new path; "" when it was deleted instead, for lack of room (see the module
    docstring), or when there is no folder. Keeps the newest ``BROKEN_KEPT`` set-aside folders."""
    cdir = root / name
    if not cdir.exists():
        return ""
    if not edge_disk.room_to_keep(root, cdir):
        size = edge_disk.allocated(cdir)
        shutil.rmtree(cdir, ignore_errors=True)
        log.warning("vector collection %s: its damaged files (%s) were deleted, not kept aside: the disk "
                    "holding %s has %s free, too little to keep them and rebuild the collection", name,
                    edge_disk.mb(size), root, edge_disk.mb(edge_disk.free_bytes(root)))
        return ""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    dest, n = root.parent / f"{root.name}.broken-{stamp}" / name, 2
    while dest.exists():
        dest, n = root.parent / f"{root.name}.broken-{stamp}-{n}" / name, n + 1
    dest.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.replace(cdir, dest)
    prune_broken(root)
    return str(dest)


def prune_broken(root: Path) -> None:
    """Delete all but the newest ``BROKEN_KEPT`` set-aside folders of ``root``."""
    for old in edge_disk.broken_copies(root)[:-BROKEN_KEPT]:
        shutil.rmtree(old, ignore_errors=True)
