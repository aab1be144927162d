"""Validate a developer-memory retrieval set and print its counts per requirement.

Usage: python tests/data/devmemory/check_set.py tests/data/devmemory/dev.json (or guard.json)

The file is one JSON object: ``name``, ``about``, ``memories`` (id, project, lang in
en | zh | zh+id, kind, text) and ``questions`` (id, lang in en | zh, text, gold: list of
memory ids, [] when the answer is not stored, identifier: bool). A question's slice is
derived from its own lang and its gold memories' langs:

    en -> en, en -> zh* (zh or zh+id), zh -> en, zh -> zh (pure), zh -> zh+id,
    unanswerable (gold == []), mixed (gold spans both languages).

Structural errors (duplicate ids, unknown gold ids, bad fields, labels that contradict
the text) and unmet requirements are printed one per line; the exit status is 1 if any
were found, 0 otherwise. Standard library only.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from pathlib import Path

MEMORY_LANGS = {"en", "zh", "zh+id"}
QUESTION_LANGS = {"en", "zh"}
KINDS = {
    "preference",
    "decision",
    "architecture",
    "command",
    "port",
    "env",
    "error",
    "incident",
    "person",
    "deadline",
    "convention",
    "tooling",
}
CJK = re.compile(r"[\u4e00-\u9fff]")
LATIN = re.compile(r"[A-Za-z]")
MIN_CHARS, MAX_CHARS = 15, 250

# requirement name -> (minimum, how the figure is computed below)
MINIMUMS = {
    "memories": 160,
    "projects (not global)": 3,
    "questions": 320,
    "en->en": 60,
    "zh->zh (pure)": 40,
    "zh->zh+id": 40,
    "zh->en": 40,
    "en->zh*": 40,
    "identifier questions": 30,
    "unanswerable": 50,
    "unanswerable en": 25,
    "unanswerable zh": 25,
}
MIN_ZH_SHARE = 0.40  # of memories
MIN_ZH_ID_SHARE = 0.60  # of the Chinese memories
MIN_CROSS_SHARE = 0.35  # of questions


def slice_of(question: dict, memory_lang: dict[str, str]) -> str:
    """Name the slice of one question from its lang and its gold memories' langs."""
    gold_langs = {memory_lang[g] for g in question["gold"]}
    if not gold_langs:
        return "unanswerable " + question["lang"]
    if question["lang"] == "en":
        if gold_langs == {"en"}:
            return "en->en"
        if "en" not in gold_langs:
            return "en->zh*"
        return "mixed"
    if gold_langs == {"en"}:
        return "zh->en"
    if gold_langs == {"zh"}:
        return "zh->zh (pure)"
    if gold_langs == {"zh+id"}:
        return "zh->zh+id"
    if "en" not in gold_langs:
        return "zh->zh (pure + id)"
    return "mixed"


