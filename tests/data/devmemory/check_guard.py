"""Validate a developer-memory retrieval set and print its counts against the spec.

Usage: python tests/data/devmemory/check_guard.py tests/data/devmemory/guard.json

The file is one JSON object {name, about, memories[], questions[]} (see the set's "about").
A question's slice comes from its own lang and the lang of its gold memories:
en->en, zh->zh (pure Chinese memory), zh->zh+id (Chinese memory with identifiers),
zh->en and en->zh* are the cross-lingual slices; gold [] is "unanswerable".

Besides the counts, the script checks what a hand-written file gets wrong easily:
unique ids, gold ids that exist, allowed lang/kind values, and that the lang labels match
the text (an "en" text has no Chinese characters, a "zh" memory has Chinese and no Latin
letters, a "zh+id" memory has both), and memory length 15-250 characters.
Exit status 0 when every requirement is met, 1 otherwise (each failure is printed).
Standard library only.
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter

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
MEM_LANGS = {"en", "zh", "zh+id"}
Q_LANGS = {"en", "zh"}
CJK = re.compile(r"[\u4e00-\u9fff]")
LATIN = re.compile(r"[A-Za-z]")


def slice_of(q: dict, mem_lang: dict[str, str]) -> str:
    """Name the slice of one question: 'unanswerable', 'en->en', 'zh->zh', 'zh->zh+id',
    'zh->en', 'en->zh*', or 'mixed' when gold memories disagree on language."""
    if not q["gold"]:
        return "unanswerable"
    langs = {mem_lang[g] for g in q["gold"]}
    if len(langs) != 1:
        # all-Chinese gold of both kinds counts as zh->zh+id / en->zh*
        if langs == {"zh", "zh+id"}:
            return "zh->zh+id" if q["lang"] == "zh" else "en->zh*"
        return "mixed"
    ml = langs.pop()
    if q["lang"] == "en":
        return "en->en" if ml == "en" else "en->zh*"
    return {"en": "zh->en", "zh": "zh->zh", "zh+id": "zh->zh+id"}[ml]


def main(path: str) -> int:
    with open(path, encoding="utf-8") as fh:
        data = json.load(fh)
    errors: list[str] = []

    def need(ok: bool, what: str) -> None:
        print(f"  [{'ok' if ok else 'FAIL'}] {what}")
        if not ok:
            errors.append(what)

    for key in ("name", "about", "memories", "questions"):
        if key not in data:
            errors.append(f"top-level key {key!r} missing")
    mems, qs = data.get("memories", []), data.get("questions", [])

    # structure
    mids = [m.get("id") for m in mems]
    qids = [q.get("id") for q in qs]
    for label, ids in (("memory", mids), ("question", qids)):
        dup = [i for i, c in Counter(ids).items() if c > 1]
        if dup:
            errors.append(f"duplicate {label} ids: {dup}")
    mem_lang = {m["id"]: m["lang"] for m in mems}
    for m in mems:
        t = m.get("text", "")
        if m.get("lang") not in MEM_LANGS:
            errors.append(f"{m['id']}: lang {m.get('lang')!r} not in {sorted(MEM_LANGS)}")
        if m.get("kind") not in KINDS:
            errors.append(f"{m['id']}: kind {m.get('kind')!r} not in {sorted(KINDS)}")
        if not m.get("project"):
            errors.append(f"{m['id']}: project is empty")
        if m.get("lang") == "en" and CJK.search(t):
            errors.append(f"{m['id']}: labelled en but has Chinese characters")
        if m.get("lang") == "zh" and (LATIN.search(t) or not CJK.search(t)):
            errors.append(f"{m['id']}: labelled zh (pure) but has Latin letters or no Chinese")
        if m.get("lang") == "zh+id" and not (LATIN.search(t) and CJK.search(t)):
            errors.append(f"{m['id']}: labelled zh+id but lacks Chinese or an identifier")
        if not 15 <= len(t) <= 250:
            errors.append(f"{m['id']}: text is {len(t)} characters, allowed 15-250")
    for q in qs:
        if q.get("lang") not in Q_LANGS:
            errors.append(f"{q['id']}: lang {q.get('lang')!r} not in {sorted(Q_LANGS)}")
        if q.get("lang") == "en" and CJK.search(q.get("text", "")):
            errors.append(f"{q['id']}: labelled en but has Chinese characters")
        if q.get("lang") == "zh" and not CJK.search(q.get("text", "")):
            errors.append(f"{q['id']}: labelled zh but has no Chinese characters")
        if not isinstance(q.get("identifier"), bool):
            errors.append(f"{q['id']}: identifier must be true or false")
        for g in q.get("gold", []):
            if g not in mem_lang:
                errors.append(f"{q['id']}: gold id {g!r} is not a memory id")
    if errors:
        print("structure errors:")
        for e in errors:
            print("  " + e)
        return 1

    # counts
    n_m = len(mems)
    by_lang = Counter(m["lang"] for m in mems)
    zh_all = by_lang["zh"] + by_lang["zh+id"]
    projects = Counter(m["project"] for m in mems)
    lengths = sorted(len(m["text"]) for m in mems)
    print(f"set {data['name']!r}: {n_m} memories, {len(qs)} questions")
    print(f"memories by lang: {dict(sorted(by_lang.items()))}")
    print(f"memories by project: {dict(sorted(projects.items()))}")
    print(f"memories by kind: {dict(sorted(Counter(m['kind'] for m in mems).items()))}")
    print(
        f"memory length: min {lengths[0]}, median {lengths[len(lengths) // 2]}, "
        f"max {lengths[-1]}, over 120 chars: {sum(1 for x in lengths if x > 120)}"
    )

    slices = Counter(slice_of(q, mem_lang) for q in qs)
    n_q = len(qs)
    cross = slices["zh->en"] + slices["en->zh*"]
    unans = Counter(q["lang"] for q in qs if not q["gold"])
    ident = sum(1 for q in qs if q["identifier"])
    print(
        "questions by slice: "
        + ", ".join(
            f"{k} {slices[k]}" for k in ("en->en", "zh->zh", "zh->zh+id", "zh->en", "en->zh*", "unanswerable", "mixed")
        )
    )
    print(f"questions by lang: {dict(sorted(Counter(q['lang'] for q in qs).items()))}")
    print(f"cross-lingual: {cross} of {n_q} ({cross / n_q:.1%})")
    print(f"identifier questions: {ident}")
    print(f"unanswerable: en {unans['en']}, zh {unans['zh']}")
    print(f"questions with more than one gold: {sum(1 for q in qs if len(q['gold']) > 1)}")

    print("requirements:")
    software = [p for p in projects if p != "global"]
    need(n_m >= 160, f"memories >= 160 ({n_m})")
    need(len(software) >= 3, f"software projects >= 3 ({len(software)}: {', '.join(sorted(software))})")
    need("global" in projects, "global preferences / team facts present")
    need(set(Counter(m["kind"] for m in mems)) == KINDS, "every kind used")
    need(zh_all / n_m >= 0.40, f"Chinese memories >= 40% ({zh_all}/{n_m} = {zh_all / n_m:.1%})")
    need(
        zh_all > 0 and by_lang["zh+id"] / zh_all >= 0.60,
        f"zh+id share of Chinese memories >= 60% ({by_lang['zh+id']}/{zh_all})",
    )
    need(by_lang["zh"] > 0, f"some pure Chinese memories ({by_lang['zh']})")
    need(n_q >= 320, f"questions >= 320 ({n_q})")
    need(cross / n_q >= 0.35, f"cross-lingual >= 35% ({cross / n_q:.1%})")
    need(slices["zh->en"] >= 40, f"zh->en >= 40 ({slices['zh->en']})")
    need(slices["en->zh*"] >= 40, f"en->zh* >= 40 ({slices['en->zh*']})")
    need(slices["zh->zh"] >= 40, f"zh->zh (pure) >= 40 ({slices['zh->zh']})")
    need(slices["zh->zh+id"] >= 40, f"zh->zh+id >= 40 ({slices['zh->zh+id']})")
    need(slices["en->en"] >= 60, f"en->en >= 60 ({slices['en->en']})")
    need(ident >= 30, f"identifier questions >= 30 ({ident})")
    need(sum(unans.values()) >= 50, f"unanswerable >= 50 ({sum(unans.values())})")
    need(
        unans["en"] >= 25 and unans["zh"] >= 25, f"unanswerable >= 25 per language (en {unans['en']}, zh {unans['zh']})"
    )
    need(slices["mixed"] == 0, f"no question with gold in both languages ({slices['mixed']})")
    unused = sorted(set(mem_lang) - {g for q in qs for g in q["gold"]})
    print(f"memories never gold: {len(unused)}" + (f" ({', '.join(unused)})" if unused else ""))
    print("ALL REQUIREMENTS MET" if not errors else f"{len(errors)} requirement(s) not met")
    return 0 if not errors else 1


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print("usage: check_guard.py PATH/TO/guard.json", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(sys.argv[1]))
