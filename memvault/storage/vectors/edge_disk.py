"""The disk under an embedded Qdrant Edge store: free space, what the store uses, and a full disk.

Qdrant Edge keeps its data in memory-mapped files created at their full size with holes
(sparse): a 32 MB WAL segment, a 32 MB chunk of dense vectors, a 4 MB page and two 1 MB
bitmaps per payload index, and more, ~240 MB apparent for a collection of 20 points.
On ext4 the holes cost nothing. Two things make them cost:

- Writing into a hole through a mapping needs a free block right then; on a full disk
  the kernel answers with SIGBUS, which kills the process (no exception to catch). So
  every write is refused beforehand, with ``DiskFull`` (an OSError ENOSPC), when the
  disk has less than ``WRITE_RESERVE`` bytes plus the write's own size free.
- On tmpfs (RAM-backed: ``/dev/shm``, a small ``mount -t tmpfs``) even reading a hole
  allocates it, and loading a shard reads (pre-faults) its dense vectors and payload
  indexes whole: ~87 MB for a 20-point collection created with the engine's defaults.
  A load that would not fit is refused (``check_load``) instead of dying half-way; a
  shard created on tmpfs keeps its dense vectors ``Cold`` (not pre-faulted: on tmpfs the
  pages are in RAM anyway), which saves the 32 MB chunk.

``usage`` reports what the store takes (allocated, not apparent, bytes) for ``doctor``;
``DiskFull`` names the disk, what the index and its set-aside copies take there, and
what to delete.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

WRITE_RESERVE = 8 << 20
"""Bytes that must stay free on the disk beyond a write's own size (pages of the WAL, the
id tracker and each payload index that the write may touch for the first time)."""
POINT_BYTES = 4096
"""Bytes per point written, beyond its dense vector (payload, keyword vector, index entries)."""
TMPFS_MAGIC = 0x01021994
"""``statfs`` type of tmpfs (Linux), where reading a hole of a mapped file allocates it."""

_PREFAULTED = re.compile(r"(payload_index/[^/]+-(map|numeric)/[^/]+\.dat|vector_storage-dense/vectors/chunk_\d+\.mmap)$")
"""Files of a shard that loading reads whole (measured on Qdrant Edge 0.9 over tmpfs)."""


def mb(n: int) -> str:
    """Bytes as megabytes for a person ("12.3 MB")."""
    return f"{n / 1e6:.1f} MB"


def free_bytes(path: Path) -> int:
    """Bytes an unprivileged process may still write on the disk holding ``path`` (or its nearest existing parent)."""
    p = path
    while not p.exists() and p != p.parent:
        p = p.parent
    st = os.statvfs(p)
    return st.f_bavail * st.f_frsize


def on_tmpfs(path: Path) -> bool:
    """True when ``path`` lives on tmpfs (Linux; False where it cannot be told)."""
    try:
        import ctypes
        import ctypes.util

        class _StatFs(ctypes.Structure):
            _fields_ = [("f_type", ctypes.c_long), ("rest", ctypes.c_byte * 120)]

        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        buf = _StatFs()
        p = path
        while not p.exists() and p != p.parent:
            p = p.parent
        if libc.statfs(str(p).encode(), ctypes.byref(buf)) != 0:
            return False
        return (buf.f_type & 0xFFFFFFFF) == TMPFS_MAGIC
    except (OSError, AttributeError):
        return False


def allocated(path: Path) -> int:
    """Bytes really allocated to the files under ``path`` (holes not counted); 0 when absent."""
    total = 0
    if path.is_file():
        return path.stat().st_blocks * 512
    for p in path.rglob("*"):
        try:
            if p.is_file() and not p.is_symlink():
                total += p.stat().st_blocks * 512
        except OSError:  # gone meanwhile
            continue
    return total


def broken_copies(root: Path) -> list[Path]:
    """The set-aside folders (``<root>.broken-*``) beside the store's root, oldest first."""
    prefix = f"{root.name}.broken-"
    try:
        found = [p for p in root.parent.iterdir() if p.name.startswith(prefix) and p.is_dir()]
    except OSError:
        return []
    # The names sort by time: a UTC stamp, then "-2", "-3" for folders made in the same second.
    return sorted(found, key=lambda p: (p.name[: len(prefix) + 16], len(p.name), p.name))


@dataclass(frozen=True)
class Usage:
    """What the store takes on its disk: ``index`` bytes under the root, ``broken`` bytes in
    set-aside copies (``copies`` of them), ``free`` bytes left, ``disk``: the root's path,
    ``tmpfs``: whether the disk is RAM-backed."""

    disk: Path
    index: int
    broken: int
    copies: int
    free: int
    tmpfs: bool

    def describe(self) -> str:
        """One line for ``doctor``."""
        aside = f"; {self.copies} set-aside damaged cop{'y' if self.copies == 1 else 'ies'} take {mb(self.broken)}" \
            if self.copies else ""
        kind = " (tmpfs: every mapped page is RAM)" if self.tmpfs else ""
        return f"{mb(self.index)} in {self.disk}{aside}; {mb(self.free)} free on that disk{kind}"


