"""The evaluation report: group the per-question results (overall, by kind, by language, by
screenshot variant, negatives apart) into the summary the harness returns, and render that summary
as the markdown table `pixelrag eval` prints. Key-fact rates are over the questions that have a key fact.
"""

from __future__ import annotations

from collections.abc import Sequence

from .metrics import MISS, Result, Score, mean_scores
from .screenshots import VARIANTS

KINDS_ORDER = ("text", "table", "figure", "procedure", "image", "negative")


def _as_score(d: dict) -> Score:
    return Score(**d) if d else MISS


def summarize(results: Sequence[Result], k: int, reader: bool) -> dict:
    main = [r for r in results if r.variant in ("", "crop") and r.gold]
    groups: dict[str, list[Result]] = {"overall": main}
    for kind in KINDS_ORDER:
        if kind != "negative" and (rs := [r for r in main if r.kind == kind]):
            groups[f"kind:{kind}"] = rs
    for lang in sorted({r.lang for r in main}):
        groups[f"lang:{lang}"] = [r for r in main if r.lang == lang]
    # asked in the gold document's language or in another (when the evaluation was told the documents' languages)
    if rs := [r for r in main if r.page_lang and r.lang == r.page_lang]:
        groups["page language"] = rs
    if rs := [r for r in main if r.page_lang and r.lang != r.page_lang]:
        groups["another language"] = rs
    for variant in VARIANTS:
        if rs := [r for r in results if r.variant == variant and r.gold]:
            groups[f"image:{variant}"] = rs
    table = {}
    for name, rs in groups.items():
        row = mean_scores(_as_score(r.score) for r in rs)
        base = (
            mean_scores(_as_score(r.baseline_score) for r in rs)
            if not name.startswith("image:") or name == "image:crop"
            else {}
        )
        row["baseline"] = {key: v for key, v in base.items() if key != "n"}
        row["errors"] = sum(r.error is not None for r in rs)
        if reader:
            graded = [r for r in rs if r.containment is not None]
            precs = [r.citation_precision for r in rs if r.citation_precision is not None]
            row["containment"] = sum(r.containment for r in graded) / len(graded) if graded else None
            row["contains"] = sum(bool(r.contains) for r in graded) / len(graded) if graded else None
            row["citation_precision"] = sum(precs) / len(precs) if precs else None
            keyed = [r for r in rs if r.key_fact_lead is not None]
            row["key_fact_n"] = len(keyed)
            row["key_fact_lead"] = sum(r.key_fact_lead for r in keyed) / len(keyed) if keyed else None
            row["key_fact_any"] = sum(bool(r.key_fact_any) for r in keyed) / len(keyed) if keyed else None
            row["limitation_rate"] = sum(bool(r.states_limitation) for r in rs) / len(rs) if rs else None
        table[name] = row
    negatives = [r for r in results if not r.gold]
    neg = {"n": len(negatives), "errors": sum(r.error is not None for r in negatives)}
    if reader and negatives:
        neg["limitation_rate"] = sum(bool(r.states_limitation) for r in negatives) / len(negatives)
    return {"groups": table, "negatives": neg}


def summarize_jev(results: Sequence[Result], k: int) -> dict:
    """--compare-jev: evidence_first / within_k of the dense ranking and of Jev's selection over the same
    candidates (questions with gold pages), and the fallbacks and errors apart (with their reasons)."""
    main = [r for r in results if r.variant in ("", "crop") and r.gold]
    compared = [r for r in main if r.jev]
    dense = mean_scores(_as_score(r.jev["dense_score"]) for r in compared)
    jev = mean_scores(_as_score(r.jev["jev_score"]) for r in compared)
    fell_back = [r for r in results if r.jev and not r.jev["selected"]]
    return {
        "n": len(compared),
        "k": k,
        "dense": {"evidence_first": dense.get("evidence_first"), "evidence_within_k": dense.get("evidence_within_k")},
        "jev": {"evidence_first": jev.get("evidence_first"), "evidence_within_k": jev.get("evidence_within_k")},
        "fallbacks": len(fell_back),
        "fallback_reasons": {r.id + (f"/{r.variant}" if r.variant else ""): r.jev["fallback"] for r in fell_back},
        "errors": sum(r.error is not None for r in results),
    }


