"""How far re-weighting recall's own signals can go: a learned fusion, cross-validated.

Every hand-built shape of the fusion tried so far (CHANGELOG.md) moved the developer-memory sets
along one line: what it gained on cross-lingual questions it gave up on same-language ones, and
the reverse. This bench asks whether that trade is in the formula or in the signals. For each
captured question (``bench.fusion_compare``'s captures: the candidates and their channel
scores as recall saw them) every candidate gets the parts recall's fusion combines and a few it
does not (:data:`FEATURES`), and a linear scorer over them is fitted by maximising the listwise
softmax likelihood of the question's gold candidates (ListNet with one relevant set: Cao et al.,
"Learning to Rank: From Pairwise Approach to Listwise Approach", ICML 2007), by Newton's method
with a small L2 penalty (:func:`fit`). The learned score replaces the fused score; everything
after it is recall's (conversation neighbours, time expressions, importance and recency:
``fusion_compare.order_and_scores``), calibrated relevance included.

Protocol: the ``dev`` developer-memory set in 5 folds (seeded shuffle of its questions): each
fold scored with the scorer fitted on the other four, plus LoCoMo's questions of
``--locomo-train`` (chat lines want more keyword weight than developer memories: without them
the scorer costs LoCoMo); LoCoMo's other conversations and the bilingual probe scored with the
scorer fitted on all of them (neither trains it); ``--held-out``: the ``guard`` and
``holdout`` sets too (look once, after the choice: they decide nothing here). Beside each set,
the share of questions whose gold either channel alone ranks first (:func:`either_channel_first`).
``--same-weight`` weighs the same-language questions of ``dev`` that much more in the fit (the
held-back goals ask same-language R@1 and cross-lingual R@5). Captures are ``fusion_compare``'s (made there
when missing). Figures beside the shipped ranking, plain dense and BM25 per slice.

Run: ``python -m bench.fusion_fit --capture-dir /tmp/fc [--held-out] [--same-weight 3]``.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import numpy as np

from bench.common import DEFAULT_MODEL_CACHE, md_table, write_result
from bench.ranking import Ranking

FEATURES = ("D", "Kj", "UDB", "UT", "Dconf", "Draw", "rD", "rK")
"""Per candidate, with ``D`` the dense part and ``K`` the keyword part of
``policy.fusion.normalised_parts``, ``U`` its unjudged share, ``B`` the stand-in's credit
(``policy.fusion.stand_in_credit``) and ``T`` its dictionary matches:
``D``; ``Kj`` = (1 - U) K, the keyword evidence it is judged by; ``UDB`` = U D B, the stand-in;
``UT`` = U T; ``Dconf`` = D x 10 (best corrected cosine - ``dense_background``): how far the
dense channel's best stands out for this query; ``Draw``: the uncorrected cosine min-max
scaled; ``rD`` / ``rK``: 1 / (1 + rank) in each channel (0 when missing)."""
DEFAULT_FEATURES = ("D", "Kj", "UDB", "UT", "Dconf")
FOLDS = 5
L2 = 1e-3


def features(q: Any) -> tuple[list[str], np.ndarray, Any]:
    """``(ids, X, fusion inputs)`` of a captured question: its candidates in
    ``normalised_parts`` order and their :data:`FEATURES` rows (``X``: len(ids) x len(FEATURES))."""
    from bench.fusion_compare import text_positions
    from memvault.policy.fusion import dense_background, normalised_parts, stand_in_credit
    from memvault.service.search import fusion_inputs

    ch, texts = q.channels, q.texts
    fi = fusion_inputs(ch, texts, text_positions(ch, texts))
    parts = normalised_parts(fi.dense, fi.keyword, fi.coverage)
    ids = list(parts)
    if not ids:
        return ids, np.zeros((0, len(FEATURES))), fi
    credit = stand_in_credit(parts, fi.unjudged)
    conf = 10.0 * (max(fi.dense.values()) - dense_background(fi.dense.values(), fi.query_script)) if fi.dense else 0.0
    raw = {i: ch.dense[i] for i in ids if i in ch.dense}
    lo, hi = min(raw.values(), default=0.0), max(raw.values(), default=0.0)
    d_rank = {i: n for n, i in enumerate(sorted(fi.dense, key=lambda i: -fi.dense[i]))}
    k_rank = {i: n for n, i in enumerate(sorted(fi.keyword, key=lambda i: -fi.keyword[i]))}
    rows = []
    for i in ids:
        d, k = parts[i]
        u = fi.unjudged.get(i, 0.0)
        rows.append((d, (1.0 - u) * k, u * d * credit, u * fi.translated.get(i, 0.0), d * conf,
                     (raw[i] - lo) / (hi - lo) if i in raw and hi > lo else 0.0,
                     1.0 / (1 + d_rank[i]) if i in d_rank else 0.0, 1.0 / (1 + k_rank[i]) if i in k_rank else 0.0))
    return ids, np.asarray(rows, dtype=np.float64), fi


Row = tuple[np.ndarray, np.ndarray, float]  # (X of one question, gold mask, weight)


def objective(rows: Sequence[Row], w: np.ndarray, l2: float = L2) -> tuple[float, np.ndarray, np.ndarray]:
    """Weighted mean of ``-log sum_{gold} softmax(X w)`` over ``rows`` plus ``l2 / 2 |w|^2``, with
    its gradient and Hessian (the covariance of the features under the softmax minus that under
    the softmax restricted to the gold candidates)."""
    loss, grad, hess, total = 0.0, np.zeros_like(w), np.zeros((len(w), len(w))), 0.0
    for x, gold, weight in rows:
        z = x @ w
        p = np.exp(z - z.max())
        p /= p.sum()
        p_gold = p[gold].sum()
        q = p[gold] / p_gold
        m_all, m_gold = p @ x, q @ x[gold]
        loss -= weight * np.log(p_gold)
        grad += weight * (m_all - m_gold)
        hess += weight * ((x.T * p) @ x - np.outer(m_all, m_all) - ((x[gold].T * q) @ x[gold] - np.outer(m_gold, m_gold)))
        total += weight
    total = total or 1.0
    return (loss / total + 0.5 * l2 * float(w @ w), grad / total + l2 * w, hess / total + l2 * np.eye(len(w)))


def fit(rows: Sequence[Row], n_features: int, l2: float = L2, steps: int = 50) -> np.ndarray:
    """The weights minimising :func:`objective`: Newton steps, halved until the loss falls (a
    gradient step when the Newton direction does not descend). Rows without a gold candidate
    must be left out by the caller."""
    w = np.zeros(n_features)
    loss, grad, hess = objective(rows, w, l2)
    for _ in range(steps):
        step = np.linalg.solve(hess, grad)
        if step @ grad <= 0:
            step = grad
        t = 1.0
        while t > 1e-4:
            new = w - t * step
            new_loss, new_grad, new_hess = objective(rows, new, l2)
            if new_loss < loss:
                break
            t /= 2
        else:
            break
        done = loss - new_loss < 1e-8
        w, loss, grad, hess = new, new_loss, new_grad, new_hess
        if done:
            break
    return w


def gold_mask(q: Any, ids: Sequence[str]) -> np.ndarray:
    """Which candidates answer ``q``: their items (``q.expand``) meet its gold (a developer-memory
    question's ``gold``, a LoCoMo question's ``evidence``)."""
    gold = set(q.gold.get("gold") or q.gold.get("evidence") or [])
    return np.array([bool(gold & set(q.expand.get(i, []))) for i in ids], dtype=bool)


def same_language(q: Any) -> bool:
    """Whether a developer-memory question's gold is in its own language."""
    return bool({"en->en", "zh->zh", "zh->zh+id"} & set(q.gold.get("slices", [])))


