"""The extractive reader of the local backend: it quotes the best-matching passages, it does not compose.

A passage is a printed line of a retrieved page (text layer or OCR). Short lines, such as table
cells, are widened with the words printed at the same height, so "Operating voltage" brings its
"5V" along; a quote that stops mid-sentence runs on to the sentence's end.
"""
from __future__ import annotations

import asyncio
import math
import re
from dataclasses import dataclass, replace
from typing import Callable, Sequence

import numpy as np

from ...records import Box, Draft, DraftCitation, Page, QueryImage, ReaderPage, Word, union_box
from ...text import STOPWORDS, content_tokens, fold, stem

MAX_QUOTES = 3
SHORTLIST = 24  # passages the dense model rereads (~0.5 s on 2 cores)
DENSE_SHARE = 0.3  # of the blended passage score; lexical coverage stays the main signal
LOCAL_NOTICE = (
    "_Local mode: these are the passages of the retrieved pages that best match the question, quoted as "
    "printed. pixelrag does not compose answers without a Gemini key._"
)
PRICE_WORDS = re.compile(r"\b(price|prices|cost|costs|pric\w*|preis\w*|kosten|cena|ceny|koszt\w*)\b", re.I)
CURRENCY = re.compile(r"(€|\$|£|\bEUR\b|\bUSD\b|\bPLN\b|\bzł|\bCHF\b)", re.I)
TOPIC_CUES = [  # words that give a question's topic away (the topics: records.TOPICS)
    ("warranty", ("warrant", "garantie", "gewährleistung", "gwarancj")),
    ("complaint", ("complain", "reklamation", "beschwerde", "reklamacj", "defect")),
    ("price", ("price", "cost", "preis", "kosten", "cena", "koszt")),
    ("service", ("service", "repair", "maintenance", "wartung", "reparatur", "serwis", "napraw", "support")),
    ("instructions", ("how do", "how to", "install", "step", "procedure", "connect", "anleitung", "einstell",
                      "schritt", "jak ", "instrukc", "krok", "update", "flash")),
]


@dataclass(frozen=True)
class Passage:
    page: ReaderPage
    rank: int  # of its page among the retrieved ones, 0 first
    words: tuple[Word, ...]
    lines: int = 1  # consecutive printed lines it spans

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)

    @property
    def box(self) -> Box:
        return union_box(self.words)


def passages(page: Page) -> list[tuple[Word, ...]]:
    lines: dict[int, list[Word]] = {}
    for w in page.words:
        lines.setdefault(w.line, []).append(w)
    ordered = sorted(lines.values(), key=lambda ws: (min(w.box[1] for w in ws), min(w.box[0] for w in ws)))
    out = []
    for i, line in enumerate(ordered):
        top, bottom = min(w.box[1] for w in line), max(w.box[3] for w in line)
        if len(line) < 6:  # a table cell or a label: take the whole printed row
            line = [w for other in ordered for w in other if top <= (w.box[1] + w.box[3]) / 2 <= bottom]
        words = sorted(line, key=lambda w: w.box[0])
        if words[-1].text.endswith(":") and i + 1 < len(ordered):  # "Label:" with its value below
            words += sorted(ordered[i + 1], key=lambda w: w.box[0])
        out.append(tuple(dict.fromkeys(words)))
    return out


def windows(lines: list[tuple[Word, ...]], longest: int = 3) -> list[tuple[tuple[Word, ...], int]]:
    """Runs of 1 to `longest` consecutive lines: an answer often spans a label and the lines below it."""
    return [(tuple(dict.fromkeys(w for line in lines[i:i + n] for w in line)), n)
            for i in range(len(lines)) for n in range(1, longest + 1) if i + n <= len(lines)]


SENTENCE_END = re.compile(r"[.!?…]['\"”»)]*$")


def runs_on(line: tuple[Word, ...]) -> bool:
    """Whether a printed line continues a sentence onto the next one: a line of prose (8+ words) without a
    full stop, or a shorter one that stops on a comma or a word like "the", "der", "że". A label such as
    "Mounting hole spacing 148 mm" does not run on into the next label."""
    last = line[-1].text
    if SENTENCE_END.search(last) or len(line) < 5:
        return False
    return len(line) >= 8 or last[-1] in ",;:-–(" or fold(last) in STOPWORDS


def complete_sentence(words: tuple[Word, ...], lines: list[tuple[Word, ...]], extra: int = 2,
                      longest: int = 60) -> tuple[Word, ...]:
    """A quote that stops mid-sentence runs on, up to `extra` more lines, to where the sentence can end:
    the answer is often its second half."""
    at = next((i for i, line in enumerate(lines) if words[-1] in line), None)
    if at is None:
        return words
    out = list(words)
    for line in lines[at + 1:at + 1 + extra]:
        if not runs_on(lines[at]) or len(out) + len(line) > longest:
            break
        out += [w for w in line if w not in out]
        at += 1
    return tuple(out)


def _shape(words: tuple[Word, ...]) -> str:
    """A line compared without its digits, so "page 3 of 9" matches "page 4 of 9"."""
    return re.sub(r"\d+", "", fold(" ".join(w.text for w in words))).strip()


def repeated_lines(pages_lines: list[list[tuple[Word, ...]]], margin: float = 0.1) -> set[str]:
    """Running headers and footers: lines in the top or bottom margin printed on two or more pages."""
    counts: dict[str, int] = {}
    for page_lines in pages_lines:
        edges = {_shape(ws) for ws in page_lines
                 if max(w.box[3] for w in ws) < margin or min(w.box[1] for w in ws) > 1 - margin}
        for shape in edges:
            counts[shape] = counts.get(shape, 0) + 1
    return {shape for shape, n in counts.items() if n > 1 and shape}


