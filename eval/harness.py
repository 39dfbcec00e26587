"""The evaluation harness: run a question set through the real service and score the retrieved pages.

Every question goes through `Service.answer`, the flow the bots use. A follow-up runs as a real
second turn: its `Turn.history` holds the first turn's question, interpreted question, answer and
citations. A screenshot query is the crop rendered at 150 DPI, plus robustness variants scored
separately (see screenshots.py). A text-only baseline (BM25 over the PDF text layer, what a plain
text RAG sees) runs alongside. The question format is in questions.py, the scoring in metrics.py and
the summary and markdown table in report.py.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path

from bot.terminal import save_images  # the images of each answer, written where --out says
from core import Answer, BadInput, QueryImage, Service, Settings, Turn
from core.ranking.bm25 import LexicalIndex  # not in core's public face: the baseline reuses the search's BM25 directly
from core.records import Exchange

from .metrics import Result, answer_lead, citation_precision, containment, score_ranking, states_fact
from .questions import PageRef, Question
from .report import summarize, summarize_jev
from .screenshots import VARIANTS, image_variant, render_crop


# --- the text-only baseline ----------------------------------------------------------------------
class TextLayerBaseline:
    """BM25 over each page's PDF text layer (file name + page text): what a plain text RAG sees."""

    def __init__(self, pdfs: Sequence[Path]):
        import pymupdf

        self.pages: list[PageRef] = []
        texts = []
        for path in pdfs:
            with pymupdf.open(path) as doc:
                for i, page in enumerate(doc):
                    self.pages.append((path.name, i + 1))
                    texts.append(f"{path.stem}\n{page.get_text()}")
        self.index = LexicalIndex(texts)

    def rank(self, query: str, k: int = 10) -> list[PageRef]:
        scores = self.index.scores(query, names_once=False)  # plain BM25, as a text RAG has it
        order = sorted(range(len(scores)), key=lambda i: -float(scores[i]))
        return [self.pages[i] for i in order[:k] if scores[i] > 0]


# --- running -------------------------------------------------------------------------------------
def corpus_pdfs(corpus: Path) -> list[Path]:
    pdfs = sorted(Path(corpus).glob("*.pdf"))
    if not pdfs:
        raise BadInput(f"{corpus}: no PDF files in that folder.")
    return pdfs


async def ensure_index(service, pdfs: Sequence[Path], progress=None) -> dict:
    """Index the corpus folder, reusing whatever the index already holds (unchanged pages are reused)."""
    have = {(d.file_name, d.sha256) for d in await service.all_documents()}
    todo = [p for p in pdfs if (p.name, hashlib.sha256(p.read_bytes()).hexdigest()) not in have]
    if not todo:
        return {"indexed": 0, "pages_embedded": 0, "pages_reused": 0}
    report = await service.index([str(p) for p in todo], progress=progress)
    return {
        "indexed": len(report.documents),
        "pages_embedded": report.pages_embedded,
        "pages_reused": report.pages_reused,
    }