def check(data: dict) -> tuple[list[str], list[tuple[str, str, bool]]]:
    """Return (structural errors, [(requirement, figure, met)]) for one loaded set."""
    errors: list[str] = []
    for key in ("name", "about", "memories", "questions"):
        if key not in data:
            errors.append(f"top level: missing key {key!r}")
    memories = data.get("memories", [])
    questions = data.get("questions", [])

    memory_lang: dict[str, str] = {}
    texts: dict[str, str] = {}
    for m in memories:
        mid = m.get("id", "?")
        if mid in memory_lang:
            errors.append(f"{mid}: duplicate memory id")
        lang, kind, text = m.get("lang"), m.get("kind"), m.get("text", "")
        if lang not in MEMORY_LANGS:
            errors.append(f"{mid}: lang {lang!r} is not one of {sorted(MEMORY_LANGS)}")
        if kind not in KINDS:
            errors.append(f"{mid}: kind {kind!r} is not one of {sorted(KINDS)}")
        if not m.get("project"):
            errors.append(f"{mid}: empty project")
        if not MIN_CHARS <= len(text) <= MAX_CHARS:
            errors.append(f"{mid}: text has {len(text)} characters, allowed {MIN_CHARS}-{MAX_CHARS}")
        has_cjk, has_latin = bool(CJK.search(text)), bool(LATIN.search(text))
        if lang == "en" and has_cjk:
            errors.append(f"{mid}: labelled en but contains Chinese characters")
        if lang == "zh" and (not has_cjk or has_latin):
            errors.append(f"{mid}: labelled zh (pure Chinese) but has no Chinese or has Latin letters")
        if lang == "zh+id" and not (has_cjk and has_latin):
            errors.append(f"{mid}: labelled zh+id but lacks Chinese or an identifier in Latin letters")
        if "shop-" in text.lower():
            errors.append(f"{mid}: uses a shop-* name, reserved for another set")
        memory_lang[mid] = lang
        texts[mid] = text

    seen_q: set[str] = set()
    seen_text: set[str] = set()
    slices: Counter[str] = Counter()
    for q in questions:
        qid, lang, text, gold = q.get("id", "?"), q.get("lang"), q.get("text", ""), q.get("gold")
        if qid in seen_q:
            errors.append(f"{qid}: duplicate question id")
        seen_q.add(qid)
        if text in seen_text:
            errors.append(f"{qid}: same text as an earlier question")
        seen_text.add(text)
        if lang not in QUESTION_LANGS:
            errors.append(f"{qid}: lang {lang!r} is not one of {sorted(QUESTION_LANGS)}")
            continue
        if lang == "zh" and not CJK.search(text):
            errors.append(f"{qid}: labelled zh but has no Chinese characters")
        if lang == "en" and CJK.search(text):
            errors.append(f"{qid}: labelled en but contains Chinese characters")
        if not isinstance(q.get("identifier"), bool):
            errors.append(f"{qid}: identifier must be true or false")
        if not isinstance(gold, list):
            errors.append(f"{qid}: gold must be a list of memory ids")
            continue
        missing = [g for g in gold if g not in memory_lang]
        if missing:
            errors.append(f"{qid}: gold ids {missing} are not memory ids")
            continue
        if len(set(gold)) != len(gold):
            errors.append(f"{qid}: repeated gold id")
        for g in gold:
            if text.strip().lower() in texts[g].lower():
                errors.append(f"{qid}: question text is copied from {g}")
        slices[slice_of(q, memory_lang)] += 1

    langs = Counter(memory_lang.values())
    n_mem, n_q = len(memories), len(questions)
    n_zh = langs["zh"] + langs["zh+id"]
    projects = {m.get("project") for m in memories} - {"global"}
    cross = slices["zh->en"] + slices["en->zh*"]
    unanswerable = slices["unanswerable en"] + slices["unanswerable zh"]
    figures = {
        "memories": n_mem,
        "projects (not global)": len(projects),
        "questions": n_q,
        "en->en": slices["en->en"],
        "zh->zh (pure)": slices["zh->zh (pure)"],
        "zh->zh+id": slices["zh->zh+id"],
        "zh->en": slices["zh->en"],
        "en->zh*": slices["en->zh*"],
        "identifier questions": sum(1 for q in questions if q.get("identifier") is True),
        "unanswerable": unanswerable,
        "unanswerable en": slices["unanswerable en"],
        "unanswerable zh": slices["unanswerable zh"],
    }
    report: list[tuple[str, str, bool]] = []
    report.append(("memories en / zh / zh+id", f"{langs['en']} / {langs['zh']} / {langs['zh+id']}", True))
    zh_share = n_zh / n_mem if n_mem else 0.0
    zh_id_share = langs["zh+id"] / n_zh if n_zh else 0.0
    cross_share = cross / n_q if n_q else 0.0
    for name, minimum in MINIMUMS.items():
        report.append((name, f"{figures[name]} (>= {minimum})", figures[name] >= minimum))
        if name == "memories":
            report.append(
                ("Chinese share of memories", f"{zh_share:.1%} (>= {MIN_ZH_SHARE:.0%})", zh_share >= MIN_ZH_SHARE)
            )
            report.append(
                (
                    "zh+id share of Chinese memories",
                    f"{zh_id_share:.1%} (>= {MIN_ZH_ID_SHARE:.0%})",
                    zh_id_share >= MIN_ZH_ID_SHARE,
                )
            )
        if name == "en->zh*":
            report.append(
                (
                    "cross-lingual share",
                    f"{cross} = {cross_share:.1%} (>= {MIN_CROSS_SHARE:.0%})",
                    cross_share >= MIN_CROSS_SHARE,
                )
            )
    for other in ("zh->zh (pure + id)", "mixed"):
        if slices[other]:
            report.append((other, str(slices[other]), True))
    lengths = sorted(len(t) for t in texts.values())
    if lengths:
        report.append(
            ("memory length min / median / max", f"{lengths[0]} / {lengths[len(lengths) // 2]} / {lengths[-1]}", True)
        )
    report.append(
        (
            "memories per kind",
            ", ".join(f"{k} {v}" for k, v in sorted(Counter(m.get("kind") for m in memories).items())),
            True,
        )
    )
    report.append(
        (
            "memories per project",
            ", ".join(f"{k} {v}" for k, v in sorted(Counter(m.get("project") for m in memories).items())),
            True,
        )
    )
    return errors, report


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: check_set.py PATH/TO/SET.json", file=sys.stderr)
        return 2
    path = Path(argv[1])
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        print(f"cannot read {path}: {exc}", file=sys.stderr)
        return 2
    errors, report = check(data)
    print(f"set {data.get('name')!r} from {path}")
    width = max(len(name) for name, _, _ in report)
    for name, figure, met in report:
        print(f"  {'ok ' if met else 'LOW'} {name:<{width}}  {figure}")
    for error in errors:
        print(f"ERROR {error}")
    unmet = [name for name, _, met in report if not met]
    if errors or unmet:
        print(f"FAILED: {len(errors)} structural errors, {len(unmet)} requirements not met")
        return 1
    print("all requirements met")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
