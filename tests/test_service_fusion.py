"""Fusion of the two channels' candidates (``service.fusion.score_candidates``): a pure function
of the channels' scores and the candidates' texts."""

from __future__ import annotations

from memvault.config import RankingSettings
from memvault.service.fusion import Channels, score_candidates


def test_rrf_ranks_the_keyword_channel_by_its_own_scores() -> None:
    """With RRF, a memory the keyword channel ranks first counts as first there, whatever
    its dense rank: the keyword order is the keyword scores', not the candidates' order."""
    texts = {"a": "deploy notes for the staging cluster", "b": "the database backup runs at 3am",
             "c": "lunch on fridays"}
    ch = Channels(query="when does the database backup run", dense={"a": 0.82, "c": 0.81, "b": 0.80},
                  keyword={"c": 0.5, "b": 9.0}, query_dots={})
    r = RankingSettings(fusion="rrf", weight_dense=1.0, weight_keyword=1.0)
    scored = score_candidates(ch, texts, r)
    best = max(scored, key=lambda i: scored[i].score)
    assert best == "b", {i: round(s.score, 4) for i, s in scored.items()}
    assert scored["c"].score < scored["b"].score
