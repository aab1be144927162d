"""Keyword-channel analysis: identifiers, file names, CJK bigrams, stable sparse ids."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import memvault.policy.keywords as kw
from memvault.policy.keywords import (
    AVG_CHUNK_TERMS,
    AVG_DOC_TERMS,
    BM25_B,
    BM25_K1,
    keyword_term_set,
    keyword_terms,
    sparse_from_terms,
    term_id,
)


def shared(a: str, b: str) -> set[str]:
    return set(keyword_terms(a)) & set(keyword_terms(b))


# --- identifiers and file names ------------------------------------------------------


def test_error_code_whole_and_parts() -> None:
    terms = keyword_terms("ERR_PNPM_OUTDATED_LOCKFILE")
    assert "err_pnpm_outdated_lockfile" in terms  # whole, unstemmed
    assert {"err", "pnpm"} <= set(terms)
    # parts are stemmed like prose, so prose finds them
    assert shared("ERR_PNPM_OUTDATED_LOCKFILE", "the lockfile is outdated") == {"lockfil", "outdat"}
    assert shared("ERR_PNPM_OUTDATED_LOCKFILE", "err_pnpm_outdated_lockfile") == set(terms)


def test_file_name() -> None:
    assert keyword_terms("package.json") == {"package.json": 1, "packag": 1, "json": 1}
    assert "package.json" in shared("edit package.json", "package.json was changed")


def test_camel_case() -> None:
    assert keyword_terms("useEffect") == {"useeffect": 1, "use": 1, "effect": 1}
    assert {"xmlhttprequest", "xml", "http", "request"} <= set(keyword_terms("XMLHttpRequest"))
    assert {"http2", "client", "get"} <= set(keyword_terms("getHTTP2Client"))


def test_paths_urls_and_dotted_names() -> None:
    terms = keyword_terms("src/memvault/policy/keywords.py")
    assert "src/memvault/policy/keywords.py" in terms
    assert {"src", "memvault", "polici", "keyword", "py"} <= set(terms)
    assert {"os.path.join", "os", "path", "join"} <= set(keyword_terms("os.path.join"))
    assert {"github", "repo"} <= set(keyword_terms("https://github.com/org/repo.git"))
    assert {"kebab-case-name", "kebab", "case", "name"} <= set(keyword_terms("kebab-case-name"))


def test_numbers_and_versions_kept_whole() -> None:
    terms = keyword_terms("upgrade to v1.2.3 on Python 3.11, port 5432")
    assert {"v1.2.3", "1.2.3", "3.11", "5432", "python"} <= set(terms)
    assert "1" not in terms and "2" not in terms
    assert "8.15.4" in shared("pnpm v8.15.4", "pnpm 8.15.4")


def test_stopwords_dropped_but_not_from_wholes() -> None:
    terms = keyword_terms("The user's lockfile is outdated, don't run it")
    assert not {"the", "is", "it", "don't", "dont", "s"} & set(terms)
    assert {"user", "lockfil", "outdat", "run"} <= set(terms)
    assert "the_end" in keyword_terms("the_end")


def test_stemming_matches_inflections() -> None:
    assert "prefer" in shared("User prefers dark themes", "preferred theme: dark")
    assert "theme" in shared("User prefers dark themes", "preferred theme: dark")


def test_language_names_with_symbols() -> None:
    assert {"c++", "c#"} <= set(keyword_terms("C++ and C# code"))


def test_full_width_and_case_folded() -> None:
    assert keyword_terms("Ｐｎｐｍ　ｖ８") == keyword_terms("pnpm v8")
    assert keyword_terms("PNPM") == keyword_terms("pnpm")


def test_counts_accumulate() -> None:
    assert keyword_terms("pnpm pnpm PNPM")["pnpm"] == 3


# --- CJK -----------------------------------------------------------------------------


def test_chinese_unigrams_and_bigrams() -> None:
    terms = keyword_terms("深色主题")
    assert set(terms) == {"深", "色", "主", "题", "深色", "色主", "主题"}


def test_chinese_sentence_shares_terms_with_its_words() -> None:
    doc = "用户喜欢深色主题"
    assert {"深色", "主题", "色主"} <= shared(doc, "深色主题")
    assert {"主题"} <= shared(doc, "主题")
    assert "深色" in shared(doc, "深色")
    assert not shared(doc, "数据库")


def test_mixed_chinese_and_code() -> None:
    terms = keyword_terms("我们用 React 的 useEffect 钩子，以后都用pnpm安装")
    assert {"react", "useeffect", "use", "effect", "pnpm", "钩子", "安装", "以后"} <= set(terms)
    # bigrams do not cross a Latin word
    assert "用p" not in terms and "m安" not in terms


def test_japanese_and_korean_runs() -> None:
    assert {"東京", "タワ", "ワー"} <= set(keyword_terms("東京タワー"))
    assert {"서울", "특별"} <= set(keyword_terms("서울특별시"))


def test_cjk_punctuation_splits_runs() -> None:
    terms = keyword_terms("深色。主题")
    assert "色主" not in terms and "深色" in terms and "主题" in terms


# --- empty ---------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "   ", "... !!! ---", "\u200b"])
def test_empty_text(text: str) -> None:
    assert keyword_terms(text) == {}
    assert sparse_from_terms(keyword_terms(text), query=False) == ([], [])
    assert sparse_from_terms(keyword_terms(text), query=True) == ([], [])


def test_very_long_token_not_kept_whole() -> None:
    blob = "ab_" * 100
    terms = keyword_terms(blob)
    assert blob.rstrip("_") not in terms
    assert "ab" in terms


# --- sparse vectors ------------------------------------------------------------------

EXPECTED_IDS = {  # computed once; must never change (stored vectors depend on them)
    "pnpm": 334056457,
    "深色": 2536384536,
    "主题": 213379811,
    "err_pnpm_outdated_lockfile": 1977377070,
    "package.json": 2705972873,
}


def test_term_ids_are_stable_literals() -> None:
    for term, tid in EXPECTED_IDS.items():
        assert term_id(term) == tid
        assert 0 <= tid < 2**32


@pytest.mark.slow  # a child interpreter
def test_term_ids_do_not_depend_on_python_hash_seed() -> None:
    code = (
        "from memvault.policy.keywords import term_id;print(','.join(str(term_id(t)) for t in ['pnpm','深色','主题']))"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(root)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "334056457,2536384536,213379811"


def test_query_weights_are_one_per_unique_term() -> None:
    idx, vals = sparse_from_terms({"pnpm": 3, "深色": 1}, query=True)
    assert idx == sorted([EXPECTED_IDS["pnpm"], EXPECTED_IDS["深色"]])
    assert vals == [1.0, 1.0]


def test_document_weights_are_bm25_tf_saturation() -> None:
    idx, vals = sparse_from_terms({"pnpm": 1}, query=False)
    dl = 1
    expected = 1 * (BM25_K1 + 1) / (1 + BM25_K1 * (1 - BM25_B + BM25_B * dl / AVG_DOC_TERMS))
    assert idx == [EXPECTED_IDS["pnpm"]]
    assert vals[0] == pytest.approx(expected)


def test_document_weights_saturate_and_normalise_length() -> None:
    one = sparse_from_terms({"pnpm": 1}, query=False)[1][0]
    three = sparse_from_terms({"pnpm": 3}, query=False)[1][0]
    assert one < three < BM25_K1 + 1  # grows with tf, bounded by k1 + 1
    long_doc = {"pnpm": 1, **{f"w{i}": 1 for i in range(50)}}
    ids, vals = sparse_from_terms(long_doc, query=False)
    in_long = vals[ids.index(EXPECTED_IDS["pnpm"])]
    assert in_long < one  # same tf weighs less in a longer document
    # at exactly the average length, tf=1 weighs 1.0
    avg_doc = {f"t{i}": 1 for i in range(int(AVG_DOC_TERMS))}
    assert all(math.isclose(v, 1.0) for v in sparse_from_terms(avg_doc, query=False)[1])


def test_chunks_are_normalised_against_chunk_length() -> None:
    chunk = {"pnpm": 1, **{f"w{i}": 1 for i in range(int(AVG_CHUNK_TERMS) - 1)}}
    ids, vals = sparse_from_terms(chunk, query=False, avgdl=AVG_CHUNK_TERMS)
    # a chunk of average chunk length: tf=1 weighs 1.0, as a memory of average length does
    assert len(vals) == int(AVG_CHUNK_TERMS) and all(math.isclose(v, 1.0) for v in vals)
    # against the memory average, the same chunk's terms would be crushed (~0.24)
    as_memory = sparse_from_terms(chunk, query=False)[1][ids.index(EXPECTED_IDS["pnpm"])]
    assert as_memory < 0.3
    assert AVG_CHUNK_TERMS > AVG_DOC_TERMS


def test_collisions_are_merged(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kw, "term_id", lambda term: 7)
    idx, vals = kw.sparse_from_terms({"a": 1, "b": 2}, query=False)
    assert idx == [7] and len(vals) == 1
    assert vals[0] == pytest.approx(3 * (BM25_K1 + 1) / (3 + BM25_K1 * (1 - BM25_B + BM25_B * 3 / AVG_DOC_TERMS)))
    assert kw.sparse_from_terms({"a": 1, "b": 2}, query=True) == ([7], [1.0])


def test_indices_sorted_unique_and_zero_counts_ignored() -> None:
    idx, vals = sparse_from_terms(keyword_terms("用户喜欢深色主题 and ERR_PNPM_OUTDATED_LOCKFILE"), query=False)
    assert idx == sorted(set(idx)) and len(idx) == len(vals)
    assert all(v > 0 for v in vals)
    assert sparse_from_terms({"x": 0, "y": -1}, query=False) == ([], [])


@pytest.mark.parametrize("text", ["The billing service uses Postgres 16", "计费服务用的是 Postgres 数据库",
                                  "ERR_CONN_RESET in src/net/retry.py", "", "!!!"])
def test_term_set_is_the_terms_distinct(text: str) -> None:
    assert keyword_term_set(text) == frozenset(keyword_terms(text))
    assert keyword_term_set(text) == frozenset(keyword_terms(text))  # the memoised answer too


def _uncached_terms(text: str) -> dict[str, int]:
    """The analysis without any memo: every chunk analysed afresh (the reference)."""
    import unicodedata
    from collections import Counter

    counts: Counter[str] = Counter()
    norm = unicodedata.normalize("NFKC", text).translate(kw._INVISIBLE).translate(kw._APOSTROPHES)
    for m in kw._TOKEN.finditer(norm):
        cjk = m.group("cjk")
        counts.update(kw._cjk_terms(cjk) if cjk is not None else kw._chunk_terms(m.group("chunk")))
    return dict(counts)


CHUNK_CASES = ["The billing service's config lives in Postgres 16; Bob's on-call.",
               "We're moving src/net/retryPolicy.ts to v1.2.3-beta.1 (see ERR_CONN_RESET)",
               "Ｆｕｌｌ－width ＡＢＣ and zero\u200bwidth, “curly” don’t it’s",
               "用户喜欢深色主题 but prefers pnpm over npm; 上周 deployed 3.11 at 12,000 rps",
               "https://example.com/a_b/c-d?x=1#frag user@example.com c++ c# f# ~/.bashrc",
               "a " * 50 + "x" * 300 + " useEffect useEffect useEffect",
               # no CJK character (the chunks-only paths): ASCII, and other scripts and forms
               "plain ascii: it's v2.0.1-rc.1 on node_18, ERR_X at 09:30 -- don't @me #42 a/b\\c ~x+y",
               "Café naïve résumé Straße ΑΘΗΝΑ Москва déjà-vu l'été ﬁle ①②",
               "Ｆｕｌｌ－ｗｉｄｔｈ ＮＯ ＣＪＫ, soft\u00adhyphen, bom\ufeffhere, joiner\u2060x, it\u2019s",
               "ascii then 中 one CJK character at the end: 中"]


@pytest.mark.parametrize("text", CHUNK_CASES)
def test_memoised_chunks_give_the_same_terms_and_counts(text: str) -> None:
    # Twice: the second analysis is answered from the chunk memo, and must not differ.
    for _ in range(2):
        assert keyword_terms(text) == _uncached_terms(text)
        assert keyword_term_set(text + " ") == frozenset(_uncached_terms(text + " "))


def test_any_mix_of_scripts_gives_the_terms_of_the_reference() -> None:
    # ASCII text and text without CJK take shorter paths (no NFKC, no look-ahead for CJK):
    # random texts over every kind of character they could differ on give the same terms.
    import random

    rng = random.Random(5)
    alphabet = ("abcXYZ019 _.-/\\:@+#~'\n\t,;!?\"" + "éßΑжﬁ①Ｆｗ－" + "\u200b\u00ad\ufeff\u2019\u2018\u02bc"
                + "中文の한。")
    for n in range(800):
        pool = alphabet[:-5] if n % 3 else alphabet  # two in three texts hold no CJK character
        text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 40)))
        assert keyword_terms(text) == _uncached_terms(text), text
        assert keyword_term_set(text) == frozenset(_uncached_terms(text)), text


def test_a_new_text_of_known_words_is_analysed_from_the_chunk_memo() -> None:
    # Recall analyses the text of up to 100 keyword hits it has not seen before: words it
    # has seen (in other texts) are not analysed again.
    keyword_terms("Grace prefers Terraform over Helm for the invoice exporter.")
    before = kw._cached_chunk_terms.cache_info()
    keyword_term_set("Grace prefers Helm over Terraform for the invoice qwzxvbnmexporter")
    after = kw._cached_chunk_terms.cache_info()
    assert (after.hits - before.hits, after.misses - before.misses) == (8, 1)  # only the last word is new