def topic_of(question: str) -> str:
    q = fold(question)
    for topic, keys in TOPIC_CUES:
        if any(fold(k) in q for k in keys):
            return topic
    return "other"


class ExtractiveReader:
    """Lexical coverage shortlists passages; the local dense model, when given, reranks the shortlist,
    so "How long is the warranty?" finds "a warranty of 36 months" rather than a line that repeats words."""

    def __init__(self, similarity: Callable[[str, list[str]], np.ndarray] | None = None):
        self.similarity = similarity

    async def read(self, question: str, pages: Sequence[ReaderPage], images: Sequence[QueryImage],
                   guidance: str = "") -> Draft:
        # `guidance` (a Jev task's formatting instructions) has no prompt to go into: the quotes stay as they are.
        pages_lines = [passages(rp.page) for rp in pages]
        boilerplate = repeated_lines(pages_lines)  # running headers and footers answer nothing
        pages_lines = [[ws for ws in page_lines if _shape(ws) not in boilerplate] for page_lines in pages_lines]
        candidates = [Passage(rp, rank, words, n) for rank, (rp, page_lines) in enumerate(zip(pages, pages_lines))
                      for words, n in windows(page_lines)]
        query = {stem(t) for t in content_tokens(question)}
        if not candidates or not query:
            return Draft(LOCAL_NOTICE + "\n\nThe retrieved pages hold no readable text to quote.",
                         limitations=("No readable text was found on the retrieved pages.",), topic=topic_of(question))
        # Rare terms matter more: weight each query term by its rarity among the candidate passages.
        stems = [{stem(t) for t in content_tokens(p.text)} for p in candidates]
        weight = {t: math.log(1 + len(candidates) / (1 + sum(t in s for s in stems))) for t in query}
        # Words of the documents' titles pick the document, not the passage within it.
        in_titles = {stem(t) for rp in pages for t in content_tokens(rp.hit.title)}
        weight = {t: w * (0.3 if t in in_titles else 1.0) for t, w in weight.items()}
        total = sum(weight.values()) or 1.0

        def coverage(i: int) -> float:
            return sum(weight[t] for t in query & stems[i]) / total

        def lexical_score(i: int) -> float:
            words = candidates[i].words
            value = 1.25 if any(c.isdigit() for c in candidates[i].text) else 1.0  # answers carry values
            heading = 0.6 if len(words) < 3 else 1.0  # a bare heading names a topic, it answers nothing
            prior = 1.0 + 0.15 * candidates[i].rank
            brevity = 0.9 ** (candidates[i].lines - 1)  # a longer quote must cover more to win
            return coverage(i) * value * heading * brevity / prior  # earlier pages likelier hold the answer

        final = {i: lexical_score(i) for i in range(len(candidates))}
        final = {i: v for i, v in final.items() if v > 0}
        if self.similarity is not None and final:
            final = await self._rerank(question, candidates, final)
        order = sorted(final, key=lambda i: -final[i])
        chosen: list[Passage] = []
        for i in order:
            # further quotes only when nearly as good as the best: weak matches are noise
            if len(chosen) == MAX_QUOTES or final[i] < 0.7 * final[order[0]]:
                break
            quote = replace(candidates[i], words=complete_sentence(candidates[i].words, pages_lines[candidates[i].rank]))
            if any(set(quote.words) & set(c.words) for c in chosen):
                continue  # overlapping windows would quote the same lines twice
            chosen.append(quote)
        limitations = []
        if not chosen:
            limitations.append("No passage on the retrieved pages matches the question.")
        if PRICE_WORDS.search(question) and not any(CURRENCY.search(p.text) for p in chosen):
            limitations.append("No price is stated on the retrieved pages.")
        lines = [LOCAL_NOTICE, ""]
        for n, p in enumerate(chosen, 1):
            lines.append(f"{n}. “{p.text}” — **{p.page.hit.title}**, p. {p.page.hit.page}")
        if not chosen:
            lines.append("Nothing on the retrieved pages matches the question.")
        citations = tuple(DraftCitation(p.page.hit.doc_id, p.page.hit.page, p.text, p.box) for p in chosen)
        return Draft("\n".join(lines), citations, tuple(limitations), topic_of(question))

    async def read_streaming(self, question: str, pages: Sequence[ReaderPage], images: Sequence[QueryImage],
                             on_text: Callable[[str], None], guidance: str = "") -> Draft:
        """Quotes are chosen all at once: the text arrives whole when they are."""
        draft = await self.read(question, pages, images)
        on_text(draft.markdown)
        return draft

    async def _rerank(self, question: str, candidates: list[Passage], lexical: dict[int, float]) -> dict[int, float]:
        """Blend the lexical score with the dense similarity over the lexical shortlist, both scaled to 0..1."""
        shortlist = sorted(lexical, key=lambda i: -lexical[i])[:SHORTLIST]
        dense = await asyncio.to_thread(self.similarity, question, [candidates[i].text for i in shortlist])
        low, spread = float(dense.min()), float(dense.max() - dense.min()) or 1.0
        top = lexical[shortlist[0]]
        return {i: (1 - DENSE_SHARE) * lexical[i] / top + DENSE_SHARE * (float(d) - low) / spread
                for i, d in zip(shortlist, dense)}

