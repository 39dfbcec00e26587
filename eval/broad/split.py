#!/usr/bin/env python3
"""Reproducible tuning/judging split of the broad corpus (standard library only).

The split was made once, before anything was measured, from facts known about each
file up front (language, kind, page count). Run

    python eval/broad/split.py            # print the split this seed gives, compare with corpus.json
    python eval/broad/split.py --write    # write it into corpus.json ("half" of every entry)

Method:
- Translations of one document (FAMILIES) count as one unit and always land in the same
  half, so a tuning document's translation cannot sit in the judging half.
- Units are shuffled with random.Random(SEED), then sorted so that units of rare kinds and
  languages go first (the shuffle breaks ties).
- Each unit goes, in that order, to the half where it adds least imbalance: per-language
  counts, per-kind counts, per-text-layer counts and total pages.
- The result must pass check(): every language has at least 2 files in each half, every
  kind and every text-layer class (full/partial/none) with 2 or more files is in both
  halves, and the page totals differ by at most 10%.
  If it fails, the next seed is tried; SEED is the first one that passed.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections import Counter
from pathlib import Path

SEED = 20240617
HALVES = ("tuning", "judging")
CORPUS = Path(__file__).with_name("corpus.json")

# Translations (or a document and the output shown inside it) kept in one half.
FAMILIES = [
    ["texlive-przewodnik-pl.pdf", "texlive-rukovodstvo-ru.pdf"],  # TeX Live guide, pl + ru
    ["latex-referenzkarte-de.pdf", "latex-hoja-referencia-es.pdf"],  # latexcheat, de + es-MX
    ["facture-classe-doc-fr.pdf", "facture-exemple-fr.pdf"],  # class manual + its sample
]


def units_of(entries: list[dict]) -> list[list[dict]]:
    by_file = {e["file"]: e for e in entries}
    seen: set[str] = set()
    units = []
    for fam in FAMILIES:
        members = [by_file[f] for f in fam if f in by_file]
        if members:
            units.append(members)
            seen.update(e["file"] for e in members)
    units += [[e] for e in entries if e["file"] not in seen]
    return units


def assign(entries: list[dict], seed: int) -> dict[str, str]:
    lang_n = Counter(e["lang"] for e in entries)
    kind_n = Counter(e["kind"] for e in entries)
    layer_n = Counter(e["text_layer"] for e in entries)
    total_pages = sum(e["pages"] for e in entries) or 1
    units = units_of(entries)
    random.Random(seed).shuffle(units)
    units.sort(key=lambda u: min(min(kind_n[e["kind"]], lang_n[e["lang"]], layer_n[e["text_layer"]]) for e in u))

    lang = {h: Counter() for h in HALVES}
    kind = {h: Counter() for h in HALVES}
    layer = {h: Counter() for h in HALVES}
    pages = {h: 0 for h in HALVES}
    out: dict[str, str] = {}
    rng = random.Random(seed + 1)
    for u in units:
        cost = {}
        for h in HALVES:
            o = HALVES[1 - HALVES.index(h)]
            c = 0.0
            for e in u:
                c += 4.0 * (lang[h][e["lang"]] - lang[o][e["lang"]] + 1)
                c += 2.0 * (kind[h][e["kind"]] - kind[o][e["kind"]] + 1)
                c += 1.0 * (layer[h][e["text_layer"]] - layer[o][e["text_layer"]] + 1)
            c += 40.0 * (pages[h] + sum(e["pages"] for e in u) - pages[o]) / total_pages
            cost[h] = c
        best = min(cost.values())
        h = rng.choice([x for x in HALVES if cost[x] == best])
        for e in u:
            out[e["file"]] = h
            lang[h][e["lang"]] += 1
            kind[h][e["kind"]] += 1
            layer[h][e["text_layer"]] += 1
            pages[h] += e["pages"]
    return out


def check(entries: list[dict], halves: dict[str, str]) -> list[str]:
    problems = []
    for lg in Counter(e["lang"] for e in entries):
        for h in HALVES:
            k = sum(1 for e in entries if e["lang"] == lg and halves[e["file"]] == h)
            if k < 2:
                problems.append(f"language {lg}: {k} file(s) in {h}")
    for kd, n in Counter(e["kind"] for e in entries).items():
        if n >= 2:
            for h in HALVES:
                if not any(e["kind"] == kd and halves[e["file"]] == h for e in entries):
                    problems.append(f"kind {kd}: none in {h}")
    for tl, n in Counter(e["text_layer"] for e in entries).items():
        if n >= 2:
            for h in HALVES:
                if not any(e["text_layer"] == tl and halves[e["file"]] == h for e in entries):
                    problems.append(f"text layer {tl}: none in {h}")
    p = {h: sum(e["pages"] for e in entries if halves[e["file"]] == h) for h in HALVES}
    if abs(p["tuning"] - p["judging"]) > 0.10 * max(p.values()):
        problems.append(f"pages unbalanced: {p}")
    return problems


def table(entries: list[dict], halves: dict[str, str]) -> str:
    rows = ["| | tuning | judging |", "|---|---|---|"]
    for key in ("lang", "kind", "text_layer"):
        for v in sorted({e[key] for e in entries}):
            c = [sum(1 for e in entries if e[key] == v and halves[e["file"]] == h) for h in HALVES]
            pg = [sum(e["pages"] for e in entries if e[key] == v and halves[e["file"]] == h) for h in HALVES]
            rows.append(f"| {v} | {c[0]} ({pg[0]} p.) | {c[1]} ({pg[1]} p.) |")
    n = [sum(1 for e in entries if halves[e["file"]] == h) for h in HALVES]
    pg = [sum(e["pages"] for e in entries if halves[e["file"]] == h) for h in HALVES]
    rows.append(f"| **total** | {n[0]} files, {pg[0]} pages | {n[1]} files, {pg[1]} pages |")
    return "\n".join(rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--write", action="store_true", help="write the halves into corpus.json")
    ap.add_argument("--search", action="store_true", help="start from SEED and report the first seed that passes")
    args = ap.parse_args()
    entries = json.loads(CORPUS.read_text(encoding="utf-8"))
    seed = SEED
    while True:
        halves = assign(entries, seed)
        problems = check(entries, halves)
        if not problems or not args.search:
            break
        seed += 1
    if problems:
        print("split does not pass:", *problems, sep="\n  ")
        return 1
    print(f"seed {seed}\n{table(entries, halves)}")
    differ = [e["file"] for e in entries if e.get("half") and e["half"] != halves[e["file"]]]
    if args.write:
        for e in entries:
            e["half"] = halves[e["file"]]
        CORPUS.write_text(json.dumps(entries, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
        print(f"wrote halves into {CORPUS}")
    elif differ:
        print("corpus.json differs from this split for:", *differ)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
