"""``python -m bench.index_speed``: indexing documents against the raw model, on code nobody here wrote.

Indexes a copy of packages of the running interpreter's standard library (default: json,
logging, email, http, asyncio; ``--packages`` to choose) with memvault's own ``index_docs`` path
(``Runtime`` + ``index_docs``, what ``memvault index`` runs) into a fresh data dir, then
embeds the very chunks it stored (the text each chunk is embedded with) through
memvault's embedder in a plain loop: length-sorted, ``EMBED_BATCH_SIZE`` texts a call.
Each side runs in a child process of its own, so that its peak RSS and CPU are its own.

Reported per side: files, chunks, wall seconds of the work (model loading excluded),
files/s and chunks/s, CPU user and system seconds of the work and the system share,
minor page faults, and the child's peak RSS (``ru_maxrss``, loading included). Then the
ratios: indexing throughput / raw throughput (wall), and raw CPU / indexing CPU, which
a shared machine's load distorts less than wall time. With ``--recall-probe``, a question
never asked before is embedded every half second while indexing runs (the model call a
recall of another client waits for), and its p50 / p95 / max in ms are reported beside
the same probe idle (its CPU then counts in the indexing side's). The load average is recorded
before and after. JSON in bench/results/index_speed-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import DEFAULT_MODEL_CACHE, md_table, write_result

DEFAULT_PACKAGES = ("json", "logging", "email", "http", "asyncio")


def _usage() -> dict[str, float]:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return {"user": ru.ru_utime, "sys": ru.ru_stime, "minflt": ru.ru_minflt, "wall": time.perf_counter()}


def _delta(before: dict[str, float]) -> dict[str, float]:
    after = _usage()
    return {k: after[k] - before[k] for k in before}


def _peak_rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _settings(data_dir: Path, model_cache: Path) -> Any:
    from memvault.config import Settings

    return Settings(data_dir=data_dir, model_cache_dir=model_cache)


def child_index(data_dir: Path, model_cache: Path, folders: list[Path], probe_recall: bool,
                profile: bool = False) -> dict[str, Any]:
    """Index ``folders`` into a fresh store in ``data_dir``, as ``memvault index`` does; measure the call.
    ``profile``: also the per-phase timeline (``bench.index_phases``)."""
    import anyio

    from bench.index_phases import PhaseClock
    from memvault.service.documents.indexing import index_docs
    from memvault.service.indexing import embed_query
    from memvault.service.runtime import Runtime
    from memvault.service.scope.project import make_scope

    async def probe(rt: Runtime, n: int, out: list[float], pause_s: float) -> None:
        """``n`` query embeddings of questions never asked before (what a recall waits for first), timed."""
        for i in range(n):
            t0 = time.perf_counter()
            await embed_query(rt, f"where is probe question {len(out)}-{i} about {time.time_ns()} answered?")
            out.append(time.perf_counter() - t0)
            await anyio.sleep(pause_s)

    async def run() -> dict[str, Any]:
        settings = _settings(data_dir, model_cache)
        rt = await Runtime.open(settings)
        clock = PhaseClock()
        idle: list[float] = []
        during: list[float] = []
        try:
            await rt.load()
            await rt.started()
            if probe_recall:
                await probe(rt, 10, idle, 0.1)
            scope = make_scope(settings.server.user_id, "bench-index-speed", "argument")
            if profile:
                clock.install(rt)
            before = _usage()
            async with anyio.create_task_group() as tg:
                if probe_recall:
                    tg.start_soon(probe, rt, 1_000_000, during, 0.5)
                res = await index_docs(rt, scope, [str(f) for f in folders], None, folders,
                                       cite_bases=[f.parent for f in folders])
                work = _delta(before)
                tg.cancel_scope.cancel()
            phases = clock.report(before["wall"], before["wall"] + work["wall"]) if profile else {}
        finally:
            await rt.close()
        return {"files": res.added, "chunks": res.chunks_embedded, **work, "peak_rss_mib": _peak_rss_mib(),
                "query_ms_idle": _ms(idle), "query_ms_during": _ms(during), "profile": phases}

    return anyio.run(run)


def _ms(seconds: list[float]) -> dict[str, float]:
    """p50 / p95 / max of ``seconds`` in ms."""
    if not seconds:
        return {}
    xs = sorted(seconds)
    return {"n": len(xs), "p50": round(1000 * xs[len(xs) // 2], 1),
            "p95": round(1000 * xs[min(len(xs) - 1, int(0.95 * len(xs)))], 1), "max": round(1000 * xs[-1], 1)}


def chunk_texts(data_dir: Path) -> list[str]:
    """The text each stored chunk was embedded with (heading or symbol line, then the text)."""
    from memvault.service.documents.collection import MAX_HEADING_CHARS

    con = sqlite3.connect(data_dir / "memvault.db")
    try:
        rows = con.execute("SELECT heading, symbol, text FROM doc_chunks ORDER BY doc_id, seq").fetchall()
    finally:
        con.close()
    return [((h or s)[:MAX_HEADING_CHARS] + "\n" + t) if (h or s) else t for h, s, t in rows]


def child_raw(data_dir: Path, model_cache: Path) -> dict[str, Any]:
    """The same chunks through memvault's embedder in a plain loop: length-sorted, batch_size a call."""
    from memvault.service.runtime import default_embedder

    texts = chunk_texts(data_dir)
    emb = default_embedder(_settings(Path(tempfile.mkdtemp(prefix="raw-")), model_cache))
    emb.embed_passages(["warm up"])
    texts.sort(key=len)
    before = _usage()
    for i in range(0, len(texts), emb.batch_size):
        emb.embed_passages(texts[i: i + emb.batch_size])
    work = _delta(before)
    return {"chunks": len(texts), **work, "peak_rss_mib": _peak_rss_mib()}


