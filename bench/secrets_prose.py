"""False alarms of the secret detector on prose with no secrets: the benchmark data's texts.

Protocol: every distinct string held under a ``text`` or ``content`` key of LoCoMo (dev),
LongMemEval_S (dev), the CMRC 2018 corpus and the SciFact corpus (conversations, answers
of assistants about code and routers, Wikipedia and paper abstracts) goes through
``find_secret``; every flag is a false alarm or a documented example credential. Prints
the count, the characters, the flags with their kind and the first 160 characters of
each, and the CPU seconds of the detector alone (``time.process_time``; the machine's
load changes it, so compare versions side by side).

    python -m bench.secrets_prose [--data DIR]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path
from typing import Any

from bench.common import data_dir


def texts(data: Path) -> list[str]:
    """The distinct ``text``/``content`` strings of the four data sets, sorted."""
    found: set[str] = set()

    def walk(x: Any) -> None:
        if isinstance(x, dict):
            for k, v in x.items():
                if k in ("text", "content") and isinstance(v, str):
                    found.add(v)
                else:
                    walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)

    walk(json.loads((data / "locomo_dev.json").read_text(encoding="utf-8")))
    with gzip.open(data / "longmemeval_s_dev.json.gz", "rt", encoding="utf-8") as f:
        walk(json.load(f))
    for name in ("cmrc2018_zh/corpus.jsonl", "scifact/corpus.jsonl"):
        with (data / name).open(encoding="utf-8") as f:
            for line in f:
                walk(json.loads(line))
    return sorted(found)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--data", help="benchmark data folder (default ../shared/bench)")
    args = p.parse_args()
    from memvault.policy.secrets import find_secret

    corpus = texts(data_dir(args.data))
    start = time.process_time()
    flagged = [(t, hit) for t in corpus if (hit := find_secret(t)) is not None]
    cpu = time.process_time() - start
    out = sys.stdout
    out.write(f"{len(corpus)} strings, {sum(map(len, corpus)):,} characters: {len(flagged)} flagged, "
              f"{cpu:.0f} s CPU\n")
    for text, hit in flagged:
        out.write(f"- {hit.kind}: {text[:160]!r}\n")


if __name__ == "__main__":
    main()
