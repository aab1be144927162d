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


def test_a_question_naming_what_no_candidate_holds_is_less_likely_answered() -> None:
    """The kind: a question about a thing the store never mentions (``Kubernetes`` here), whose
    best memory is close in topic. The same best memory reads as less likely the answer than
    when another memory of the store (a keyword hit only, so the dense background is the same)
    does mention the thing."""
    texts = {"deploy": "shop-api 生产部署在 AWS eu-west-1 的 ECS Fargate 上，用 terraform apply 发布。",
             "kafka": "shop-pipeline 的 Kafka broker 在 localhost:29092，容器里是 kafka:9092。",
             "k8s": "Kubernetes 的 namespace 按团队分。"}
    query = "生产环境的 Kubernetes 是哪个版本？"
    dense = {"deploy": 0.86, "kafka": 0.80}
    without = score_candidates(Channels(query=query, dense=dense, keyword={"deploy": 2.0}, query_dots={}),
                               {i: t for i, t in texts.items() if i != "k8s"})
    with_it = score_candidates(Channels(query=query, dense=dense, keyword={"deploy": 2.0, "k8s": 3.0},
                                        query_dots={}), texts)
    assert without["deploy"].relevance < with_it["deploy"].relevance


def test_unseen_name_reads_names_whole_or_by_all_their_parts() -> None:
    from memvault.policy.keywords import keyword_term_set
    from memvault.service.search import unseen_name

    def unseen(query: str, *texts: str) -> bool:
        q = keyword_term_set(query)
        return unseen_name(query, q, frozenset().union(*(q & keyword_term_set(t) for t in texts)))

    assert unseen("SHOP-5000 这个错误是怎么回事？", "Error SHOP-4091 came from retries.")  # "shop" alone is not the name
    assert not unseen("SHOP-4091 这个错误是怎么回事？", "Error SHOP-4091 came from retries.")
    assert not unseen("Kubernetes 集群在哪？", "我们的 kubernetes 集群在 eu-west-1。")  # case and stem
    assert not unseen("shop-web 的埋点用什么？", "The web shop tracks events with PostHog.")  # all its parts
    assert unseen("发票 PDF 用什么字体？", "发票模板在 templates/invoice.html。")
    assert not unseen("周五可以发布吗？", "周五不上线。")  # names nothing


def test_a_candidate_only_the_dense_channel_found_is_analysed_only_when_its_terms_judge_it(monkeypatch) -> None:
    """The keyword analysis of a candidate's text is for its coverage (keyword hits) and for
    which query terms judge it: a dense-only candidate in a script every query term judges
    (an English memory, an English question) is not analysed; one in the other script is."""
    import memvault.service.search as search
    from memvault.policy.keywords import keyword_term_set

    analysed: list[str] = []

    def recorded(text: str) -> frozenset[str]:
        analysed.append(text)
        return keyword_term_set(text)

    monkeypatch.setattr(search, "keyword_term_set", recorded)
    texts = {"hit": "The order service retries five times.", "en": "The cat is named Miso.",
             "zh": "订单服务的重试次数是五次。"}
    ch = Channels(query="how often does the order service retry?", dense={"en": 0.8, "zh": 0.79, "hit": 0.7},
                  keyword={"hit": 4.0}, query_dots={})
    score_candidates(ch, texts)
    assert set(analysed) == {ch.query, texts["hit"], texts["zh"]}


def test_a_name_only_a_dense_only_candidate_holds_is_seen() -> None:
    """A candidate only the dense channel found, in the query's script, is not analysed for
    its coverage; before the query is doubted for naming an unseen thing, such candidates
    are looked at too: the name is held, so relevance is that of a store that mentions it."""
    texts = {"hit": "Deploys go out with terraform apply from the release branch.",
             "slo": "The p95 latency SLO of the checkout API is 300 ms."}
    query = "what is the SLO for p95 latency?"
    only_dense = score_candidates(Channels(query=query, dense={"hit": 0.86, "slo": 0.84}, keyword={"hit": 2.0},
                                           query_dots={}), texts)
    analysed = score_candidates(Channels(query=query, dense={"hit": 0.86, "slo": 0.84},
                                         keyword={"hit": 2.0, "slo": 1e-9}, query_dots={}), texts)
    assert only_dense["hit"].relevance == analysed["hit"].relevance
