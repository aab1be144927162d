"""The bilingual dictionary's cross-language keyword matches (``policy.dictionary``, CC-CEDICT)."""

from __future__ import annotations

from memvault.policy.dictionary import headwords, senses, translated_terms
from memvault.policy.keywords import keyword_term_set


def test_an_english_question_matches_a_chinese_memory_through_a_whole_sense():
    memory = "法定节假日前三天开始封版，这段时间只允许修紧急故障。"
    assert translated_terms("can we ship right before a public holiday?", memory) == {"public", "holiday"}
    # one word of a two-word sense is not a translation of it
    assert "public" not in translated_terms("which public API endpoints are versioned?", memory)


def test_a_chinese_question_matches_an_english_memory_with_the_characters_of_the_headword():
    got = translated_terms("数据库密码多久换一次？", "The database password rotates every 90 days.")
    assert {"数据", "据库", "密码"} <= got and got <= keyword_term_set("数据库密码多久换一次？")
    assert translated_terms("数据库密码多久换一次？", "Standup is at 10:00 every weekday.") == frozenset()


def test_a_compound_stands_for_itself_unless_two_words_remain():
    # "read-only" needs read-only: "read access" is not what 只读 says, and "read" alone is any reading
    assert senses("只读") == (frozenset({"read", "read-only"}),)
    assert translated_terms("is the replica read-only?", "生产数据库的只读账号找运维申请。") >= {"read", "read-only"}
    assert not translated_terms("how do I read the logs?", "生产数据库的只读账号找运维申请。")


def test_a_phrasal_verb_that_leaves_one_word_is_no_translation():
    # "log in" and "time off" would match any text holding "log" or "time"
    assert all(len(s) >= 2 or s in ({"login"}, {"signin"}) for s in senses("登录")), senses("登录")
    assert frozenset({"time"}) not in senses("请假") and frozenset({"time"}) not in senses("超时")


def test_single_characters_names_and_cross_references_are_not_translations():
    assert senses("的") == ()  # single characters are not kept
    assert senses("北京") == ()  # a proper name (capitalised pinyin)
    assert all(len(s) <= 3 for s in senses("开关"))  # explanations longer than three terms are left out
    assert senses("不存在的词语") == ()
    # a question word translates into a function phrase ("at what time"): its one content
    # word must not match every memory that says "time"
    assert senses("什么时候") == ()
    got = translated_terms("自评什么时候截止？", "Our 1:1 is at the same time every week.")
    assert not got & {"什", "什么", "么", "么时"}, got  # 时候 alone is "time", and may match


def test_headwords_lists_every_occurrence_with_its_offsets():
    text = "我们用 pnpm，数据库在本地"
    found = {(s, e, h) for s, e, h in headwords(text)}
    assert (9, 12, "数据库") in found and (13, 15, "本地") in found
    assert all(text[s:e] == h for s, e, h in found)


def test_one_language_pairs_match_nothing_new():
    assert translated_terms("how long is the payment timeout?", "The payment service times out after 15 s.") == frozenset()


def test_the_developer_glossary_adds_what_the_dictionary_lacks_or_glosses_otherwise():
    # 站会 is not in CC-CEDICT; 评审 is there as "to appraise / to judge"
    assert translated_terms("when is the daily standup?", "杭州这边每天上午九点半站会，十五分钟以内。") >= {"standup"}
    assert translated_terms("代码评审多久要回复？", "Code review comments get a first answer within a day.") >= {
        "评审", "评", "审"}
