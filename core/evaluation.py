"""Evaluation harness: run a questions file through the real service and score the retrieved pages.

Question format (see ../shared/corpora/README.md): one JSON object per line with `id`, `question`,
`answer`, `gold` ([{file, page}], 1-based PDF pages), optional `gold_mode` ("all" by default, or
"any"), `kind`, `lang`, optional `crop` ({file, page, box} in PDF points, top-left origin) for
screenshot queries and optional `follow_up_of` (the id of the first turn of a two-turn exchange).

Every question goes through `Service.answer`, the flow the bots use. A follow-up runs as a real
second turn: its `Turn.history` holds the first turn's question, interpreted question, answer and
citations. A screenshot query is the crop rendered at 150 DPI, plus robustness variants scored
separately (50 % downscale, JPEG q40, rotated 2 degrees, framed like a screenshot). A text-only
baseline (BM25 over the PDF text layer, what a plain text RAG sees) runs alongside.
"""
from __future__ import annotations

import io
import json
import re
import string
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Iterable, Sequence

from PIL import Image, ImageDraw

from .config import Settings
from .errors import BadInput
from .records import Answer, Exchange, QueryImage, Turn
from .search import LexicalIndex

# The grader's own function words (EN/DE/PL), fixed so that tuning the search's stopwords never moves
# the containment figures.
GRADER_STOPWORDS = frozenset("""
    a an the and or of to in on at for by with from is are was were be been it its this that these those
    as do does did what which who whom how much many when where why there their they them can could should
    would will i you we he she my your our me us not no any some about into than then so if also has have had
    der die das den dem des ein eine einer eines einem einen und oder ist sind war wie was wer wo welche welcher
    welches für mit von zu im in am an auf aus bei es sie er ich wir nicht auch sich dass als nach über um
    i w z na do nie to jest są jak co czy się o od po za ten ta te tego jaki jaka jakie który która które
    oraz lub dla przy""".split())
CROP_DPI = 150
VARIANTS = ("crop", "half", "jpeg40", "rot2", "screenshot")
KINDS_ORDER = ("text", "table", "figure", "procedure", "image", "negative")

PageRef = tuple[str, int]  # (file name, 1-based page)


# --- questions -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answer: str = ""
    gold: tuple[PageRef, ...] = ()
    gold_mode: str = "all"
    kind: str = "text"
    lang: str = "en"
    crop: dict | None = None
    follow_up_of: str | None = None
    note: str = ""

    @property
    def negative(self) -> bool:
        return self.kind == "negative" or not self.gold


def load_questions(path: Path | str) -> list[Question]:
    out = []
    for n, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{path}:{n}: not JSON ({exc.msg}).") from exc
        gold = tuple((g["file"], int(g["page"])) for g in item.get("gold") or ())
        mode = item.get("gold_mode", "all")
        if mode not in ("all", "any"):
            raise BadInput(f"{path}:{n}: gold_mode must be 'all' or 'any', not {mode!r}.")
        out.append(Question(str(item["id"]), item.get("question", ""), item.get("answer", ""), gold, mode,
                            item.get("kind", "text"), item.get("lang", "en"), item.get("crop"),
                            item.get("follow_up_of"), item.get("note", "")))
    ids = {q.id for q in out}
    for q in out:
        if q.follow_up_of and q.follow_up_of not in ids:
            raise BadInput(f"{q.id}: follow_up_of {q.follow_up_of!r} is not in the file.")
    return out


# --- metrics -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Score:
    first: float  # the top page is gold
    within_k: float  # any gold page (mode any) / every gold page (mode all) in the top k
    recall: float  # fraction of gold pages in the top k (mode any: 1 when any is there)
    rr: float  # reciprocal rank of the first gold page in the ranking (0 when absent)


MISS = Score(0.0, 0.0, 0.0, 0.0)