class Scorer:
    """A ``fusion_compare`` variant ordering by the learned score: ``weights_for(q)`` gives the
    weights to score a question with (a fold's, or one set for every question). The score is
    ``X w / (w_D + w_Kj)`` (near recall's [0, 1] scale, so importance and recency weigh as they
    do in recall)."""

    def __init__(self, names: Sequence[str], weights_for: Callable[[Any], np.ndarray]):
        self.cols = [FEATURES.index(n) for n in names]
        self.scale = [names.index("D"), names.index("Kj")]
        self.weights_for = weights_for
        self.ranking_over = {"neighbour_lift": 0.7}

    def __call__(self, ch: Any, texts: Any, r: Any, q: Any) -> dict[str, Any]:
        from memvault.service.search import scored

        ids, x, fi = features(q)
        w = self.weights_for(q)
        s = x[:, self.cols] @ w / max(float(w[self.scale].sum()), 1e-9)
        fused = {ids[n]: float(s[n]) for n in np.argsort(-s, kind="stable")}
        return scored(fi, fused, ch)


def training_row(q: Any, names: Sequence[str], same_weight: float = 1.0) -> Row | None:
    """The :data:`Row` of ``q`` over the features ``names``; None when no candidate answers it."""
    ids, x, _ = features(q)
    gold = gold_mask(q, ids)
    if not gold.any():
        return None
    return x[:, [FEATURES.index(n) for n in names]], gold, same_weight if same_language(q) else 1.0


