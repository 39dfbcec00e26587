"""Rerun only the reader on the pages an evaluation retrieved, and grade its answers.

`pixelrag eval` runs retrieval, the follow-up rewrite, screenshot OCR and the reader for every question;
a reader change needs only the last. This script takes an eval report (its interpreted questions), ranks
again through the same page index (and checks the pages are the report's), reads them with the local
reader, and prints key fact in the lead / anywhere / containment per set, plus the reader's time.
Screenshot questions are left out (their query text is the screenshot's OCR).

    python eval/reader_rerun.py --index index/eval-local \
        dev=/tmp/dev.json:../shared/corpora/dev-questions.jsonl:eval/dev-key-facts.json \
        holdout=/tmp/ho.json:eval/holdout-questions.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core import load_settings  # noqa: E402
from core.backends.local import LocalBackend  # noqa: E402
from core.service import Service  # noqa: E402
from eval.metrics import answer_lead, containment, states_fact  # noqa: E402
from eval.questions import load_questions  # noqa: E402


async def rerun(service: Service, report: dict, questions: dict, k: int, show: bool) -> dict:
    backend = service.backend
    search = await service.pages.search("")
    file_of = {d.doc_id: d.file_name for d in await service.all_documents()}
    lead, anywhere, contained, seconds, moved = [], [], [], [], 0
    flagged, limited = [], []  # negatives that state a limitation; answerable questions that do
    for res in report["questions"]:
        q = questions.get(res["id"])
        if q is None or res["variant"] or not res.get("ranked") or not (q.negative or q.key_fact):
            continue
        text = res["interpreted"] or q.question
        hits = await search.rank(text, await backend.embed_query(text, ()), k, backend.lexical)
        if [(file_of[h.doc_id], h.page) for h in hits] != [(r["file"], r["page"]) for r in res["ranked"]]:
            moved += 1  # retrieval changed since the report: graded on today's pages
        pages = await search.read(hits)
        t0 = time.perf_counter()
        draft = await backend.reader.read(text, pages, ())
        seconds.append(time.perf_counter() - t0)
        # the reader's limitations, and the search's (words no visible page holds), which it does not change
        states = bool(draft.limitations) or any(
            t.startswith(LocalBackend.ABSENT_NOTE) for t in res.get("limitations", ())
        )
        if q.negative:
            flagged.append(states)
            continue
        limited.append(states)
        lead.append(states_fact(answer_lead(draft.markdown), q.key_fact))
        anywhere.append(states_fact(draft.markdown, q.key_fact))
        contained.append(containment(draft.markdown, q.answer)[0])
        if show:
            print(
                f"--- {q.id} lead={lead[-1]} any={anywhere[-1]} key={list(q.key_fact)}\nQ: {text}\n"
                + "\n".join(answer_lead(draft.markdown).splitlines())
            )
    n = len(lead) or 1
    return {
        "n": len(lead),
        "lead": sum(lead) / n,
        "anywhere": sum(anywhere) / n,
        "containment": sum(contained) / n,
        "read_p50_ms": 1000 * statistics.median(seconds or [0]),
        "retrieval_moved": moved,
        "negatives": f"{sum(flagged)}/{len(flagged)}",
        "limited": sum(limited) / n,
    }


async def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("sets", nargs="+", help="name=REPORT.json:QUESTIONS.jsonl[:KEY_FACTS.json]")
    ap.add_argument("--index", default="index/eval-local")
    ap.add_argument("--show", action="store_true", help="print each answer's lead")
    args = ap.parse_args()
    service = Service(load_settings().with_(index_dir=Path(args.index), backend="local"))
    for spec in args.sets:
        name, paths = spec.split("=", 1)
        report_path, questions_path, *facts = paths.split(":")
        report = json.loads(Path(report_path).read_text(encoding="utf-8"))
        questions = {q.id: q for q in load_questions(questions_path, facts[0] if facts else None)}
        figures = await rerun(service, report, questions, report["k"], args.show)
        print(
            f"{name}: n={figures['n']} lead={figures['lead']:.3f} any={figures['anywhere']:.3f} "
            f"containment={figures['containment']:.3f} read p50={figures['read_p50_ms']:.0f} ms "
            f"negatives flagged {figures['negatives']} answerable with a limitation {figures['limited']:.3f} "
            f"(retrieval moved on {figures['retrieval_moved']})",
            flush=True,
        )


if __name__ == "__main__":
    asyncio.run(main())