def usage(root: Path) -> Usage:
    """What the store under ``root`` takes on its disk (see ``Usage``)."""
    copies = broken_copies(root)
    return Usage(root, allocated(root), sum(allocated(c) for c in copies), len(copies), free_bytes(root),
                 on_tmpfs(root))


def what_to_free(root: Path) -> str:
    """The advice of a full-disk message: the set-aside copies to delete, if any, else the disk."""
    copies = broken_copies(root)
    if copies:
        size = sum(allocated(c) for c in copies)
        return (f"delete the set-aside damaged copies {root.parent / (root.name + '.broken-*')} "
                f"({len(copies)}, {mb(size)}; memvault rebuilt what they held from SQLite) or free space on that disk")
    return "free space on that disk or move MEMVAULT_DATA_DIR to a bigger one"


class DiskFull(OSError):
    """The disk under the store has too little space for what was asked (ENOSPC): the
    message names the disk, what the index takes there and what to free."""

    def __init__(self, root: Path, doing: str, need: int) -> None:
        free = free_bytes(root)
        text = (f"no space left for the vector index on the disk holding {root} ({doing} needs about "
                f"{mb(need)}, {mb(free)} free; the index takes {mb(allocated(root))} there): "
                f"{what_to_free(root)}. memvault retries by itself once there is room")
        super().__init__(errno.ENOSPC, text, str(root))
        self.text = text

    def __str__(self) -> str:
        return self.text


def check_write(root: Path, points: int, dim: int) -> None:
    """Raise DiskFull unless the disk holding ``root`` can take a write of ``points`` points of ``dim`` floats."""
    need = WRITE_RESERVE + points * (dim * 4 + POINT_BYTES)
    if free_bytes(root) < need:
        raise DiskFull(root, f"writing {points} point{'s' if points != 1 else ''}", need)


FIELD_CREATE_BYTES = 2 << 20
"""Bytes a new shard allocates on tmpfs per payload index (its two 1 MB bitmaps, written at creation)."""


def check_create(root: Path, fields: int) -> None:
    """Raise DiskFull unless a new shard with ``fields`` payload indexes fits on the disk holding ``root``."""
    need = WRITE_RESERVE + (fields * FIELD_CREATE_BYTES if on_tmpfs(root) else 0)
    if free_bytes(root) < need:
        raise DiskFull(root, "creating a collection", need)


def load_need(sdir: Path) -> int:
    """Bytes loading the shard in ``sdir`` will allocate: on tmpfs the holes of the files it
    reads whole (``_PREFAULTED``); elsewhere none."""
    if not on_tmpfs(sdir):
        return 0
    need = 0
    for p in sdir.rglob("*"):
        rel = p.relative_to(sdir).as_posix()
        if _PREFAULTED.search(rel) and p.is_file() and not ("vector_storage-dense" in rel and _cold(p)):
            st = p.stat()
            need += max(0, st.st_size - st.st_blocks * 512)
    return need


def _cold(path: Path) -> bool:
    """Whether the segment holding ``path`` keeps its dense vectors mapped without reading them in
    (its ``segment.json`` says ``ChunkedMmap``; ``InRamChunkedMmap`` is read in at load)."""
    for seg in path.parents:
        meta = seg / "segment.json"
        if meta.is_file():
            try:
                kind = json.loads(meta.read_text(encoding="utf-8"))["config"]["vector_data"]["dense"]["storage_type"]
            except (OSError, ValueError, KeyError, TypeError):
                return False
            return isinstance(kind, str) and "InRam" not in kind
    return False


def check_load(root: Path, sdir: Path) -> None:
    """Raise DiskFull when loading the shard in ``sdir`` would not fit on its disk (it would
    die with SIGBUS half-way)."""
    need = load_need(sdir) + WRITE_RESERVE
    if free_bytes(sdir) < need:
        raise DiskFull(root, "opening it", need)


def room_to_keep(root: Path, folder: Path) -> bool:
    """Whether a damaged collection folder can be kept aside while a new one is built beside
    it: older set-aside copies are deleted first when that makes room; False when even then
    the disk would keep less free than the folder takes (its rebuild needs about as much)."""
    need = allocated(folder) + WRITE_RESERVE
    if free_bytes(root) >= need:
        return True
    for old in broken_copies(root):
        shutil.rmtree(old, ignore_errors=True)
        if free_bytes(root) >= need:
            return True
    return False
