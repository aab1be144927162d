"""Smoke test of ``bench.owner``: both modes measured on a tiny store, and no owner left running.

The figures themselves are not checked (no timing asserts); what is checked is that the
bench drives both modes to the end on a real store, counts what it was asked to, finds
every process it sums the memory of, and stops the owner it started.
"""

from __future__ import annotations

import math
import shutil

import pytest

from bench import synth
from bench.owner import FORWARDERS, _running, goals, measure_pair, modes
from bench.speed import filled_store, memvault_system

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

N, RECALLS, REMEMBERS = 20, 3, 2


async def test_owner_bench_measures_both_modes_and_stops_the_owner(model_cache, tmp_path):
    direct, forwarded = modes(memvault_system(model_cache, progress=False), owner_idle_s=30)
    texts = synth.sentences(N + REMEMBERS, seed=0)
    filled, new = texts[:N], texts[N:]
    await filled_store(direct, filled, 0, tmp_path / "filled", None)
    shutil.copytree(tmp_path / "filled", tmp_path / "direct")
    shutil.copytree(tmp_path / "filled", tmp_path / "forwarded")

    rows = await measure_pair(direct, forwarded, tmp_path / "direct", tmp_path / "forwarded", N, set(filled),
                              synth.queries(RECALLS + 5, seed=1), new, handshakes=1, pings=3)

    assert [r["mode"] for r in rows] == ["forwarded cold", "direct", "forwarded"]
    cold, d, f = rows
    assert len(cold["handshakes_ms"]) == 1 and len(d["handshakes_ms"]) == len(f["handshakes_ms"]) == 1
    for r in (d, f):
        assert (r["pings"], r["recalls"], r["remembers"]) == (3, RECALLS, REMEMBERS), r
        assert r["remember_statuses"] == {"stored": REMEMBERS}, r
        assert not math.isnan(r["rss_idle_mb"]) and not math.isnan(r["rss_peak_load_mb"]), r
    # CPU per ping and per call of each mode's processes; the owner does a recall's work, its
    # forwarder only relays
    assert d["cpu_ms_per_call"] > 0 and f["cpu_ms_per_call"] > 0, (d, f)
    assert f["cpu_ms_per_call"] == pytest.approx(f["cpu_ms_per_call_owner"] + f["cpu_ms_per_call_forwarder"])
    assert f["cpu_ms_per_call_owner"] > f["cpu_ms_per_call_forwarder"], f
    by = f["rss_idle_by_process_mb"]
    assert len(by["forwarders"]) == FORWARDERS
    assert all(by["owner"] > v for v in by["forwarders"]), f"the owner holds the model: {by}"
    assert f["rss_idle_mb"] == pytest.approx(by["owner"] + sum(by["forwarders"]), rel=0.05)
    # the bench stopped the owner it started: no process, no status file left behind
    assert not _running(f["owner_pid"]), f"owner pid {f['owner_pid']} still runs"
    assert not (tmp_path / "forwarded" / "owner.json").exists()
    assert {g["goal"] for g in goals(rows)} >= {"forwarded handshake, owner up (median)",
                                                "recall p50 added by forwarding"}
