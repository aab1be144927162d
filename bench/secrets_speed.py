"""Speed of the secret detector (``memvault.policy.secrets``): the CPU time it adds to a write.

Two inputs, as the server meets them:

- a memory: 200-character texts made of ``bench.synth`` sentences (what ``remember``
  checks on every write: content, key, tags, source), median over ``--memories`` texts;
- a document: a 100 kB Markdown file (``--doc``, default the repository's README and docs
  repeated to 100 kB), checked as ``index_docs`` does (``withhold_secrets``: the
  whole-file scan for key blocks, then every chunk's lines; one ``find_secret`` per
  chunk in versions without it); median over ``--repeat``.

Run: ``python -m bench.secrets_speed``. Prints one table; times are CPU-bound, so
compare runs made on the same machine with the same load.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from bench.synth import sentences

ROOT = Path(__file__).resolve().parent.parent


def memory_texts(n: int, chars: int = 200, seed: int = 7) -> list[str]:
    """``n`` texts of about ``chars`` characters, each a run of synthetic memory sentences."""
    pool = sentences(n * 6, seed=seed)
    out, i = [], 0
    while len(out) < n:
        text = ""
        while len(text) < chars:
            text += pool[i % len(pool)] + " "
            i += 1
        out.append(text[:chars])
    return out


def document(path: Path | None, chars: int = 100_000) -> str:
    """The text of ``path``, or of the README and docs, repeated to ``chars`` characters."""
    files = [path] if path else [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    base = "\n\n".join(p.read_text(encoding="utf-8") for p in files)
    return (base * (chars // len(base) + 1))[:chars]


def _doc_scan(text: str) -> float:
    """CPU seconds of the secret checks ``index_docs`` runs on one document (chunking excluded)."""
    from memvault.ingest.chunking import chunk_document
    from memvault.ingest.readers import Document
    from memvault.policy.secrets import find_secret

    doc = Document(text, None, "markdown")
    chunks = chunk_document(doc, "bench.md", count_tokens=lambda s: len(s) // 4 + 1, max_tokens=480)
    try:
        from memvault.service.documents.indexing import withhold_secrets
    except ImportError:  # before whole-file checks: one find_secret per chunk
        withhold_secrets = None
    t0 = time.process_time()
    if withhold_secrets is not None:
        withhold_secrets(text, chunks)
    else:
        for c in chunks:
            find_secret(c.text)
    return time.process_time() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="bench.secrets_speed", description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=500, help="memory texts to time (default 500)")
    ap.add_argument("--repeat", type=int, default=7, help="runs over the 100 kB document (default 7)")
    ap.add_argument("--doc", type=Path, default=None, help="a document to use instead of the README and docs")
    a = ap.parse_args(argv)

    from memvault.policy.secrets import find_secret

    texts = memory_texts(a.memories)
    find_secret(texts[0])  # warm-up (imports, first compilations)
    per = []
    for t in texts:
        t0 = time.process_time()
        find_secret(t)
        per.append(time.process_time() - t0)
    doc = document(a.doc)
    runs = [_doc_scan(doc) for _ in range(a.repeat)]
    out = sys.stdout
    out.write("| input | median CPU | p95 CPU |\n| --- | --- | --- |\n")
    p95 = sorted(per)[int(len(per) * 0.95)]
    out.write(f"| memory, 200 chars ({len(texts)} texts) | {statistics.median(per) * 1e6:.0f} µs | {p95 * 1e6:.0f} µs |\n")
    out.write(f"| document, {len(doc) // 1000} kB ({a.repeat} runs) | {statistics.median(runs) * 1e3:.1f} ms "
              f"| {max(runs) * 1e3:.1f} ms (max) |\n")


if __name__ == "__main__":
    main()
