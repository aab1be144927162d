"""An embedded Qdrant Edge collection's folder: its layout and record, the integrity of its
files, and setting a damaged one aside.

Layout under the root folder (``settings.vectors_dir``), one folder per collection::

    <root>/<collection>/collection.json   model id + dim (written before the shard), and
                                          after a clean close the size and mtime of every
                                          shard file (the closing record)
    <root>/<collection>/shard/            the EdgeShard (segments, WAL, edge_config.json)
    <root>/<collection>/index-<ns>/shard/ the same after an index build swapped it in (the
                                          record's ``shard`` names the one in use, and
                                          ``built_points`` how many points it held when
                                          built; any other shard folder is a left-over,
                                          deleted once open: ``remove_leftovers``)

The record (``record``, ``read_record``, ``write_record``: JSON, replaced atomically and
fsynced) is what ``EdgeVectorIndex`` trusts at open: an unreadable one, or a shard beside no
record, raises DamagedCollection.

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

import json
import logging
import os
import re
import shutil
import time
from pathlib import Path

from . import edge_disk
from .base import DENSE, DamagedCollection

log = logging.getLogger(__name__)

BROKEN_KEPT = 3
"""Damaged collections set aside: the newest this many ``<root>.broken-*`` folders are kept."""
META_FILE = "collection.json"
SHARD_DIR = "shard"
META_FORMAT = 1
BUILD_PREFIX = "index-"
"""Folders (``<collection>/index-<time ns>/shard``) holding a shard copied for an index build."""
SHARD_REL = re.compile(r"^(shard|index-\d+/shard)$")
"""What a record's ``shard`` may name (relative to the collection folder)."""


def record(model_id: str, dim: int, shard: str = SHARD_DIR, built_points: int = 0) -> dict:
    """A collection record without its closing part (``shard`` and ``built_points`` only when set)."""
    out: dict = {"format": META_FORMAT, "model_id": model_id, "dim": dim}
    if shard != SHARD_DIR:
        out["shard"] = shard
    if built_points:
        out["built_points"] = built_points  # points when the HNSW index was built
    return out


def read_record(name: str, path: Path) -> dict | None:
    """The collection record, None when absent; DamagedCollection when unreadable."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # ValueError: bad JSON or bad UTF-8
        raise DamagedCollection(name, str(path.parent), f"{META_FILE} is unreadable ({exc})") from exc
    if (not isinstance(data, dict) or not isinstance(data.get("model_id"), str)
            or not isinstance(data.get("dim"), int)):
        raise DamagedCollection(name, str(path.parent), f"{META_FILE} is not a memvault collection record")
    return data


def write_record(path: Path, data: dict) -> None:
    """Write the record ``data`` to ``path`` atomically (a fsynced temporary file renamed over it)."""
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh, indent=1)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    if hasattr(os, "O_DIRECTORY"):  # make the rename itself durable (POSIX)
        fd = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def current_dir(cdir: Path) -> Path:
    """The shard folder the record of collection folder ``cdir`` names (``shard`` when unreadable)."""
    try:
        rel = json.loads((cdir / META_FILE).read_text(encoding="utf-8")).get("shard", SHARD_DIR)
    except (OSError, ValueError, AttributeError):
        rel = SHARD_DIR
    return cdir / (rel if isinstance(rel, str) and SHARD_REL.match(rel) else SHARD_DIR)


def remove_leftovers(cdir: Path, sdir: Path) -> None:
    """Delete the shard folders of ``cdir`` other than ``sdir`` (the one in use, now locked by us):
    copies of builds a crash interrupted, or the shard a swap replaced."""
    keep = sdir if sdir.parent == cdir else sdir.parent
    for p in cdir.iterdir():
        if p != keep and p.is_dir() and (p.name == SHARD_DIR or p.name.startswith(BUILD_PREFIX)):
            log.info("deleting left-over shard folder %s", p)
            shutil.rmtree(p, ignore_errors=True)


def has_hnsw(sdir: Path) -> bool:
    """True when a segment of the shard in ``sdir`` has an HNSW graph of its dense vectors
    (Qdrant Edge's ``indexed_vectors_count`` also counts plain and sparse indexes)."""
    return any((sdir / "segments").glob(f"*/vector_index-{DENSE}/graph.bin"))


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
