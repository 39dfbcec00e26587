"""The extractive reader of the local backend: it quotes the best-matching passages, it does not compose.

A passage is a printed line of a retrieved page (text layer or OCR). Short lines, such as table
cells, are widened with the words printed at the same height, so "Operating voltage" brings its
"5V" along. The Gemini reader lives in core/gemini.py.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Sequence

from .backends import Draft, DraftCitation, ReaderPage
from .records import Box, Page, QueryImage, Word
from .text import content_tokens, fold, stem

MAX_QUOTES = 3
LOCAL_NOTICE = (
    "_Local mode: these are the passages of the retrieved pages that best match the question, quoted as "
    "printed. pixelrag does not compose answers without a Gemini key._"
)
PRICE_WORDS = re.compile(r"\b(price|prices|cost|costs|pric\w*|preis\w*|kosten|cena|ceny|koszt\w*|how much does)\b", re.I)
CURRENCY = re.compile(r"(€|\$|£|\bEUR\b|\bUSD\b|\bPLN\b|\bzł|\bCHF\b)", re.I)
TOPICS = [
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
    words: tuple[Word, ...]

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)

    @property
    def box(self) -> Box:
        return (min(w.box[0] for w in self.words), min(w.box[1] for w in self.words),
                max(w.box[2] for w in self.words), max(w.box[3] for w in self.words))


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


def topic_of(question: str) -> str:
    q = fold(question)
    for topic, keys in TOPICS:
        if any(fold(k) in q for k in keys):
            return topic
    return "other"


class ExtractiveReader:
    async def read(self, question: str, pages: Sequence[ReaderPage], images: Sequence[QueryImage]) -> Draft:
        candidates = [Passage(rp, words) for rp in pages for words in passages(rp.page)]
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
        rank = {rp.hit.doc_id + str(rp.hit.page): i for i, rp in enumerate(pages)}

        def coverage(i: int) -> float:
            return sum(weight[t] for t in query & stems[i]) / total

        def score(i: int) -> float:
            words = candidates[i].words
            value = 1.25 if any(c.isdigit() for c in candidates[i].text) else 1.0  # answers carry values
            heading = 0.6 if len(words) < 3 else 1.0  # a bare heading names a topic, it answers nothing
            prior = 1.0 + 0.15 * rank[candidates[i].page.hit.doc_id + str(candidates[i].page.hit.page)]
            return coverage(i) * value * heading / prior  # earlier pages are likelier to hold the answer

        order = sorted(range(len(candidates)), key=lambda i: -score(i))
        chosen, seen = [], set()
        for i in order:
            # further quotes only when nearly as good as the best: weak matches are noise
            if score(i) <= 0 or len(chosen) == MAX_QUOTES or score(i) < 0.7 * score(order[0]):
                break
            text = candidates[i].text
            if fold(text) in seen:
                continue
            seen.add(fold(text))
            chosen.append(candidates[i])
        limitations = []
        if not chosen or max(coverage(i) for i in range(len(candidates))) < 0.5:
            limitations.append("No passage on the retrieved pages matches most of the question; "
                               "the documents may not answer it.")
        if PRICE_WORDS.search(question) and not any(CURRENCY.search(p.text) for p in chosen):
            limitations.append("No price is stated on the retrieved pages.")
        lines = [LOCAL_NOTICE, ""]
        for n, p in enumerate(chosen, 1):
            lines.append(f"{n}. “{p.text}” — **{p.page.hit.title}**, p. {p.page.hit.page}")
        if not chosen:
            lines.append("Nothing on the retrieved pages matches the question.")
        citations = tuple(DraftCitation(p.page.hit.doc_id, p.page.hit.page, p.text, p.box) for p in chosen)
        return Draft("\n".join(lines), citations, tuple(limitations), topic_of(question))
