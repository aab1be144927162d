"""Which memories of one scope restate each other (pure): the consolidation guard and clusters.

The write-time gate (:mod:`memvault.policy.dedup`) merges only what says the same thing
in the same words. Consolidation is the slower, reviewed pass over memories that say the
same thing in other words ("prefers pnpm" / "uses pnpm for every project"). Cosine cannot
decide it: measured on multilingual-e5-small (passage embeddings) over the labelled set
``tests/data/consolidation_set.jsonl``, restatement pairs score 0.887-0.997 and
distinct-but-similar pairs ("port 8080" / "port 8081", "深色" / "浅色", "uses Docker" /
"does not use Docker") 0.860-0.999. So a pair is merged only when it passes every test:

1. cosine at or above the band's floor (``MIN_COSINE``), which only
   keeps unrelated memories out of the word tests below;
2. no conflict of negation: both or neither say not / no / never / without / 不 / 没 ...
   ("dislikes" and "avoids" read as "does not like", "does not use");
3. subsumption of content: after folding (the dedup content words, stemmed, function
   words and a few generic words such as "user", "project", "always" left out, and words
   of one meaning class folded together: prefer / use / like / want ..., 喜欢 / 偏好 / 用
   ...), one memory's words are all among the other's. So every substitution is a
   conflict: 8080 / 8081, Go / Python, tabs / spaces, 15 / 16, Friday / Monday, Alice /
   Bob, 五 / 一; words are counted (三月三日 is not 三月四日), and a symbol the other lacks is a
   conflict too (C / C++). The kept memory is the one with the most words, which then
   holds every other member's content;
4. no change of tense of one same verb ("works at" / "worked at");
5. a comparison keeps its direction ("pytest over unittest" / "unittest over pytest");
6. at least ``MIN_SHARED`` folded words in common;
7. the same script: a Chinese memory and an English one are not merged (either would
   replace the other's language);
8. compatible kinds (``KIND_GROUPS``) and keys (at most one distinct key in a cluster);
9. the same meaning marks: quantities with their units in the case written, times of day,
   negation (:func:`memvault.policy.meaning.same_meaning`, the guard write-time dedup uses
   too): "5 ms" / "5 s", "100 Mb" / "100 MB", 上午十点 / 下午十点 stay apart even when one
   memory's words hold the other's.

Clusters are grown by complete linkage: a memory joins a cluster only when it passes
with every member, pairs taken by decreasing cosine. Linear in nothing: quadratic in
the number of memories given (the service gives candidates by nearest neighbours).
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import snowballstemmer

from memvault.policy.cjk import CJK_CLASS
from memvault.policy.dedup import content_words
from memvault.policy.language import CJK, script_class
from memvault.policy.meaning import Marks, marks, same_meaning

__all__ = ["KIND_GROUPS", "MIN_COSINE", "MIN_SHARED", "Folded", "fold", "restates", "compatible_kinds",
           "find_clusters", "most_specific"]

MIN_SHARED = 2
"""Folded words two memories must share at least (a class such as USE counts as one)."""
MIN_COSINE = 0.88
"""Floor of the cosine band in which ``consolidate`` compares memories: just under the lowest
restatement pair of ``tests/data/consolidation_set.jsonl`` (0.887, multilingual-e5-small)."""

KIND_GROUPS: tuple[frozenset[str], ...] = (
    frozenset({"preference", "fact", "decision", "note"}),
    frozenset({"procedure"}),
    frozenset({"episode"}),
)
"""Kinds that may be merged with each other. An episode is one event: two alike are two events."""

# Words that never carry a value here (after stemming): function words and generic subjects.
_STOP = frozenset("""
is are am be been being do does did doing of in on at by for as from into onto it its itself
this that these those there here where which who whom whose what when how he she his her him they them
their theirs we our us ours i me my mine you your yours will would should can could may might must shall
has have having had was were also just please really then so any some each very too same such while
user users team project projects codebase always every all everywhere currently now usually generally
default whole environment with them it's ' s done happen happens happened get gets got kept
""".split())
_NEGATIONS = frozenset("not no never without none nobody nothing neither nor cannot n't".split())
_CJK_NEGATIONS = frozenset("不没别勿无未非莫")
_BE = frozenset("is are be been being am get gets got".split())
# Meaning classes: every word of a class folds to the class name (counted once).
_CLASSES: dict[str, tuple[str, ...]] = {
    "≈use": ("use", "uses", "used", "using", "prefer", "prefers", "preferred", "like", "likes", "liked", "love",
             "loves", "favor", "favour", "favors", "favours", "choose", "chooses", "chose", "chosen", "pick",
             "picks", "switch", "switched", "switches", "want", "wants", "wanted", "wish", "opt", "opts", "adopt",
             "adopted", "employ", "write", "writes", "written", "wrote", "implement", "implemented", "build",
             "built", "builds", "develop", "developed", "run", "runs", "ran", "running", "host", "hosted",
             "hosts", "serve", "served", "serves", "listen", "listens", "listening", "rely", "relies", "moved", "move", "moves", "standardized", "standardised", "migrated", "migrate"),
    "≈live": ("live", "lives", "lived", "living", "based", "reside", "resides", "located", "stays"),
    "≈deploy": ("deploy", "deploys", "deployed", "deployment", "deployments", "release", "releases",
                "released", "ship", "ships", "shipped"),
    "≈keep": ("keep", "keeps", "store", "stores", "stored", "hold", "holds", "held", "live_in", "save", "saved",
              "saves"),
    "≈lead": ("lead", "leads", "led", "leader", "head", "heads", "manage", "manages", "managed", "manager",
              "run_by"),
    "≈track": ("track", "tracks", "tracked", "tracking", "manage_issues"),
    "≈cmp": ("over", "than", "instead", "rather", "versus", "vs", "to"),
}
# Whole words read as "not" + a class word: "dislikes" = "does not like".
_NEGATED = {w: "≈use" for w in ("dislike", "dislikes", "disliked", "hate", "hates", "avoid", "avoids",
                                "avoided")}
# Chinese words replaced by an English word of their class before the text is cut into characters
# (longest first); "" drops a word.
_CJK_WORDS: dict[str, str] = {
    "喜欢": "use", "偏好": "use", "偏爱": "use", "倾向": "use", "使用": "use", "采用": "use", "习惯": "use",
    "希望": "use", "想要": "use", "选择": "use", "监听": "use", "运行": "use", "跑在": "use", "写": "use",
    "开发": "use", "用": "use", "住在": "live", "居住": "live", "生活": "live", "住": "live",
    "发布": "deploy", "部署": "deploy", "上线": "deploy", "负责": "lead", "管理": "lead", "存放": "keep",
    "保存": "keep", "存储": "keep", "放在": "keep",
    "用户": "", "所有": "", "项目": "", "都": "", "总是": "", "一直": "", "的": "", "是": "", "在": "", "了": "",
    "把": "", "被": "", "由": "", "上": "", "团队": "", "我们": "", "做": "", "到": "", "里": "", "中": "",
    "一般": "", "通常": "", "默认": "", "每次": "",
}
_CJK_WORD_RE = re.compile("|".join(sorted(map(re.escape, _CJK_WORDS), key=len, reverse=True)))
_CJK_RE = re.compile(f"[{CJK_CLASS}]")
_WORD_FORMS = {w: c for c, words in _CLASSES.items() for w in words}
CMP = "≈cmp"
_stemmer = snowballstemmer.stemmer("english")
_stem_lock = threading.Lock()  # a Snowball stemmer keeps state while it works


def _stem(word: str) -> str:
    if not word.isascii() or not word.isalpha():
        return word
    with _stem_lock:
        return _stemmer.stemWord(word)


@dataclass(frozen=True)
class Folded:
    """What the guard compares of one text.

    words: folded content words with their counts (class names counted once); negated:
    whether the text says not / no / never ...; past: stems this text uses only in a past
    form (``-ed`` not after a form of *be*); present: stems it uses only in another form;
    before / after: folded words before and after its first comparison word (``≈cmp``),
    None when it has none; cjk: whether it is written in Chinese, Japanese or Korean
    (``policy.language.script_class``: an identifier-laden Chinese sentence is Chinese, an
    English one quoting a Chinese word is not); marks: its meaning
    marks (``meaning.marks``).
    """

    words: Counter[str]
    negated: bool
    past: frozenset[str]
    present: frozenset[str]
    before: frozenset[str] | None
    after: frozenset[str] | None
    cjk: bool = False
    marks: Marks | None = None

    @property
    def size(self) -> int:
        """Number of folded words (with repeats)."""
        return sum(self.words.values())


def _cjk_fold(text: str) -> str:
    """Chinese words of a class replaced by the class name (spaced), generic ones dropped."""
    if not _CJK_RE.search(text):
        return text
    return _CJK_WORD_RE.sub(lambda m: f" {_CJK_WORDS[m.group()]} " if _CJK_WORDS[m.group()] else " ", text)


def fold(text: str) -> Folded:
    """The :class:`Folded` form of ``text`` (see the module docstring). Linear in its length."""
    tokens = content_words(_cjk_fold(unicodedata.normalize("NFKC", text)))
    words: Counter[str] = Counter()
    negated = False
    forms: dict[str, set[bool]] = {}
    order: list[str] = []
    prev = ""
    for tok in tokens:
        low = tok.casefold()
        if low in _NEGATIONS or (len(low) == 1 and low in _CJK_NEGATIONS):
            negated = True
        elif low in _NEGATED:
            negated = True
            words[_NEGATED[low]] = 1
            order.append(_NEGATED[low])
        elif low in _WORD_FORMS:
            cls = _WORD_FORMS[low]
            if cls != CMP:  # a comparison word only splits the text (test 5)
                words[cls] = 1
            order.append(cls)
        elif low in _STOP:
            pass
        else:
            stem = _stem(low)
            if stem in _STOP:
                prev = low
                continue
            words[stem] += 1
            order.append(stem)
            if low.isascii() and low.isalpha():
                forms.setdefault(stem, set()).add(low.endswith("ed") and prev not in _BE)
        prev = low
    past = frozenset(s for s, f in forms.items() if f == {True})
    present = frozenset(s for s, f in forms.items() if f == {False})
    before = after = None
    if CMP in order:
        i = order.index(CMP)
        before, after = frozenset(order[:i]), frozenset(order[i + 1:])
    return Folded(words, negated, past, present, before, after, script_class(text) == CJK, marks(text))


def _symbolic(word: str) -> bool:
    return not any(ch.isalnum() for ch in word) and not word.startswith("≈")


def restates(a: Folded, b: Folded, cosine: float, min_cosine: float) -> bool:
    """Whether two memories say the same thing (tests 1-7 and 9 of the module docstring).

    ``cosine``: of their passage embeddings; ``min_cosine``: the band's floor. Symmetric.
    """
    if cosine < min_cosine or a.negated != b.negated or a.cjk != b.cjk:
        return False
    if a.marks is not None and b.marks is not None and not same_meaning(a.marks, b.marks):
        return False
    only_a, only_b = a.words - b.words, b.words - a.words
    if only_a and only_b:
        return False
    if any(_symbolic(w) for w in (*only_a, *only_b)):
        return False
    if sum((a.words & b.words).values()) < MIN_SHARED:
        return False
    if (a.past & b.present) or (b.past & a.present):
        return False
    if a.after is not None and b.after is not None and b.before is not None and a.before is not None:
        if (a.after & b.before) - {"≈use"} or (b.after & a.before) - {"≈use"}:
            return False
    return True


def compatible_kinds(a: str, b: str) -> bool:
    """Whether memories of kinds ``a`` and ``b`` may be merged (one group of ``KIND_GROUPS``)."""
    return a == b or any(a in g and b in g for g in KIND_GROUPS)


def most_specific(texts: Sequence[str], folded: Sequence[Folded]) -> int:
    """Index of the text to keep: the most folded words, then the longest, then the first."""
    return max(range(len(texts)), key=lambda i: (folded[i].size, len(texts[i]), -i))


def find_clusters(texts: Sequence[str], kinds: Sequence[str], keys: Sequence[str | None],
                  cosines: Mapping[tuple[int, int], float], min_cosine: float) -> list[list[int]]:
    """Clusters of memories that restate each other, as lists of indices (each sorted, size >= 2).

    ``texts``, ``kinds``, ``keys``: one per memory. ``cosines``: (i, j) -> cosine of
    memories i and j for the pairs worth looking at (e.g. every pair at or above the
    band's floor; a pair left out never merges). Complete linkage: every two members of
    a cluster pass :func:`restates` and have compatible kinds, and a cluster holds at most
    one distinct key. Clusters come largest first, then by first index.
    """
    folded = {i: fold(texts[i]) for pair in cosines for i in pair}
    ok: dict[tuple[int, int], float] = {}
    for (i, j), c in cosines.items():
        if i == j:
            continue
        pair = (min(i, j), max(i, j))
        if compatible_kinds(kinds[i], kinds[j]) and restates(folded[i], folded[j], float(c), min_cosine):
            ok[pair] = float(c)

    member: dict[int, int] = {}
    groups: dict[int, list[int]] = {}
    for i, j in sorted(ok, key=lambda p: (-ok[p], p)):
        gi, gj = member.get(i), member.get(j)
        if gi is not None and gi == gj:
            continue
        left = groups[gi] if gi is not None else [i]
        right = groups[gj] if gj is not None else [j]
        if not all((min(x, y), max(x, y)) in ok for x in left for y in right):
            continue
        if len({keys[x] for x in (*left, *right)} - {None}) > 1:
            continue
        merged = sorted({*left, *right})
        for g in (gi, gj):
            if g is not None:
                groups.pop(g, None)
        groups[merged[0]] = merged
        for x in merged:
            member[x] = merged[0]
    return sorted(groups.values(), key=lambda g: (-len(g), g[0]))
