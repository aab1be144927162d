"""Driver for the mem0 peer: runs inside mem0's own venv (stdlib + mem0ai + fastembed only).

Reads one JSON job on stdin, writes one JSON result on stdout; logs go to stderr.
It must not import memvault or bench (they are not in mem0's venv).

Job: ``{"workdir": str, "fastembed_cache": str, "model": str, "dims": int, "limit": int,
"bm25": bool, "conversations": [{"id": str, "turns": [[dia_id, text], ...],
"questions": [str, ...]}]}``.
Result: ``{"versions": {...}, "network_attempts": [...], "conversations": [{"id", "store_s",
"search_s", "stored", "bm25_active", "short_lists", "ranked": [[dia_id, ...] per question]}]}``.

Per conversation: a fresh ``mem0.Memory`` (embedded Qdrant at ``<workdir>/<id>/qdrant``,
history DB at ``<workdir>/<id>/history.db``, fastembed embedder), then
``add(text, user_id=id, metadata={"dia_id": d}, infer=False)`` per turn and
``search(q, top_k=limit, filters={"user_id": id})`` per question. Every outbound
internet socket (connect / getaddrinfo on AF_INET/AF_INET6) is refused and recorded, so
a result with empty ``network_attempts`` proves that mem0 made no network call.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from importlib import metadata
from pathlib import Path

NETWORK_ATTEMPTS: list[str] = []


def _guard_network() -> None:
    """Refuse and record every internet connection or name lookup made in this process."""
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def connect(self, address):  # type: ignore[no-untyped-def]
        if self.family in (socket.AF_INET, socket.AF_INET6):
            NETWORK_ATTEMPTS.append(f"connect {address!r}")
            raise OSError("network disabled by peer_mem0_driver")
        return real_connect(self, address)

    def connect_ex(self, address):  # type: ignore[no-untyped-def]
        if self.family in (socket.AF_INET, socket.AF_INET6):
            NETWORK_ATTEMPTS.append(f"connect_ex {address!r}")
            return 111  # ECONNREFUSED
        return real_connect_ex(self, address)

    def getaddrinfo(host, *a, **k):  # type: ignore[no-untyped-def]
        NETWORK_ATTEMPTS.append(f"getaddrinfo {host!r}")
        raise socket.gaierror(socket.EAI_NONAME, "network disabled by peer_mem0_driver")

    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket.getaddrinfo = getaddrinfo  # type: ignore[assignment]


def _config(job: dict, conv_dir: Path) -> dict:
    """mem0 MemoryConfig dict: embedded Qdrant, fastembed, dummy OpenAI LLM (never called with infer=False)."""
    return {
        "vector_store": {"provider": "qdrant", "config": {
            "collection_name": "bench", "embedding_model_dims": job["dims"], "path": str(conv_dir / "qdrant"),
            "on_disk": True}},
        "embedder": {"provider": "fastembed", "config": {"model": job["model"], "embedding_dims": job["dims"]}},
        # Constructed (Memory.__init__ always builds an LLM) but only used by infer=True; the
        # base URL is a closed loopback port so even a stray call could not leave the machine.
        "llm": {"provider": "openai", "config": {"api_key": "dummy-no-network", "model": "none",
                                                 "openai_base_url": "http://127.0.0.1:9/v1"}},
        "history_db_path": str(conv_dir / "history.db"),
    }


def _bm25_encoder(cache: str):  # type: ignore[no-untyped-def]
    """fastembed's Qdrant/bm25 (Snowball stemmer) without its hub-only stopword files: an empty list."""
    from fastembed import SparseTextEmbedding

    folder = Path(cache) / "bm25-local"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "config.json").write_text("{}")
    return SparseTextEmbedding(model_name="Qdrant/bm25", specific_model_path=str(folder), stopwords=set())


def run_conversation(job: dict, conv: dict) -> dict:
    """Store the turns, run the questions; returns timings and ranked dia ids per question."""
    from mem0 import Memory

    conv_dir = Path(job["workdir"]) / conv["id"]
    conv_dir.mkdir(parents=True, exist_ok=True)
    mem = Memory.from_config(_config(job, conv_dir))
    if job.get("bm25"):
        mem.vector_store._bm25_encoder = _bm25_encoder(job["fastembed_cache"])
    uid = conv["id"]
    t0 = time.perf_counter()
    stored = 0
    for dia, text in conv["turns"]:
        res = mem.add(text, user_id=uid, metadata={"dia_id": dia}, infer=False)
        stored += len(res["results"])
    store_s = time.perf_counter() - t0
    ranked, short = [], 0
    t0 = time.perf_counter()
    for q in conv["questions"]:
        hits = mem.search(q, top_k=job["limit"], filters={"user_id": uid})["results"]
        ranked.append([(h.get("metadata") or {}).get("dia_id") for h in hits])
        short += len(hits) < job["limit"]
    search_s = time.perf_counter() - t0
    enc = mem.vector_store._bm25_encoder
    out = {"id": uid, "turns": len(conv["turns"]), "stored": stored, "questions": len(conv["questions"]),
           "store_s": round(store_s, 2), "search_s": round(search_s, 2),
           "store_ms_per_turn": round(1000 * store_s / max(len(conv["turns"]), 1), 2),
           "search_ms_per_query": round(1000 * search_s / max(len(conv["questions"]), 1), 2),
           "bm25_active": bool(enc), "short_lists": short, "loadavg": os.getloadavg(), "ranked": ranked}
    mem.close()
    return out


def main() -> None:
    """Read the job on stdin, run it, print the result JSON on stdout."""
    job = json.load(sys.stdin)
    os.environ["MEM0_TELEMETRY"] = "False"
    os.environ["MEM0_DIR"] = str(Path(job["workdir"]) / "mem0-home")
    os.environ["HF_HUB_OFFLINE"] = "1"
    os.environ["FASTEMBED_CACHE_PATH"] = job["fastembed_cache"]
    os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
    _guard_network()
    convs = []
    for conv in job["conversations"]:
        print(f"# mem0 {conv['id']}", file=sys.stderr, flush=True)
        convs.append(run_conversation(job, conv))

    def ver(p: str) -> str | None:
        try:
            return metadata.version(p)
        except metadata.PackageNotFoundError:
            return None

    versions = {p: ver(p) for p in ("mem0ai", "qdrant-client", "fastembed", "onnxruntime", "spacy", "openai")}
    versions["python"] = sys.version.split()[0]
    json.dump({"versions": versions, "network_attempts": NETWORK_ATTEMPTS, "conversations": convs}, sys.stdout)


if __name__ == "__main__":
    main()
