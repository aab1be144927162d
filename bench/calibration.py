"""Fitting calibrated relevance (``policy.fusion.calibrated_relevance``) on captured questions.

Rows: the 10 best-ranked candidates of every question (what a reply could show), each
with the features recall computes (``service.search.fusion_inputs``): the gap of its
language-corrected cosine over the query's background (``policy.fusion.dense_background``),
its keyword coverage over the query terms it can be judged by, and the share of the query
it cannot be judged by; label 1 when it answers the question. A logistic regression by
Newton's method fits the four parameters. The fit uses the realistic developer-memory set
``dev`` and the first half of the bilingual probe's facts (both languages, same-language
and cross-lingual); the ``guard`` set and the probe's other half are held out, and the
AUC of the first result's relevance (answerable vs not stored, per question language) is
reported on them.

Run: ``python -m bench.calibration --capture-dir DIR`` with the captures of
``python -m bench.fusion_compare --capture-dir DIR --sets bilingual devmem-dev devmem-guard``.
"""

from __future__ import annotations

import argparse
import pickle
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np

TOP = 10
PROBE_TRAIN_FACTS = 50  # probe facts 0..49 train; 50..99 and the unstored ones are held out


def _is_answer(q: Any) -> Callable[[str], bool]:
    """Whether a candidate id answers ``q`` (a devmem or bilingual probe Question)."""
    if q.set == "bilingual":
        return lambda i: i == q.gold["target"]
    gold = set(q.gold["gold"])
    return lambda i: bool(gold & set(q.expand.get(i, [])))


Row = tuple[float, float, float, float, int, int]


def rows(qs: Iterable[Any], top: int = TOP) -> list[Row]:
    """(gap, coverage, unjudged share, share of it translated, the query names something no
    candidate holds (0 / 1), is an answer) of the ``top`` best candidates of each question."""
    from bench.fusion_compare import DEFAULT, VARIANTS, order_memories, text_positions
    from bench.ranking import Ranking
    from memvault.policy.fusion import dense_background
    from memvault.service.search import fusion_inputs

    r = Ranking()
    out = []
    for q in qs:
        f = fusion_inputs(q.channels, q.texts, text_positions(q.channels, q.texts))
        background = dense_background(f.dense.values(), f.query_script)
        answer = _is_answer(q)
        for i in order_memories(q, VARIANTS[DEFAULT], r)[:top]:
            if i in f.dense:
                out.append((f.dense[i] - background, f.coverage.get(i, 0.0), f.unjudged.get(i, 0.0),
                            f.translated.get(i, 0.0), int(f.unseen_name), int(answer(i))))
    return out


def fit_logistic(x: list[tuple[float, ...]], y: list[int], iters: int = 50, l2: float = 1e-3) -> list[float]:
    """[bias, weight of each feature] of a logistic regression by Newton's method (small L2)."""
    xa = np.column_stack([np.ones(len(x)), np.asarray(x, dtype=float)])
    ya = np.asarray(y, dtype=float)
    w = np.zeros(xa.shape[1])
    for _ in range(iters):
        p = 1.0 / (1.0 + np.exp(-(xa @ w)))
        grad = xa.T @ (p - ya) + l2 * w
        hess = (xa * (p * (1 - p))[:, None]).T @ xa + l2 * np.eye(xa.shape[1])
        w -= np.linalg.solve(hess, grad)
    return [float(v) for v in w]


class _Captures(pickle.Unpickler):
    """Captures pickled by ``python -m bench.fusion_compare`` name its Question class ``__main__``;
    those made before the channels moved to ``service.search`` name ``service.fusion``."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "__main__":
            module = "bench.fusion_compare"
        elif module == "memvault.service.fusion":
            module = "memvault.service.search"
        return super().find_class(module, name)


def load_captures(path: Path) -> list[Any]:
    """The captured questions in ``path`` (a ``fusion_compare`` capture file)."""
    with path.open("rb") as f:
        return _Captures(f).load()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.calibration", description=__doc__.splitlines()[0])
    p.add_argument("--capture-dir", type=Path, required=True)
    args = p.parse_args(argv)
    caps = {s: load_captures(args.capture_dir / f"{s}.pkl") for s in ("bilingual", "devmem-dev")}
    train = [*caps["devmem-dev"], *[q for q in caps["bilingual"] if q.gold["fact"] < PROBE_TRAIN_FACTS]]
    data = rows(train)
    # the features calibrated_relevance reads: gap, judged share x coverage, unjudged share,
    # unjudged share x its translated share, a name no candidate holds; all six refitted, for reference
    w = fit_logistic([(g, (1.0 - u) * c, u, u * t, n) for g, c, u, t, n, _ in data], [d[5] for d in data])
    print(f"{len(data)} rows ({sum(d[5] for d in data)} answers) from {len(train)} questions")
    print(f"all refitted: bias {w[0]:.2f}, gap {w[1]:.2f}, coverage {w[2]:.2f}, cross-script {w[3]:.2f}, "
          f"translated {w[4]:.2f}, unseen name {w[5]:.2f}")
    print(f"RELEVANCE_TRANSLATED = {fit_translated(data):.1f} (the other four held)")
    # a property of the question, not of a candidate: fitted on what abstention reads, each
    # question's first result (on the top 10 the rows of answerable questions swamp it)
    print(f"RELEVANCE_UNSEEN_NAME = {fit_unseen_name(rows(train, top=1)):.1f} (the other five held, first results)")


def _grid_fit(held: list[tuple[float, float, int]], grid: Iterable[float]) -> float:
    """The weight of ``grid`` of least negative log-likelihood for rows ``(fixed log-odds,
    feature, label)``: log-odds ``fixed + weight * feature``."""

    def nll(weight: float) -> float:
        total = 0.0
        for base, x, y in held:
            z = base + weight * x
            p = 1.0 / (1.0 + np.exp(-np.clip(z, -50.0, 50.0)))
            total -= float(np.log(p + 1e-12) if y else np.log(1.0 - p + 1e-12))
        return total

    return min(grid, key=nll)


def fit_translated(data: list[Row], step: float = 0.5, top: float = 30.0) -> float:
    """The ``RELEVANCE_TRANSLATED`` of least negative log-likelihood on ``data`` (``rows``), the
    other parameters held at their shipped values; a grid of ``step`` from 0 to ``top``."""
    from memvault.policy.fusion import relevance_logit

    held = [(relevance_logit(g, c, u), u * t, y) for g, c, u, t, _, y in data]  # the part that does not move
    return _grid_fit(held, (step * n for n in range(int(top / step) + 1)))


def fit_unseen_name(data: list[Row], step: float = 0.5, bottom: float = -20.0) -> float:
    """The ``RELEVANCE_UNSEEN_NAME`` of least negative log-likelihood on ``data`` (``rows``), the
    other five parameters held at their shipped values; a grid of ``step`` from ``bottom`` to 0."""
    from memvault.policy.fusion import RELEVANCE_TRANSLATED, relevance_logit

    held = [(relevance_logit(g, c, u) + RELEVANCE_TRANSLATED * u * t, float(n), y) for g, c, u, t, n, y in data]
    return _grid_fit(held, (-step * n for n in range(int(-bottom / step) + 1)))

if __name__ == "__main__":
    main()
