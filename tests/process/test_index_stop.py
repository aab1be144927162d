"""SIGTERM to the owner while ``index_docs`` runs: it stops at once and keeps what it finished.

A real ``memvault serve`` forwarder and the owner it starts (the process is the point):
the owner is signalled while it embeds a folder, must be gone within 2 s, and leaves
every file either whole in the registry (all its chunks, all their points) or absent;
indexing again embeds only the files it had not finished.

The folder is as small as still proves it: three batches of three files (18 chunks of
about 250 tokens each). The signal goes as soon as the first batch's files are
committed, while the second batch is in the model (the stages overlap) and the third
waits: an owner that finished the call before stopping would keep every file, and
indexing again embeds the two batches left, not a large folder.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import sqlite3
import time
from pathlib import Path

import anyio
import pytest

from tests.conftest import alive, owner_pid
from tests.docs_fixtures import write_filler_corpus
from tests.process.test_owner import forwarded_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow,
              pytest.mark.skipif(not hasattr(socket, "AF_UNIX"), reason="the owner listens on a Unix socket")]

FILES = 9
SECTIONS = 6
BATCH = 16  # chunks per batch (docs_batch_chunks): a batch closes after three 6-chunk files
STOP_WITHIN_S = 2.0


def write_corpus(root: Path) -> None:
    """FILES Markdown files of SECTIONS sections each (about 250 tokens a section)."""
    write_filler_corpus(root, files=FILES, sections=SECTIONS, words=100, modulus=13, title="Handbook")


def registry(data_dir: Path) -> dict[str, tuple[int, int]]:
    """{path: (chunk ids its row lists, chunk rows it has)} of the registered files."""
    con = sqlite3.connect(data_dir / "memvault.db")
    try:
        rows = con.execute("SELECT f.path, f.chunk_ids, (SELECT COUNT(*) FROM doc_chunks c WHERE c.doc_id = f.id) "
                           "FROM doc_files f").fetchall()
    except sqlite3.OperationalError:  # not created yet
        return {}
    finally:
        con.close()
    return {path: (len(json.loads(ids)), n) for path, ids, n in rows}


async def test_sigterm_during_index_docs_stops_within_2s_and_keeps_finished_files(data_dir, model_cache, tmp_path):
    corpus = tmp_path / "ws" / "handbook"
    write_corpus(corpus)
    stopped_after: float | None = None
    async with forwarded_client(data_dir, model_cache, corpus.parent, docs_batch_chunks=BATCH) as c:
        await c.list_tools()
        pid = owner_pid(data_dir)
        assert pid is not None

        async def index() -> None:
            try:
                await c.call_tool("index_docs", {"paths": ["handbook"]})
            except Exception:  # the owner went away mid-call: the answer is lost, not the work done
                pass

        async with anyio.create_task_group() as tg:
            tg.start_soon(index)
            for _ in range(4800):  # the first batch's files are committed (at most 240 s) ...
                if registry(data_dir):
                    break
                await anyio.sleep(0.05)
            await anyio.sleep(0.1)  # ... and the next batch is in the model
            os.kill(pid, signal.SIGTERM)
            t0 = time.monotonic()
            for _ in range(3000):  # gone, or 60 s
                if not alive(pid):
                    break
                await anyio.sleep(0.02)
            stopped_after = time.monotonic() - t0
            tg.cancel_scope.cancel()
    assert stopped_after is not None and stopped_after <= STOP_WITHIN_S, f"owner alive {stopped_after:.1f} s after SIGTERM"

    kept = registry(data_dir)
    assert 0 < len(kept) < FILES, f"{len(kept)} of {FILES} files were indexed before the signal"
    assert all(listed == rows > 0 for listed, rows in kept.values()), kept  # no file half-written
    chunks_kept = sum(rows for _, rows in kept.values())

    async with forwarded_client(data_dir, model_cache, corpus.parent, docs_batch_chunks=BATCH) as c:
        res = await c.call_tool("index_docs", {"paths": ["handbook"]})
        assert not res.is_error and res.structured_content is not None
        again = res.structured_content
    # the finished files are not redone, nor were their points lost (nothing re-embedded for them)
    assert again["unchanged"] == len(kept) and again["added"] == FILES - len(kept), again
    assert again["chunks_embedded"] == again["chunks_total"] - chunks_kept, again