def training_rows(qs: Sequence[Any], names: Sequence[str], same_weight: float = 1.0) -> list[Row]:
    """:data:`Row` of every question of ``qs`` that has a gold candidate among its candidates."""
    return [row for q in qs if (row := training_row(q, names, same_weight)) is not None]


def folds_of(n: int, k: int = FOLDS, seed: int = 1) -> list[int]:
    """Fold number of each of ``n`` questions: a seeded shuffle dealt round-robin."""
    order = list(range(n))
    random.Random(seed).shuffle(order)
    fold = [0] * n
    for pos, i in enumerate(order):
        fold[i] = pos % k
    return fold


def either_channel_first(qs: Sequence[Any]) -> dict[str, float]:
    """Per slice, the share of answerable questions that plain dense or BM25 (``bench.devmemory``'s
    baselines) ranks a gold memory first: what a fusion that only chooses between its two
    channels, question by question and knowing the answer, would get at R@1."""
    hits: dict[str, list[bool]] = {}
    for q in qs:
        gold = set(q.gold.get("gold") or [])
        if gold:
            first = q.gold["dense"][:1] + q.gold["bm25"][:1]
            for sl in q.gold["slices"]:
                hits.setdefault(sl, []).append(bool(gold & set(first)))
    return {sl: round(sum(h) / len(h), 3) for sl, h in hits.items()}


def slice_table(name: str, learned: dict[str, Any], shipped: dict[str, Any], either: dict[str, float]) -> str:
    """Per slice R@1 / R@5: learned, shipped, plain dense, BM25 (``bench.devmemory.score`` results),
    and :func:`either_channel_first`."""
    rows = []
    for sl, t in learned["slices"].items():
        s = shipped["slices"][sl]
        rows.append([sl, t["memvault"]["n"], *[f"{x['R@1']:.3f} / {x['R@5']:.3f}" for x in
                                                 (t["memvault"], s["memvault"], s["dense"], s["bm25"])], either[sl]])
    auc = {lang: (a["AUC"], shipped["abstention"][lang]["AUC"]) for lang, a in learned["abstention"].items()}
    return (f"### {name}\n\n" + md_table(["slice", "n", "learned", "shipped", "plain dense", "BM25",
                                           "either channel first (R@1)"], rows)
            + "\n\nAUC first relevance (learned / shipped): " + ", ".join(f"{k} {a} / {b}" for k, (a, b) in auc.items()))


