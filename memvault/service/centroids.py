"""Each language's mean passage embedding, for language-neutral dense scores.

``language_centroids(embedder)`` embeds a small shipped parallel set (the same 40
everyday and work sentences in English and in Chinese, written for memvault) as passages
and returns the mean vector of each script class of ``memvault.policy.language``. The
sets say the same things, so the two means differ by language, not by topic. Computed
once per model (about 80 short passages, half a second of CPU on a quiet 2-core machine),
kept on the embedder object and, given a file, in that file for the next start. Used by ``memvault.policy.fusion.language_shift``.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import weakref
from pathlib import Path

import numpy as np

from memvault.policy.language import CJK, OTHER

__all__ = ["PARALLEL_SENTENCES", "language_centroids", "language_positions", "language_neutral_query"]

log = logging.getLogger(__name__)

PARALLEL_SENTENCES: tuple[tuple[str, str], ...] = (
    ('I usually walk to work when the weather is good.',
     '天气好的时候我一般走路去上班。'),
    ('The meeting was postponed until next week.',
     '会议推迟到了下周。'),
    ('She bought a new pair of running shoes yesterday.',
     '她昨天买了一双新跑鞋。'),
    ('Please send me the slides before Friday.',
     '请在周五之前把幻灯片发给我。'),
    ('The server crashed twice last night because the disk was full.',
     '昨晚服务器因为磁盘满了崩溃了两次。'),
    ('We are planning a trip to the mountains in July.',
     '我们打算七月去山里旅行。'),
    ('My brother works as a nurse at the city hospital.',
     '我哥哥在市医院当护士。'),
    ('The new version fixes the login bug on Android.',
     '新版本修复了安卓上的登录问题。'),
    ('He likes to read history books before going to sleep.',
     '他喜欢睡前读历史书。'),
    ('The children are learning to swim this summer.',
     '孩子们今年夏天在学游泳。'),
    ('Remember to water the flowers on the balcony.',
     '记得给阳台上的花浇水。'),
    ('The report shows that sales grew by ten percent.',
     '报告显示销售额增长了百分之十。'),
    ('Our team will hire two more engineers next quarter.',
     '我们团队下个季度还要招两名工程师。'),
    ('The restaurant around the corner serves excellent noodles.',
     '拐角那家餐馆的面条非常好吃。'),
    ('I forgot my umbrella at the train station.',
     '我把伞忘在火车站了。'),
    ('The documentation explains how to configure the proxy.',
     '文档说明了如何配置代理。'),
    ('My parents moved to a smaller house near the sea.',
     '我父母搬到了海边一栋小一点的房子。'),
    ('The test suite takes about five minutes to finish.',
     '测试套件大约五分钟跑完。'),
    ('She prefers tea without sugar in the afternoon.',
     '她下午喝茶不喜欢加糖。'),
    ('The library is closed on public holidays.',
     '图书馆在公共假期闭馆。'),
    ('We need to update the dependencies before the release.',
     '发布之前我们需要更新依赖。'),
    ('The cat sleeps on the sofa most of the day.',
     '猫一天大部分时间都在沙发上睡觉。'),
    ('He has been learning the guitar for three years.',
     '他学吉他已经三年了。'),
    ('The contract must be signed by both parties.',
     '合同必须由双方签字。'),
    ('It rained heavily during the whole weekend.',
     '整个周末都在下大雨。'),
    ('The password reset link expires after one hour.',
     '重置密码的链接一小时后失效。'),
    ('My friend recommended a good dentist downtown.',
     '我朋友推荐了市中心一位不错的牙医。'),
    ('The project deadline is the end of this month.',
     '项目截止日期是这个月底。'),
    ('They celebrated their anniversary at a small hotel by the lake.',
     '他们在湖边的一家小酒店庆祝了结婚纪念日。'),
    ('The application stores its settings in a JSON file.',
     '应用程序把设置保存在一个 JSON 文件里。'),
    ('I am trying to eat more vegetables and less meat.',
     '我在努力多吃蔬菜少吃肉。'),
    ('The bus was late again this morning.',
     '今天早上公交车又晚点了。'),
    ('Our office has a small garden on the roof.',
     '我们办公室的屋顶上有个小花园。'),
    ('The price of electricity went up in winter.',
     '冬天电价涨了。'),
    ("She is writing a novel about her grandfather's life.",
     '她正在写一部关于她祖父一生的小说。'),
    ('The database query became slow after the data grew.',
     '数据量增长以后数据库查询变慢了。'),
    ('We adopted a puppy from the animal shelter.',
     '我们从动物收容所领养了一只小狗。'),
    ('The museum offers free entry on Sunday mornings.',
     '博物馆周日上午免费参观。'),
    ('He always double checks the code before merging it.',
     '他合并代码之前总是再检查一遍。'),
    ('The weather forecast says it will snow tomorrow.',
     '天气预报说明天会下雪。'),
)
"""(English, Chinese) pairs saying the same thing."""

_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_lock = threading.Lock()


LANGUAGE_NEUTRAL = True
"""Whether dense scores have each language's mean embedding removed, so that a query in one
language finds memories in another (docs/benchmarks.md: "no language correction" costs the
bilingual probe zh->en R@1 0.87 -> 0.49)."""

PROBE_TOLERANCE = 1e-4
"""Largest difference, per component, between the probe vector kept with saved centroids and
the loaded model's: above it the model is not the one that computed them (they are recomputed)."""