def score_ranking(ranking: Sequence[PageRef] | None, gold: Sequence[PageRef], mode: str = "all", k: int = 4) -> Score:
    """Score one ranked list of pages against the gold pages. None (an error) is a miss."""
    if ranking is None or not gold:
        return MISS
    gold_set = set(gold)
    top = list(dict.fromkeys(ranking))[:k]
    found = gold_set & set(top)
    first = float(bool(top) and top[0] in gold_set)
    within = float(bool(found)) if mode == "any" else float(found == gold_set)
    recall = float(bool(found)) if mode == "any" else len(found) / len(gold_set)
    rr = next((1.0 / r for r, page in enumerate(list(dict.fromkeys(ranking)), 1) if page in gold_set), 0.0)
    return Score(first, within, recall, rr)


def mean_scores(scores: Iterable[Score]) -> dict[str, float]:
    items = list(scores)
    if not items:
        return {"n": 0}
    n = len(items)
    return {"n": n, "evidence_first": sum(s.first for s in items) / n, "evidence_within_k": sum(s.within_k for s in items) / n,
            "recall_at_k": sum(s.recall for s in items) / n, "mrr": sum(s.rr for s in items) / n}


# --- answer grading ------------------------------------------------------------------------------
ARTICLES = re.compile(r"\b(a|an|the)\b")
PUNCT = set(string.punctuation) | set("–—‘’“”„«»…·×→°")


def normalize_answer(text: str) -> str:
    """As the PixelRAG (SQuAD-style) grader: lowercase, punctuation and articles removed, spaces collapsed."""
    text = "".join(" " if c in "\u2013\u2014" else c for c in text.lower())
    text = "".join(c for c in text if c not in PUNCT)
    text = ARTICLES.sub(" ", text)
    return " ".join(text.split())


def key_tokens(text: str) -> list[str]:
    """The normalized tokens that carry content (common EN/DE/PL function words dropped)."""
    return [t for t in normalize_answer(text).split() if t not in GRADER_STOPWORDS]


def containment(answer: str, reference: str) -> tuple[float, bool]:
    """(fraction of the reference's key tokens present in the answer, whole reference contained)."""
    norm_answer = normalize_answer(answer)
    have = set(norm_answer.split())
    keys = key_tokens(reference)
    frac = sum(t in have for t in keys) / len(keys) if keys else 0.0
    norm_ref = normalize_answer(reference)
    return frac, bool(norm_ref) and f" {norm_ref} " in f" {norm_answer} "


def citation_precision(cited: Sequence[PageRef], gold: Sequence[PageRef]) -> float | None:
    pages = set(cited)
    if not pages or not gold:
        return None
    return len(pages & set(gold)) / len(pages)


# --- screenshot queries ----------------------------------------------------------------------
def render_crop(pdf_path: Path, page: int, box: Sequence[float], dpi: int = CROP_DPI) -> bytes:
    """The crop as the corpus README makes it: PyMuPDF, top-left-origin points, 150 DPI, PNG."""
    import pymupdf

    with pymupdf.open(pdf_path) as doc:
        pix = doc[page - 1].get_pixmap(dpi=dpi, clip=pymupdf.Rect(*box))
        return pix.tobytes("png")


def _png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return buf.getvalue()