def jev_markdown(jev: dict) -> str:
    k = jev["k"]
    lines = [
        f"\nJev comparison ({jev['n']} questions, the same candidates ranked both ways):",
        f"| ranking | evidence_first | evidence_within_{k} |",
        "|---|---|---|",
    ]
    for name in ("dense", "jev"):
        lines.append(f"| {name} | {_f(jev[name]['evidence_first'])} | {_f(jev[name]['evidence_within_k'])} |")
    lines.append(f"Fallbacks (the dense ranking kept): {jev['fallbacks']}. Errors: {jev['errors']}.")
    lines += [f"- {qid}: {reason}" for qid, reason in jev["fallback_reasons"].items()]
    return "\n".join(lines)


def _f(v) -> str:
    return "–" if v is None else f"{v:.3f}"


def markdown_report(report: dict) -> str:
    k, reader = report["k"], report["reader"]
    s = report["summary"]
    head = [
        "group",
        "n",
        "evidence_first",
        f"evidence_within_{k}",
        f"recall@{k}",
        "MRR",
        "text-only ef",
        f"text-only w{k}",
        "text-only MRR",
    ]
    if reader:
        head += ["containment", "contains", "citation precision", "key fact in lead", "key fact anywhere"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in s["groups"].items():
        if not row.get("n"):
            continue
        b = row.get("baseline") or {}
        cells = [
            name,
            str(row["n"]),
            _f(row["evidence_first"]),
            _f(row["evidence_within_k"]),
            _f(row["recall_at_k"]),
            _f(row["mrr"]),
            _f(b.get("evidence_first")),
            _f(b.get("evidence_within_k")),
            _f(b.get("mrr")),
        ]
        if reader:
            cells += [
                _f(row.get("containment")),
                _f(row.get("contains")),
                _f(row.get("citation_precision")),
                _f(row.get("key_fact_lead")),
                _f(row.get("key_fact_any")),
            ]
        lines.append("| " + " | ".join(cells) + " |")
    neg = s["negatives"]
    errors = sum(row.get("errors", 0) for name, row in s["groups"].items() if name == "overall") + neg["errors"]
    tail = [f"\nNegatives: {neg['n']} questions"]
    if "limitation_rate" in neg:
        tail.append(f", reader states a limitation on {neg['limitation_rate']:.3f} of them")
        pos = s["groups"].get("overall", {}).get("limitation_rate")
        if pos is not None:
            tail.append(f" (and on {pos:.3f} of the answerable ones)")
    tail.append(f". Errors (counted as misses): {errors}.")
    if "image:crop" in s["groups"]:
        tail.append(
            "\nimage:* rows score every screenshot query once per variant (crop = as rendered at 150 DPI; "
            "half = 50 % downscale; jpeg40 = JPEG q40; rot2 = rotated 2°; screenshot = padded, in a window frame); "
            "the text-only baseline cannot see the image, so it gets the question text alone."
        )
    out = "\n".join(lines) + "".join(tail)
    return out + ("\n" + jev_markdown(report["jev"]) if report.get("jev") else "")


def sets_markdown(reports: dict[str, dict]) -> str:
    """The question sets side by side, one row each (their `--json` reports): retrieval against the text-only
    baseline, the reader's key fact and containment, negatives with a limitation, and the worst screenshot
    variant's page@1."""
    k = next(iter(reports.values()))["k"]
    head = [
        "set",
        "n",
        "evidence_first",
        f"evidence_within_{k}",
        f"text-only ef / w{k}",
        "containment",
        "key fact in lead",
        "key fact anywhere",
        "negatives with a limitation",
        "screenshots page@1 (worst variant)",
        f"in another language than the page: ef / w{k} (n)",
    ]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, report in reports.items():
        groups, neg = report["summary"]["groups"], report["summary"]["negatives"]
        row, base = groups["overall"], groups["overall"].get("baseline") or {}
        variants = [g["evidence_first"] for g_name, g in groups.items() if g_name.startswith("image:") and g.get("n")]
        stated = round(neg["limitation_rate"] * neg["n"]) if neg.get("n") and "limitation_rate" in neg else None
        other = groups.get("another language")
        lines.append(
            "| "
            + " | ".join(
                [
                    name,
                    str(row["n"]),
                    _f(row["evidence_first"]),
                    _f(row["evidence_within_k"]),
                    f"{_f(base.get('evidence_first'))} / {_f(base.get('evidence_within_k'))}",
                    _f(row.get("containment")),
                    _f(row.get("key_fact_lead")),
                    _f(row.get("key_fact_any")),
                    "–" if stated is None else f"{stated}/{neg['n']}",
                    _f(min(variants)) if variants else "–",
                    f"{_f(other['evidence_first'])} / {_f(other['evidence_within_k'])} ({other['n']})"
                    if other
                    else "–",
                ]
            )
            + " |"
        )
    return "\n".join(lines)
