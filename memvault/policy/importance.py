"""Heuristic importance of a memory when the caller gives none.

Pure function; English and Chinese. The score is a sum of small, explained terms:

* kind prior: preference 0.45, decision 0.45, procedure 0.42, fact 0.42, episode 0.35,
  note 0.30 — what a kind is usually worth keeping;
* a ``key`` (a stable profile slot such as ``pref.package_manager``): +0.15;
* memory cues ("remember", "always", "never", "prefer", "don't", "must", "from now on",
  "we decided", 记住, 以后, 偏好, 总是, 不要, 必须, 决定 …): +0.12, +0.04 per further
  cue, at most +0.20;
* specificity (identifiers, numbers, paths/URLs/file names, proper nouns and acronyms,
  quoted or back-ticked text, Latin names inside Chinese text): up to +0.20;
* length in word units (a Latin word = 1; CJK counted by characters, 2 characters = 1
  unit since a Chinese word is about two characters): < 2 units -0.20, < 3 units -0.05,
  3..150 units +0.10, 150..400 +0.05, longer 0.

Then the result is clamped to [0, 1]. Greetings and thanks, chit-chat and bare
questions are capped (0.15 and 0.20) whatever the kind, key or cues would give, so that
the default threshold (0.3, ``Settings.policies.importance_threshold``) declines them.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass, field

from memvault.policy.cjk import CJK_CHAR as _CJK

__all__ = ["ImportanceScore", "KIND_PRIORS", "score_importance"]

KIND_PRIORS: dict[str, float] = {
    "preference": 0.45,
    "decision": 0.45,
    "procedure": 0.42,
    "fact": 0.42,
    "episode": 0.35,
    "note": 0.30,
}

KEY_BONUS = 0.15
CUE_FIRST, CUE_MORE, CUE_MAX = 0.12, 0.04, 0.20
SPECIFICITY_MAX = 0.20
CHITCHAT_CAP = 0.15
QUESTION_CAP = 0.20


@dataclass(frozen=True)
class ImportanceScore:
    """``value`` in [0, 1]; ``reasons``: short English phrases saying what moved it."""

    value: float
    reasons: list[str] = field(default_factory=list)


# --- lexicons ---------------------------------------------------------------------

_LATIN_WORD = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?|\d+", re.UNICODE)

# English cue patterns (casefolded text). Each is a reason on its own.
_EN_CUES: list[tuple[str, re.Pattern[str]]] = [
    (name, re.compile(pat))
    for name, pat in [
        ("remember", r"\bremember\b|\bdon'?t forget\b|\bkeep in mind\b|\bnote that\b"),
        ("always", r"\balways\b"),
        ("never", r"\bnever\b"),
        ("prefer", r"\bprefer(?:s|red|ence|ences)?\b|\brather than\b|\binstead of\b"),
        ("likes", r"\b(?:like|likes|love|loves|hate|hates|dislike|dislikes|enjoy|enjoys)\b"),
        ("don't", r"\b(?:don'?t|do not|doesn'?t|does not|avoid)\b"),
        ("must", r"\b(?:must|mustn'?t|required?|requires|make sure|ensure)\b"),
        ("from now on", r"\bfrom now on\b|\bgoing forward\b|\bin (?:the )?future\b|\bby default\b"),
        ("decided", r"\b(?:decided?|decision|chose|chosen|we picked|agreed to|settled on|switched to)\b"),
        ("important", r"\b(?:important|critical|crucial|essential)\b"),
        ("use", r"^\s*(?:use|run|call|put|keep|store|set)\b"),
    ]
]

_ZH_CUES: list[tuple[str, re.Pattern[str]]] = [
    (name, re.compile(pat))
    for name, pat in [
        ("记住", r"记住|记得|别忘|牢记|注意"),
        ("以后", r"以后|今后|从现在起|往后|将来|默认"),
        ("偏好", r"偏好|喜欢|更喜欢|爱用|习惯|讨厌|不喜欢"),
        ("总是", r"总是|一直|永远|每次|始终"),
        ("不要", r"不要|别用|别再|不能|禁止|从不|不许|避免"),
        ("必须", r"必须|务必|一定要|需要|得用"),
        ("决定", r"决定|选择了|选用|采用|改用|定了|确定用"),
        ("重要", r"重要|关键"),
    ]
]

# Whole messages made only of these words are chit-chat (greetings, thanks, assent).
_CHITCHAT_WORDS = frozenset(
    """
    hi hello hey heya hiya yo sup howdy greetings morning evening afternoon night good
    gm gn bye goodbye cya later see you soon take care cheers thanks thank thx ty tysm
    much so very lot a again all everyone there guys folks ok okay k kk oki okie yes
    yeah yep yup ya sure no nope nah fine cool great nice awesome perfect excellent
    wonderful amazing lovely neat sweet wow lol lmao rofl haha hahaha hehe heh hmm
    hmmm um uh oh ah aha alright right true indeed agreed exactly absolutely sounds
    sound seems looks good well done got it i see makes sense np problem worries
    welcome please pls plz appreciated appreciate you're it's that's this is that what
    the and too me we us you your just mind never guess think works work fine know
    don't dont idea not sure maybe whatever anyway anyways hm interesting noted copy
    roger understood gotcha thumbs up yay hooray congrats congratulations happy
    today tomorrow tonight for with on it's how's going doing help let lemme check wait
    moment sec second hold one set deal fair enough gonna brb ttyl omg idk nvm ikr tbh
    ha hah xd dope yikes oops sorry my bad love hug hugs byebye ciao later for now
    """.split()
)

_ZH_CHITCHAT = sorted(
    """
    你好 您好 大家好 早上好 上午好 中午好 下午好 晚上好 早安 午安 晚安 嗨 哈喽 哈罗 在吗 在不在
    谢谢你 谢谢您 谢谢 多谢 感谢 辛苦了 辛苦 麻烦你了 麻烦了 不客气 不用谢 没事 没关系 没问题
    好的 好吧 好啊 好呀 好嘞 好滴 好 行吧 行 可以 可以的 嗯嗯 嗯 哦哦 哦 噢 啊 呀 吧 呢 啦 嘛 哈哈哈 哈哈 呵呵 嘿嘿
    收到 明白了 明白 知道了 了解 懂了 对的 对 是的 是 不错 很好 太好了 棒 厉害 牛 赞 再见 拜拜 回头见
    让我想想 我想想 想想 等一下 稍等 等等 早 晚 好久不见 抱歉 不好意思 对不起
    我 你 了 的 一下 非常 真的 太
    """.split(),
    key=len,
    reverse=True,
)

_EN_QUESTION_START = re.compile(
    r"^(?:what|why|how|when|where|who|whom|whose|which|is|are|am|was|were|do|does|did|"
    r"can|could|should|would|will|shall|may|might|have|has|had|any|anyone)\b"
)
_ZH_QUESTION_WORDS = re.compile(
    r"怎么办|怎么|怎样|为什么|为啥|什么|如何|哪里|哪儿|哪个|哪些|几点|多少|是否|是不是|能不能|可不可以|有没有"
)
_ZH_QUESTION_END = re.compile(r"(?:吗|呢|么|嘛)\s*[。.!！~～]*\s*$")

# Specificity signals.
_IDENTIFIER = re.compile(
    r"\b[A-Za-z][A-Za-z0-9]*(?:[_\-][A-Za-z0-9]+)+\b"  # snake_case, kebab-case, ERR_X_Y
    r"|\b[a-z]+[A-Z][A-Za-z0-9]*\b"  # camelCase
    r"|\b[A-Za-z_][\w]*\.[A-Za-z_][\w.]*\b"  # dotted names, file names
    r"|\b[A-Za-z]+\d[A-Za-z0-9]*\b"  # py311, e5, v8 (one \d: \d+ before [A-Za-z0-9]* was quadratic)
)
_PATH_URL = re.compile(
    r"(?:https?|ftp|ssh|git)://\S+|(?:^|[\s(])(?:~|\.{1,2})?/[\w.\-]+/?\S*|\b\w+\.(?:py|js|ts|tsx|jsx|json|toml|ya?ml|md|rs|go|java|rb|sh|sql|txt|cfg|ini|lock|env)\b"
)
_NUMBER = re.compile(r"\d")
_QUOTED = re.compile(r"`[^`]+`|\"[^\"]{2,}\"|“[^”]{2,}”|「[^」]+」|『[^』]+』")
_WORD_WITH_CASE = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_LATIN_IN_CJK = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]+")

_SENTENCE_END = re.compile(r"[.!?。！？]+\s*")
_PUNCT_OR_SYMBOL = re.compile(r"[^\w\s']+", re.UNICODE)


def _norm(text: str) -> str:
    return unicodedata.normalize("NFKC", text).replace("’", "'").strip()


def _units(text: str) -> tuple[float, int, int]:
    """(length units, Latin word count, CJK character count)."""
    cjk = len(_CJK.findall(text))
    latin = len(_LATIN_WORD.findall(_CJK.sub(" ", text)))
    return latin + cjk / 2.0, latin, cjk


def _cues(low: str) -> list[str]:
    found = [name for name, pat in _EN_CUES if pat.search(low)]
    found += [name for name, pat in _ZH_CUES if pat.search(low)]
    return found


def _is_chitchat(low: str) -> bool:
    """True if the message is only greetings/thanks/assent/laughter (EN and ZH)."""
    rest = _PUNCT_OR_SYMBOL.sub(" ", low)
    for phrase in _ZH_CHITCHAT:
        rest = rest.replace(phrase, " ")
    words = rest.split()
    if not words:
        # Nothing but chit-chat phrases, emoji or punctuation.
        return True
    if _CJK.search(rest):
        return False
    return all(w in _CHITCHAT_WORDS for w in words)


def _is_bare_question(text: str, low: str, units: float, has_cjk: bool) -> bool:
    """A question (and only questions): ends with ?/？, a Chinese question particle,
    or, when short, opens with an interrogative."""
    body = low.strip()
    sentences = [s for s in _SENTENCE_END.split(body) if s.strip()]
    stripped = body.rstrip()
    if stripped.endswith(("?", "？")):
        # Statements before the question ("We use Postgres 15. Why is CI slow?") make it
        # more than a bare question.
        inner = _SENTENCE_END.findall(body)
        return all(("?" in p or "？" in p) for p in inner)
    if len(sentences) > 1 or ":" in body or "：" in body:
        return False
    if has_cjk:
        return bool(_ZH_QUESTION_END.search(body)) or (units <= 5 and bool(_ZH_QUESTION_WORDS.search(body)))
    return units <= 8 and bool(_EN_QUESTION_START.match(body))


def _proper_nouns(text: str) -> set[str]:
    """Capitalised words that do not open a sentence (Postgres, Alice) and acronyms (AWS)."""
    found: set[str] = set()
    for sentence in _SENTENCE_END.split(text):
        for i, w in enumerate(_WORD_WITH_CASE.findall(sentence)):
            if w in {"I", "OK", "Ok"}:
                continue
            if len(w) >= 2 and w.isupper():
                found.add(w)
            elif i > 0 and w[0].isupper():
                found.add(w)
    return found


def _specificity(text: str, has_cjk: bool) -> tuple[float, list[str]]:
    score = 0.0
    found: list[str] = []
    idents = set(_IDENTIFIER.findall(text))
    if idents:
        score += min(0.12, 0.06 * len(idents))
        found.append("identifiers")
    if _PATH_URL.search(text):
        score += 0.06
        found.append("path/URL/file")
    if _NUMBER.search(text):
        score += 0.04
        found.append("numbers")
    proper = _proper_nouns(text)
    if proper:
        score += min(0.08, 0.04 * len(proper))
        found.append("names")
    if _QUOTED.search(text):
        score += 0.04
        found.append("quoted text")
    if has_cjk and _LATIN_IN_CJK.search(_CJK.sub(" ", text)):
        score += 0.04
        found.append("Latin names in CJK text")
    return min(SPECIFICITY_MAX, score), found


def score_importance(content: str, kind: str, key: str | None = None) -> ImportanceScore:
    """Heuristic importance of a memory in [0, 1] with the reasons for it.

    ``content``: the memory text (any language; English and Chinese cues are known).
    ``kind``: one of :data:`KIND_PRIORS` (``memvault.vocabulary.KINDS``). ``key``: the
    optional profile slot; a non-blank key raises the score. See the module docstring
    for the terms. Greetings/chit-chat are capped at 0.15 and bare questions at 0.20,
    below the default threshold 0.3. Raises ValueError for an unknown ``kind``.
    """
    if kind not in KIND_PRIORS:
        raise ValueError(f"unknown memory kind {kind!r}; expected one of {', '.join(KIND_PRIORS)}")
    text = _norm(content)
    if not text:
        return ImportanceScore(0.0, ["empty content"])
    low = text.casefold()
    units, _latin, cjk = _units(text)
    has_cjk = cjk > 0

    prior = KIND_PRIORS[kind]
    value = prior
    reasons = [f"kind {kind}: {prior:.2f}"]

    if key and key.strip():
        value += KEY_BONUS
        reasons.append(f"has key: +{KEY_BONUS:.2f}")

    cues = _cues(low)
    if cues:
        bonus = min(CUE_MAX, CUE_FIRST + CUE_MORE * (len(cues) - 1))
        value += bonus
        reasons.append(f"cues ({', '.join(cues)}): +{bonus:.2f}")

    spec, spec_found = _specificity(text, has_cjk)
    if spec:
        value += spec
        reasons.append(f"specific ({', '.join(spec_found)}): +{spec:.2f}")

    if units < 2:
        length_adj, what = -0.20, "very short"
    elif units < 3:
        length_adj, what = -0.05, "short"
    elif units <= 150:  # 3..150
        length_adj, what = 0.10, "mid length"
    elif units <= 400:
        length_adj, what = 0.05, "long"
    else:
        length_adj, what = 0.0, "very long"
    value += length_adj
    reasons.append(f"{what} ({units:g} word units): {length_adj:+.2f}")

    if _is_chitchat(low):
        if value > CHITCHAT_CAP:
            value = CHITCHAT_CAP
        reasons.append(f"greeting/chit-chat: capped at {CHITCHAT_CAP:.2f}")
    elif not cues and _is_bare_question(text, low, units, has_cjk):
        if value > QUESTION_CAP:
            value = QUESTION_CAP
        reasons.append(f"a bare question, not a memory: capped at {QUESTION_CAP:.2f}")

    value = round(min(1.0, max(0.0, value)), 4)
    return ImportanceScore(value, reasons)