def image_variant(png: bytes, variant: str) -> tuple[bytes, str]:
    """(bytes, mime type) of one robustness variant of a screenshot query."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    if variant == "crop":
        return png, "image/png"
    if variant == "half":
        return _png(image.resize((max(1, image.width // 2), max(1, image.height // 2)), Image.Resampling.LANCZOS)), "image/png"
    if variant == "jpeg40":
        buf = io.BytesIO()
        image.save(buf, "JPEG", quality=40)
        return buf.getvalue(), "image/jpeg"
    if variant == "rot2":
        return _png(image.rotate(2, resample=Image.Resampling.BICUBIC, expand=True, fillcolor="white")), "image/png"
    if variant == "screenshot":
        return _png(frame_like_screenshot(image)), "image/png"
    raise ValueError(f"unknown image variant {variant!r}")


def frame_like_screenshot(image: Image.Image) -> Image.Image:
    """Pad the image on a grey viewer background inside a window: border, title bar, buttons."""
    pad, bar, border = 40, 28, 2
    inner = Image.new("RGB", (image.width + 2 * pad, image.height + 2 * pad), (225, 225, 228))
    inner.paste(image, (pad, pad))
    win = Image.new("RGB", (inner.width + 2 * border, inner.height + bar + 2 * border), (70, 70, 80))
    draw = ImageDraw.Draw(win)
    draw.rectangle((border, border, win.width - border - 1, border + bar - 1), fill=(52, 56, 64))
    for i, color in enumerate(((236, 95, 90), (245, 190, 80), (98, 197, 84))):
        x = border + 12 + i * 20
        draw.ellipse((x, border + 8, x + 12, border + 20), fill=color)
    win.paste(inner, (border, border + bar))
    return win


# --- the text-only baseline --------------------------------------------------------------------
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
        scores = self.index.scores(query)
        order = sorted(range(len(scores)), key=lambda i: -float(scores[i]))
        return [self.pages[i] for i in order[:k] if scores[i] > 0]


# --- running -------------------------------------------------------------------------------------
@dataclass
class Result:
    id: str
    kind: str
    lang: str
    variant: str  # "" for text questions; a VARIANTS name for screenshot queries
    question: str
    interpreted: str = ""
    gold: list = field(default_factory=list)
    gold_mode: str = "all"
    ranked: list | None = None  # [{"file", "page", "score"}]; None after an error
    score: dict = field(default_factory=dict)
    baseline_ranked: list = field(default_factory=list)
    baseline_score: dict = field(default_factory=dict)
    answer: str = ""
    limitations: list = field(default_factory=list)
    cited: list = field(default_factory=list)
    states_limitation: bool | None = None
    containment: float | None = None
    contains: bool | None = None
    citation_precision: float | None = None
    error: str | None = None
    seconds: float = 0.0


def corpus_pdfs(corpus: Path) -> list[Path]:
    pdfs = sorted(Path(corpus).glob("*.pdf"))
    if not pdfs:
        raise BadInput(f"{corpus}: no PDF files in that folder.")
    return pdfs


async def ensure_index(service, pdfs: Sequence[Path], progress=None) -> dict:
    """Index the corpus folder, reusing whatever the index already holds (unchanged pages are reused)."""
    import hashlib

    loaded = service.snapshot()
    have = {(d.file_name, d.sha256) for d in loaded[0].documents} if loaded else set()
    todo = [p for p in pdfs if (p.name, hashlib.sha256(p.read_bytes()).hexdigest()) not in have]
    if not todo:
        return {"indexed": 0, "pages_embedded": 0, "pages_reused": 0}
    report = await service.index([str(p) for p in todo], progress=progress)
    return {"indexed": len(report.documents), "pages_embedded": report.pages_embedded, "pages_reused": report.pages_reused}


async def evaluate(questions: Sequence[Question], corpus: Path, settings: Settings, *, k: int = 4,
                   reader: bool = True, variants: Sequence[str] = VARIANTS, out_dir: Path | None = None,
                   log: Callable[[str], None] | None = None, service=None) -> dict:
    """Run every question (and each screenshot variant) through the service; returns the report dict."""
    from .service import Service

    log = log or (lambda s: None)
    if unknown := [v for v in variants if v not in VARIANTS]:
        raise BadInput(f"Unknown image variant(s): {', '.join(unknown)}; choose from {', '.join(VARIANTS)}.")
    settings = settings.with_(top_k=k)
    service = service or Service(settings)
    pdfs = corpus_pdfs(corpus)
    started = time.perf_counter()
    build = await ensure_index(service, pdfs)
    build["seconds"] = round(time.perf_counter() - started, 2)
    snap = service.snapshot()[0]
    file_of = {d.doc_id: d.file_name for d in snap.documents}
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
            res = Result(q.id, q.kind, q.lang, variant, q.question, gold=[list(g) for g in q.gold], gold_mode=q.gold_mode,
                         baseline_ranked=[list(p) for p in b_ranked[:k]], baseline_score=asdict(b_score))
            t0 = time.perf_counter()
            answer = None
            try:
                answer = await service.answer(Turn(q.question, images, history=history),
                                              Path(out_dir) / q.id / (variant or "text") if out_dir else None,
                                              retrieve_only=not reader)
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
            res.score = asdict(score_ranking(ranking, q.gold, q.gold_mode, k))
            if variant in ("", "crop"):
                answers[q.id] = answer
            results.append(res)
            flag = "ERR" if res.error else ("neg" if q.negative else f"{res.score['first']:.0f}/{res.score['within_k']:.0f}")
            log(f"{q.id:>8} {variant or '-':10} {flag:6} {[f'{f[:12]}:{p}' for f, p in (ranking or [])]}")

    return {"summary": summarize(results, k, reader), "build": build, "k": k, "reader": reader,
            "questions": [asdict(r) for r in results]}


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
    for variant in VARIANTS:
        if rs := [r for r in results if r.variant == variant and r.gold]:
            groups[f"image:{variant}"] = rs
    table = {}
    for name, rs in groups.items():
        row = mean_scores(_as_score(r.score) for r in rs)
        base = mean_scores(_as_score(r.baseline_score) for r in rs) if not name.startswith("image:") or name == "image:crop" else {}
        row["baseline"] = {key: v for key, v in base.items() if key != "n"}
        row["errors"] = sum(r.error is not None for r in rs)
        if reader:
            graded = [r for r in rs if r.containment is not None]
            precs = [r.citation_precision for r in rs if r.citation_precision is not None]
            row["containment"] = sum(r.containment for r in graded) / len(graded) if graded else None
            row["contains"] = sum(bool(r.contains) for r in graded) / len(graded) if graded else None
            row["citation_precision"] = sum(precs) / len(precs) if precs else None
            row["limitation_rate"] = sum(bool(r.states_limitation) for r in rs) / len(rs) if rs else None
        table[name] = row
    negatives = [r for r in results if not r.gold]
    neg = {"n": len(negatives), "errors": sum(r.error is not None for r in negatives)}
    if reader and negatives:
        neg["limitation_rate"] = sum(bool(r.states_limitation) for r in negatives) / len(negatives)
    return {"groups": table, "negatives": neg}


def _f(v) -> str:
    return "–" if v is None else f"{v:.3f}"


def markdown_report(report: dict) -> str:
    k, reader = report["k"], report["reader"]
    s = report["summary"]
    head = ["group", "n", "evidence_first", f"evidence_within_{k}", f"recall@{k}", "MRR",
            "text-only ef", f"text-only w{k}", "text-only MRR"]
    if reader:
        head += ["containment", "contains", "citation precision"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for name, row in s["groups"].items():
        if not row.get("n"):
            continue
        b = row.get("baseline") or {}
        cells = [name, str(row["n"]), _f(row["evidence_first"]), _f(row["evidence_within_k"]), _f(row["recall_at_k"]),
                 _f(row["mrr"]), _f(b.get("evidence_first")), _f(b.get("evidence_within_k")), _f(b.get("mrr"))]
        if reader:
            cells += [_f(row.get("containment")), _f(row.get("contains")), _f(row.get("citation_precision"))]
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
        tail.append("\nimage:* rows score every screenshot query once per variant (crop = as rendered at 150 DPI; "
                    "half = 50 % downscale; jpeg40 = JPEG q40; rot2 = rotated 2°; screenshot = padded, in a window frame); "
                    "the text-only baseline cannot see the image, so it gets the question text alone.")
    return "\n".join(lines) + "".join(tail)
