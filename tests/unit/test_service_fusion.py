"""Fusion of the two channels' candidates (``service.fusion.score_candidates``): a pure function
of the channels' scores and the candidates' texts."""

from __future__ import annotations

from memvault.config import RankingSettings
from memvault.service.fusion import Channels, score_candidates


def test_a_borrowed_word_does_not_give_an_english_memory_full_keyword_credit() -> None:
    """A Chinese question carrying one English word ("DAG"): the English memory holding it is
    judged on that word alone, in proportion to its share of the question, so the Chinese
    memory that answers (same word plus the question's Chinese terms) ranks first at the same
    cosine."""
    texts = {"zh": "数据管道里的 DAG 都由周航评审。", "en": "Zhou Hang is strict in DAG reviews."}
    ch = Channels(query="DAG 谁来评审？", dense={"en": 0.85, "zh": 0.85}, keyword={"en": 3.0, "zh": 5.0},
                  query_dots={})
    scored = score_candidates(ch, texts, RankingSettings())
    assert list(scored) == ["zh", "en"], {i: round(s.score, 4) for i, s in scored.items()}
