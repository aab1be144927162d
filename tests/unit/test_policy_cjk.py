"""The one CJK character class (memvault.policy.cjk) and that nobody keeps a copy of it."""

from __future__ import annotations

import re
import unicodedata
from itertools import pairwise
from pathlib import Path

import pytest

import memvault
from memvault.policy.cjk import CJK_BLOCKS, CJK_CHAR, CJK_CLASS, CJK_RUN, is_cjk


def test_blocks_are_ordered_and_disjoint() -> None:
    ends = [(ord(first), ord(last)) for first, last, _ in CJK_BLOCKS]
    assert all(lo <= hi for lo, hi in ends)
    assert all(prev_hi < lo for (_, prev_hi), (lo, _) in pairwise(ends)), "ranges overlap or are unordered"


@pytest.mark.parametrize("first,last,block", CJK_BLOCKS, ids=[b for _, _, b in CJK_BLOCKS])
def test_both_ends_of_every_range_are_cjk(first: str, last: str, block: str) -> None:
    assert is_cjk(first) and is_cjk(last), block


@pytest.mark.parametrize("ch", ["中", "龥", "㐀", "𠀀", "𫝀", "豈", "々", "〇", "あ", "ゟ", "カ", "ー", "ㇰ", "ｶ",
                                "ㄅ", "ㆠ", "한", "ᄀ", "ㄱ", "ꥠ", "ힰ", "ﾡ", "𛀁"])
def test_letters_of_han_kana_bopomofo_and_hangul_are_cjk(ch: str) -> None:
    assert is_cjk(ch), f"{ch!r} ({unicodedata.name(ch, '?')}) should be CJK"


@pytest.mark.parametrize("ch", ["a", "Z", "7", "é", "ж", "ع", "、", "。", "「", "」", "，", "！", "Ａ", "１", "　",
                                "⺀", "⼀", "㈠", "㌀", "䷀", "😀", " "])
def test_punctuation_symbols_and_other_scripts_are_not(ch: str) -> None:
    assert not is_cjk(ch), f"{ch!r} ({unicodedata.name(ch, '?')}) should not be CJK"


def test_runs_and_the_class_inside_other_patterns() -> None:
    text = "用 pnpm 安装パッケージ、한국어 OK"
    assert CJK_RUN.findall(text) == ["用", "安装パッケージ", "한국어"]
    assert CJK_CHAR.findall("ab中c") == ["中"]
    assert re.findall(f"[^{CJK_CLASS}\\s、]+", text) == ["pnpm", "OK"]
    assert re.findall(rf"[{CJK_CLASS}]{{2}}", "中文x日本") == ["中文", "日本"]


# Markers of a hand-written CJK range: the first letters of the Han, kana and Hangul blocks.
_RANGE_MARKERS = re.compile(r"\\u4e00|\\u3040|\\u30a0|\\uac00|\\u3400|[\u4e00\u3040\u30a0\uac00\u3400]-")


def test_no_module_keeps_its_own_copy_of_the_class() -> None:
    root = Path(memvault.__file__).parent
    copies = [str(p.relative_to(root.parent)) for p in root.rglob("*.py")
              if p.name != "cjk.py" and _RANGE_MARKERS.search(p.read_text(encoding="utf-8"))]
    assert not copies, f"import memvault.policy.cjk instead of defining CJK ranges in: {copies}"