async def run(args: argparse.Namespace) -> dict[str, Any]:
    from bench import devmemory
    from bench.fusion_compare import DEFAULT, VARIANTS, capture, score_bilingual, score_locomo

    t0 = time.perf_counter()
    names = tuple(args.features)
    held = ["devmem-guard", "devmem-holdout"] if args.held_out else []
    args.sets = ["devmem-dev", "locomo", "bilingual", *held]
    caps = await capture(args)
    dev, locomo = caps["devmem-dev"], caps["locomo"]
    train_locomo = [q for q in locomo if q.gold["sample"] in args.locomo_train]
    test_locomo = [q for q in locomo if q.gold["sample"] not in args.locomo_train]
    locomo_rows = training_rows(train_locomo, names)
    fold = folds_of(len(dev))
    fold_of = {id(q): f for q, f in zip(dev, fold, strict=True)}
    dev_rows = [(f, row) for q, f in zip(dev, fold, strict=True)
                if (row := training_row(q, names, args.same_weight)) is not None]  # each question's features once
    per_fold = [fit([row for f, row in dev_rows if f != k] + locomo_rows, len(names)) for k in range(FOLDS)]
    whole = fit([row for _, row in dev_rows] + locomo_rows, len(names))
    r = Ranking(neighbour_lift=0.0)
    shipped = VARIANTS[DEFAULT]
    cv = Scorer(names, lambda q: per_fold[fold_of[id(q)]])
    learned = Scorer(names, lambda q: whole)
    res: dict[str, Any] = {"weights": dict(zip(names, map(float, whole), strict=True))}
    out = [f"weights (fitted on all of dev and LoCoMo {' '.join(args.locomo_train)}): "
           + ", ".join(f"{n} {w:.2f}" for n, w in res["weights"].items())]
    res["dev (5-fold)"] = (devmemory.score(dev, cv, r), devmemory.score(dev, shipped, r), either_channel_first(dev))
    out.append(slice_table("dev, each fold scored by the scorer fitted on the others", *res["dev (5-fold)"]))
    for name in held:
        res[name] = (devmemory.score(caps[name], learned, r), devmemory.score(caps[name], shipped, r),
                     either_channel_first(caps[name]))
        out.append(slice_table(name, *res[name]))
    res["locomo (other conversations)"] = {k: score_locomo(test_locomo, v, r)["all"]
                                           for k, v in (("learned", learned), ("shipped", shipped))}
    res["probe"] = {k: score_bilingual(caps["bilingual"], v, r) for k, v in (("learned", learned), ("shipped", shipped))}
    out.append(md_table(["", "LoCoMo other conversations R@1 / R@5 / R@10", "probe R@1 en->zh / zh->en / en->en / zh->zh"],
                        [[k, "{R@1:.3f} / {R@5:.3f} / {R@10:.3f}".format(**res["locomo (other conversations)"][k]),
                          " / ".join(f"{res['probe'][k][d]['R@1']:.2f}" for d in ("en->zh", "zh->en", "en->en", "zh->zh"))]
                         for k in ("learned", "shipped")]))
    payload = {"protocol": __doc__.strip(), "features": names, "same_weight": args.same_weight,
               "locomo_train": args.locomo_train, "results": res, "loadavg": os.getloadavg(),
               "elapsed_s": round(time.perf_counter() - t0, 1)}
    path = write_result("fusion_fit", payload)
    print("\n\n".join(out))
    print(f"\n{payload['elapsed_s']} s, load {payload['loadavg']}. JSON: {path}")
    return payload


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m bench.fusion_fit", description=__doc__.splitlines()[0])
    p.add_argument("--capture-dir", type=Path, required=True, help="fusion_compare's captures (made when missing)")
    p.add_argument("--data", help="benchmark data folder (default ../shared/bench)")
    p.add_argument("--model-cache", type=Path, default=DEFAULT_MODEL_CACHE)
    p.add_argument("--features", nargs="+", default=list(DEFAULT_FEATURES), choices=FEATURES)
    p.add_argument("--same-weight", type=float, default=1.0, help="weight of dev's same-language questions in the fit")
    p.add_argument("--locomo-train", nargs="*", default=["conv-26", "conv-41", "conv-44"],
                   help="LoCoMo conversations whose questions train the scorer (the others are scored)")
    p.add_argument("--held-out", action="store_true", help="score the guard and holdout sets too")
    args = p.parse_args(argv)
    if not {"D", "Kj"} <= set(args.features):
        p.error("--features must include D and Kj (the learned score is scaled by their weights)")
    args.locomo, args.lme, args.slice = [], 16, "100:400"
    anyio.run(run, args)


if __name__ == "__main__":
    main()