def _run_child(mode: str, *args: str) -> dict[str, Any]:
    out = subprocess.run([sys.executable, "-m", "bench.index_speed", "--child", mode, *args],
                         capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"bench.index_speed: the {mode} child failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _loadavg() -> str:
    return " ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--packages", nargs="+", default=list(DEFAULT_PACKAGES),
                    help="standard-library packages to index (default: %(default)s)")
    ap.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    ap.add_argument("--recall-probe", action="store_true",
                    help="time a new question's query embedding every 0.5 s while indexing (its CPU counts in "
                         "the indexing side's)")
    ap.add_argument("--profile", action="store_true",
                    help="also time indexing's phases (read+chunk, model runs, keyword vectors, stores) and say "
                         "which ran while no model run was going on")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        mode, data, cache, *folders = args.child
        flags = folders[0].split(",") if folders else []
        got = (child_index(Path(data), Path(cache), [Path(f) for f in folders[1:]], "probe" in flags,
                           "profile" in flags)
               if mode == "index" else child_raw(Path(data), Path(cache)))
        sys.stdout.write(json.dumps(got) + "\n")
        return 0

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    folders = [stdlib / p for p in args.packages]
    missing = [str(f) for f in folders if not f.is_dir()]
    if missing:
        raise SystemExit(f"not a package folder of this interpreter's standard library: {', '.join(missing)}")
    load_before = _loadavg()
    with tempfile.TemporaryDirectory(prefix="memvault-index-speed-") as tmp:
        data = Path(tmp) / "d"
        # A copy: the interpreter may live inside a git work tree that ignores it (pyenv's does).
        copies = [Path(tmp) / "src" / f.name for f in folders]
        for f, c in zip(folders, copies, strict=True):
            shutil.copytree(f, c, ignore=shutil.ignore_patterns("__pycache__"))
        flags = ",".join(f for f, on in (("probe", args.recall_probe), ("profile", args.profile)) if on) or "-"
        idx = _run_child("index", str(data), str(args.model_cache), flags, *map(str, copies))
        raw = _run_child("raw", str(data), str(args.model_cache))
    load_after = _loadavg()

    def row(name: str, r: dict[str, Any]) -> list[Any]:
        cpu = r["user"] + r["sys"]
        return [name, r.get("files", ""), r["chunks"], f"{r['wall']:.1f}",
                f"{r['files'] / r['wall']:.2f}" if "files" in r else "", f"{r['chunks'] / r['wall']:.2f}",
                f"{r['user']:.1f}", f"{r['sys']:.1f}", f"{100 * r['sys'] / cpu:.0f} %",
                f"{r['minflt'] / 1e6:.2f} M", f"{r['peak_rss_mib']:.0f}"]

    throughput_ratio = (idx["chunks"] / idx["wall"]) / (raw["chunks"] / raw["wall"])
    cpu_ratio = (raw["user"] + raw["sys"]) / (idx["user"] + idx["sys"])
    print(md_table(["run", "files", "chunks", "wall s", "files/s", "chunks/s", "user s", "sys s", "sys share",
                    "minor faults", "peak RSS MiB"], [row("memvault index_docs", idx), row("raw model", raw)]))
    print(f"\nindexing throughput / raw model: {throughput_ratio:.2f} x (wall); raw CPU / indexing CPU: "
          f"{cpu_ratio:.2f} x; load average before {load_before}, after {load_after}")
    if args.recall_probe:
        print(f"a recall's query embedding (new questions, ms): idle {idx['query_ms_idle']}, while indexing "
              f"{idx['query_ms_during']}")
    if args.profile:
        prof = idx["profile"]
        print(f"\nindexing's phases (s; 'alone': while no model run was going on): wall {prof['wall_s']}, model "
              f"running {prof['model_busy_s']}, model idle {prof['model_idle_s']}")
        print(md_table(["phase", "calls", "s", "s alone"],
                       [[k, p["calls"], p["s"], p["s_without_model"]] for k, p in prof["phases"].items()]))
    payload = {"packages": args.packages, "index": idx, "raw": raw, "throughput_ratio": round(throughput_ratio, 3),
               "cpu_ratio": round(cpu_ratio, 3), "load_before": load_before, "load_after": load_after}
    print(f"written to {write_result('index_speed', payload)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
