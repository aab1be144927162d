"""Fusion of the two channels' candidates (``service.search.score_candidates``): a pure function
of the channels' scores and the candidates' texts."""

from __future__ import annotations

from memvault.service.search import Channels, score_candidates


def test_a_borrowed_word_does_not_give_an_english_memory_full_keyword_credit() -> None:
    """A Chinese question carrying one English word ("DAG"): the English memory holding it is
    judged on that word alone, in proportion to its share of the question, so the Chinese
    memory that answers (same word plus the question's Chinese terms) ranks first at the same
    cosine."""
    # (the English memory says nothing the dictionary links to 评审, "review": only DAG is shared)
    texts = {"zh": "数据管道里的 DAG 都由周航评审。", "en": "Zhou Hang is strict about DAG naming."}
    ch = Channels(query="DAG 谁来评审？", dense={"en": 0.85, "zh": 0.85}, keyword={"en": 3.0, "zh": 5.0},
                  query_dots={})
    scored = score_candidates(ch, texts)
    assert list(scored) == ["zh", "en"], {i: round(s.score, 4) for i, s in scored.items()}


def test_language_of_is_the_policy_s_script_and_cjk_weight() -> None:
    """``language_of`` skips the word count of texts without CJK characters: its answer must
    stay the policy's for every kind of text (it fails if the policy's rule for such texts moves)."""
    import pytest

    from memvault.policy.language import cjk_weight, script_class
    from memvault.service.search import language_of

    texts = ["The billing service uses Postgres 16.", "", "!!! 42", "ERR_CONN_RESET src/net/retry.py",
             "Café naïve résumé Straße ΑΘΗΝΑ Москва", "Ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ", "计费服务用的是 Postgres 数据库",
             "用 terraform apply 发布", "the cat is named 小米", "word " * 300 + "中文在一千个字符之后",
             "한국어 문장입니다", "日本語の文です"]
    for t in texts:
        assert language_of(t) == pytest.approx((script_class(t), cjk_weight(t)), abs=0), t


def test_candidates_are_judged_as_the_policy_judges_their_whole_term_sets() -> None:
    """``fusion_inputs`` judges a candidate by the query terms it holds (candidates alike share
    one answer): coverage and the unjudged share must be the policy's over the whole texts."""
    from memvault.policy.fusion import keyword_coverage
    from memvault.policy.keywords import keyword_term_set
    from memvault.policy.language import judged_terms, script_class, terms_weight
    from memvault.service.search import fusion_inputs

    texts = {"a": "The order-svc retry limit is ORDER_RETRY_MAX = 5.", "b": "order-svc 的重试次数由 ORDER_RETRY_MAX 控制",
             "c": "重试次数 is set per service.", "d": "The cat is named Miso.", "e": "猫的名字叫小米。",
             "f": "Retry the deploy of order-svc after the DAG review.", "g": "The order service retries five times."}
    for query in ("order-svc 的重试次数是多少？", "what is the retry limit of order-svc?", "ORDER_RETRY_MAX", "重试"):
        ch = Channels(query=query, dense={i: 0.8 - 0.01 * n for n, i in enumerate(texts)},
                      keyword={i: 1.0 + n for n, i in enumerate(texts) if n % 2 == 0}, query_dots={})
        f = fusion_inputs(ch, texts)
        qterms = keyword_term_set(query)
        assert set(f.unjudged) == set(texts) and set(f.coverage) == set(ch.keyword)
        for i, text in texts.items():
            dterms = keyword_term_set(text)
            judged = judged_terms(qterms, dterms, script_class(text))
            assert f.unjudged[i] == 1.0 - terms_weight(judged) / terms_weight(qterms), (query, i)
            if i in ch.keyword:
                assert f.coverage[i] == keyword_coverage(judged, dterms), (query, i)