async def evaluate(
    questions: Sequence[Question],
    corpus: Path,
    settings: Settings,
    *,
    k: int = 4,
    reader: bool = True,
    variants: Sequence[str] = VARIANTS,
    out_dir: Path | None = None,
    log: Callable[[str], None] | None = None,
    service=None,
    compare_jev: bool = False,
    document_languages: dict[str, str] | None = None,
) -> dict:
    """Run every question (and each screenshot variant) through the service; returns the report dict.
    With `compare_jev` the Jev selector is on and each answer is ranked both ways: its candidates in
    the dense order (one query embedding, one retrieval) and as Jev kept them. `document_languages`
    ({file: lang}) splits the summary into questions asked in their gold document's language and the others."""
    log = log or (lambda s: None)
    if unknown := [v for v in variants if v not in VARIANTS]:
        raise BadInput(f"Unknown image variant(s): {', '.join(unknown)}; choose from {', '.join(VARIANTS)}.")
    settings = settings.with_(top_k=k, **({"jev": "rerank"} if compare_jev else {}))
    service = service or Service(settings)
    pdfs = corpus_pdfs(corpus)
    started = time.perf_counter()
    build = await ensure_index(service, pdfs)
    build["seconds"] = round(time.perf_counter() - started, 2)
    file_of = {d.doc_id: d.file_name for d in await service.all_documents()}
    baseline = TextLayerBaseline(pdfs)
    by_id = {q.id: q for q in questions}
    answers: dict[str, Answer | None] = {}
    results: list[Result] = []

    for q in questions:
        history: tuple[Exchange, ...] = ()
        base_query = q.question
        if q.follow_up_of:
            first = by_id[q.follow_up_of]
            earlier = answers.get(first.id)
            history = (Exchange.of(first.question, earlier) if earlier else Exchange(first.question, ""),)
            base_query = f"{first.question} {q.question}"  # a text RAG with naive history concatenation
        runs = [("", ())]
        if q.crop:
            png = render_crop(Path(corpus) / q.crop["file"], int(q.crop["page"]), q.crop["box"])
            runs = []
            for variant in variants:
                data, mime = image_variant(png, variant)
                runs.append((variant, (QueryImage(data, mime, f"{q.id}-{variant}"),)))
        b_ranked = baseline.rank(base_query)
        b_score = score_ranking(b_ranked, q.gold, q.gold_mode, k)
        for variant, images in runs:
            res = Result(
                q.id,
                q.kind,
                q.lang,
                variant,
                q.question,
                gold=[list(g) for g in q.gold],
                gold_mode=q.gold_mode,
                baseline_ranked=[list(p) for p in b_ranked[:k]],
                baseline_score=asdict(b_score),
                page_lang=(document_languages or {}).get(q.gold[0][0], "") if q.gold else "",
            )
            t0 = time.perf_counter()
            answer = None
            try:
                answer = await service.answer(Turn(q.question, images, history=history), retrieve_only=not reader)
                if out_dir:
                    answer = save_images(answer, Path(out_dir) / q.id / (variant or "text"))
            except Exception as exc:  # an error is a miss, recorded with its message
                res.error = f"{type(exc).__name__}: {exc}"
            res.seconds = round(time.perf_counter() - t0, 3)
            ranking = None
            if answer is not None:
                ranking = [(file_of.get(h.doc_id, h.doc_id), h.page) for h in answer.hits]
                res.ranked = [{"file": f, "page": p, "score": h.score} for (f, p), h in zip(ranking, answer.hits)]
                res.interpreted = answer.interpreted_question
                if reader:
                    text = answer.clarifying_question or answer.markdown
                    res.answer = text
                    res.limitations = list(answer.limitations)
                    res.cited = sorted({(file_of.get(c.doc_id, c.doc_id), c.page) for c in answer.citations})
                    res.states_limitation = bool(answer.limitations or answer.clarifying_question)
                    if not q.negative:
                        res.containment, res.contains = containment(text, q.answer)
                        res.citation_precision = citation_precision(res.cited, q.gold)
                        if q.key_fact:
                            res.key_fact_lead = states_fact(answer_lead(text), q.key_fact)
                            res.key_fact_any = states_fact(text, q.key_fact)
            res.score = asdict(score_ranking(ranking, q.gold, q.gold_mode, k))
            if compare_jev:
                res.jev = jev_comparison(answer, file_of, q, k)
            if variant in ("", "crop"):
                answers[q.id] = answer
            results.append(res)
            flag = (
                "ERR"
                if res.error
                else ("neg" if q.negative else f"{res.score['first']:.0f}/{res.score['within_k']:.0f}")
            )
            log(f"{q.id:>8} {variant or '-':10} {flag:6} {[f'{f[:12]}:{p}' for f, p in (ranking or [])]}")

    report = {
        "summary": summarize(results, k, reader),
        "build": build,
        "k": k,
        "reader": reader,
        "questions": [asdict(r) for r in results],
    }
    if compare_jev:
        report["jev"] = summarize_jev(results, k)
    return report


def jev_comparison(answer: Answer | None, file_of: dict[str, str], q: Question, k: int) -> dict | None:
    """The dense ranking of the answer's candidates and the pages Jev kept, each scored."""
    selection = answer.selector if answer is not None else None
    if selection is None:
        return None
    dense = [(file_of.get(c.doc_id, c.doc_id), c.page) for c in selection.candidates][:k]
    kept = [(file_of.get(h.doc_id, h.doc_id), h.page) for h in answer.hits]
    return {
        "selected": selection.selected,
        "fallback": selection.fallback,
        "model": selection.model,
        "dense": [list(p) for p in dense],
        "jev": [list(p) for p in kept],
        "probabilities": [c.probability for c in selection.candidates],
        "dense_score": asdict(score_ranking(dense, q.gold, q.gold_mode, k)),
        "jev_score": asdict(score_ranking(kept, q.gold, q.gold_mode, k)),
        "topic": selection.topic,
        "task": selection.task,
    }