def language_centroids(embedder, saved: Path | None = None) -> dict[str, np.ndarray]:
    """``{"other": mean English passage vector, "cjk": mean Chinese one}``, float32 (dim,)
    each (not normalised), for ``embedder`` (a ``memvault.embedding.embedder.Embedder``;
    anything with ``embed_passages`` and ``model_id``). Cached per embedder object;
    thread-safe: computed once, a second caller waits for the first (the runtime prepares
    them right after the model loads, so that the first recall does not).

    ``saved``: a JSON file that keeps them between processes (the runtime's is in the data
    dir). They are read from it when it holds the same ``model_id`` and the vector of the
    first parallel sentence that it also holds matches the loaded model's (one embedding
    instead of 80: a converted model that changed is noticed); otherwise computed and the
    file written anew (atomically; a failure to write is logged, never raised). Blocking:
    call it from a worker thread."""
    with _lock:
        got = _cache.get(embedder)
        if got is not None:
            return got
        got = _read(saved, embedder) if saved is not None else None
        if got is None:
            en = embedder.embed_passages([p[0] for p in PARALLEL_SENTENCES])
            zh = embedder.embed_passages([p[1] for p in PARALLEL_SENTENCES])
            got = {OTHER: np.asarray(en, dtype=np.float32).mean(axis=0),
                   CJK: np.asarray(zh, dtype=np.float32).mean(axis=0)}
            if saved is not None:
                _write(saved, embedder, got, _probe(embedder))
        _cache[embedder] = got
    return got


def _language_axis(centroids: dict[str, np.ndarray]) -> tuple[np.ndarray, float, float] | None:
    """``(axis, lo, hi)``: the Chinese centroid minus the English one, and each centroid's
    projection on it; None when either is missing or they coincide."""
    if CJK not in centroids or OTHER not in centroids:
        return None
    axis = centroids[CJK] - centroids[OTHER]
    lo, hi = float(np.dot(centroids[OTHER], axis)), float(np.dot(centroids[CJK], axis))
    return None if hi - lo <= 1e-9 else (axis, lo, hi)


def language_positions(vectors: dict[str, list[float]], centroids: dict[str, np.ndarray]) -> dict[str, float]:
    """Where the model places each passage between the two languages: 0.0 at the mean English
    passage of the parallel sentences, 1.0 at the mean Chinese one, by the projection of its
    vector on the line between the two centroids (``{id: vector}`` -> ``{id: position}``,
    not clipped; empty when either centroid is missing).

    Why: a Chinese sentence that carries English identifiers and words (``Git 默认 rebase 不
    merge：git config pull.rebase true``) counts more English words than CJK units, yet
    e5 embeds it beside Chinese text, not English; correcting its score as English text lifts
    it above every Chinese answer. Since each centroid is the mean of its language's
    normalised vectors, the centroid's own projection is its language's mean projection.
    """
    line = _language_axis(centroids)
    if line is None or not vectors:
        return {}
    axis, lo, hi = line
    ids = list(vectors)
    mat = np.asarray([vectors[i] for i in ids], dtype=np.float32)
    proj = (mat @ axis - lo) / (hi - lo)
    return {i: float(x) for i, x in zip(ids, proj, strict=True)}


def language_neutral_query(query: np.ndarray, centroids: dict[str, np.ndarray]) -> np.ndarray | None:
    """A query vector whose dot product with a passage ranks passages as if language did not
    count: ``q - (q . axis) / (hi - lo) * axis`` with ``axis`` the Chinese centroid minus the
    English one and ``lo`` / ``hi`` their projections on it (see :func:`language_positions`).

    Why: the dense channel's first search ranks by raw cosine, and e5 scores any passage in
    the query's language above any in the other (the language part of a cosine is about
    ``position * (q . c_cjk) + (1 - position) * (q . c_other)``); in a store holding more
    memories in the query's language than the channel returns, a memory in the other
    language never becomes a candidate, however well it answers. Subtracting that part,
    linear in the passage's position, is a dot product with this vector. None when either
    centroid is missing."""
    line = _language_axis(centroids)
    if line is None:
        return None
    axis, lo, hi = line
    q = np.asarray(query, dtype=np.float32)
    return q - (float(np.dot(q, axis)) / (hi - lo)) * axis


def _probe(embedder) -> np.ndarray:
    """The vector of the first parallel sentence embedded alone (as ``_read`` compares it)."""
    return np.asarray(embedder.embed_passages([PARALLEL_SENTENCES[0][0]])[0], dtype=np.float32)


def _read(path: Path, embedder) -> dict[str, np.ndarray] | None:
    """The centroids kept in ``path`` when they belong to ``embedder``'s model, else None."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if data.get("model_id") != embedder.model_id:
            return None
        probe = np.asarray(data["probe"], dtype=np.float32)
        now = _probe(embedder)
        if probe.shape != now.shape or float(np.max(np.abs(probe - now))) > PROBE_TOLERANCE:
            return None
        got = {lang: np.asarray(data["centroids"][lang], dtype=np.float32) for lang in (OTHER, CJK)}
        if any(v.shape != now.shape or not np.all(np.isfinite(v)) for v in got.values()):
            return None
        return got
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        log.info("language centroids in %s not used (%s); computing them", path, exc)
        return None


def _write(path: Path, embedder, got: dict[str, np.ndarray], probe: np.ndarray) -> None:
    data = {"model_id": embedder.model_id, "probe": probe.tolist(),
            "centroids": {lang: v.tolist() for lang, v in got.items()}}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # private, as the data dir's files
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(json.dumps(data))
        os.replace(tmp, path)
    except OSError as exc:
        log.warning("could not keep the language centroids in %s (%s); they are computed at each start", path, exc)
        tmp.unlink(missing_ok=True)
