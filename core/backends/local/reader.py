"""The extractive reader of the local backend: it quotes the best-matching passages, it does not compose.

A passage is a printed line of a retrieved page (text layer or OCR), or a run of up to three. Short
lines, such as table cells, are widened with the words printed at the same height, so "Operating
voltage" brings its "5V" along. A passage is matched together with its frame (layout.py: the
headings above it, its table's header row), so a value that repeats none of the question's words
is still found; a line that only repeats the question's words is worth less, for it tells nothing.
A product's name counts once however many words it has (concepts), so the lines that repeat it do not
outweigh the line holding the word asked about. A field the question names ("supply voltage") is found under
its name in the page's own language too ("Versorgungsspannung": field_names.py), at a lower weight; never in
a third language, whose lines (a datasheet's French safety notes) answer nothing.
The kind of answer asked for (question_kind.py) weighs in: a number for "how much", and more so the form
asked for (a current for "how much current", a count of the outputs for "how many outputs", a key
combination for "which shortcut"); the steps after the introduction for "how do I". A quote that starts
or stops mid-sentence is widened to the sentence, and one that starts with a heading and stops inside its
list of short items (a section's products) runs on to the list's end; a quoted table row is shown after
its header, and the answer within a quote (a value with its unit, a model code: answer_span.py) is
printed in bold. When the question names a measure or asks for a shortcut and no quote holds one, or
when the first quote comes from a document that never mentions the product asked about, the answer
says so.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ...citations import union_box
from ...language.field_names import field_names_in, language_of, name_in
from ...language.fold import fold
from ...language.names import name_runs
from ...language.question_kind import (
    VALUE,
    asked_measure,
    asked_shortcut,
    asks_procedure,
    asks_quantity,
    counted,
    stated_values,
)
from ...language.stopwords import STOPWORDS
from ...language.tokens import content_tokens, stem
from ...language.topics import CURRENCY, PRICE_WORDS, TOPIC_CUES
from ...markup import literal
from ...records import Box, Draft, DraftCitation, QueryImage, ReaderPage, Word
from .answer_span import in_bold, is_number
from .context import subject_of
from .layout import LARGER, Line, frame, printed_lines, rows

MAX_QUOTES = 3
FRAME_SHARE = 0.6  # a question word in a line's headings or table header counts this much of one in the line
NO_NEWS = 0.5
FURTHER_QUOTES = 0.5  # a second or third quote scores at least this share of the first
TRANSLATED = 0.3  # of a question word's weight: its field's name in the page's language, standing in for it
QUANTITY_VALUE, NO_QUANTITY = 1.6, 0.7  # for a question that asks how much: a passage with a number, without
MEASURE_VALUE = 1.3  # more for the form asked for: a value of the measure named ("how much current": "410mA", not
# "20 MHz"), a count of the things named, a key combination for a shortcut
LIST_ITEMS, SHORT = 3, 5  # a heading's list: up to this many more items of fewer than SHORT words
GAP = 1.2  # blank space between two lines, in line heights, that ends a block
SHORTLIST = 24  # passages the dense model rereads, each of their lines once
DENSE_SHARE = 0.3  # of the blended passage score; lexical coverage stays the main signal
LOCAL_NOTICE = (
    "_Local mode: these are the passages of the retrieved pages that best match the question, quoted as "
    "printed. pixelrag does not compose answers without a Gemini key._"
)


@dataclass(frozen=True)
class Passage:
    page: ReaderPage
    rank: int  # of its page among the retrieved ones, 0 first
    words: tuple[Word, ...]
    lines: int = 1  # consecutive printed lines it spans
    frame: tuple[Word, ...] = ()  # the headings and table header it sits under (layout.py)
    header: str = ""  # its table's header row, cells apart, shown before it
    read_as: tuple[str, ...] = ()  # each of its lines with that line's frame: what the dense model reads

    @property
    def text(self) -> str:
        return " ".join(w.text for w in self.words)

    @property
    def box(self) -> Box:
        return union_box(self.words)


@dataclass(frozen=True)
class PrintedLine:
    words: tuple[Word, ...]  # a line, or a short line widened to its whole printed row
    frame: tuple[Word, ...]  # its headings and table header
    header: str  # the table header's cells, shown before a quoted row

    @property
    def framed_text(self) -> str:
        return " ".join(w.text for w in self.frame + self.words)


def passages(lines: list[Line], boilerplate: set[Word] = frozenset()) -> list[PrintedLine]:
    """Each of a page's printed lines (layout.printed_lines) with its frame; lines of `boilerplate`
    (running headers) frame nothing."""
    row_of = rows(lines)
    out = []
    for i, line in enumerate(lines):
        words = list(line.words)
        if len(words) < 6:  # a table cell or a label: take the whole printed row
            words = sorted((w for j in row_of[i] for w in lines[j].words), key=lambda w: w.box[0])
        if words[-1].text.endswith(":") and i + 1 < len(lines):  # "Label:" with its value below
            words += lines[i + 1].words
        heading_rows, header_row = frame(lines, row_of, i)
        header = tuple(w for j in header_row for w in lines[j].words)
        header_text = " · ".join(" ".join(w.text for w in lines[j].words) for j in header_row)
        headings = tuple(w for j in heading_rows for w in lines[j].words if w not in boilerplate)
        words = tuple(dict.fromkeys(words))
        if out and out[-1].words == words:
            continue  # the row again, from another of its cells
        out.append(PrintedLine(words, headings + header, header_text if not set(header) <= set(words) else ""))
    return out


def windows(lines: list[PrintedLine], longest: int = 3) -> list[tuple[tuple[Word, ...], list[PrintedLine]]]:
    """Runs of 1 to `longest` consecutive lines of one block, with the lines they join: an answer often
    spans a label and the lines below it, not the paragraph after a gap."""
    out = []
    for i in range(len(lines)):
        for n in range(1, longest + 1):
            if i + n > len(lines) or (n > 1 and apart(lines[i + n - 2].words, lines[i + n - 1].words)):
                break
            out.append((tuple(dict.fromkeys(w for line in lines[i : i + n] for w in line.words)), lines[i : i + n]))
    return out


def apart(above: tuple[Word, ...], below: tuple[Word, ...]) -> bool:
    """Whether a blank gap of more than a line's height separates two lines (another block)."""
    height = max(w.box[3] - w.box[1] for w in above)
    return min(w.box[1] for w in below) - max(w.box[3] for w in above) > GAP * height


HEADING_NUMBER = re.compile(r"\d+(\.\d+)*\.?")  # "5", "5.2.": any depth (answer_span.SECTION_NUMBER wants a dot)
SENTENCE_END = re.compile(r"[.!?…]['\"”»)]*$")


def runs_on(line: tuple[Word, ...]) -> bool:
    """Whether a printed line continues a sentence onto the next one: a line of prose (8+ words) without a
    full stop, or a shorter one that stops on a comma or a word like "the", "der", "że". A label such as
    "Mounting hole spacing 148 mm" does not run on into the next label."""
    last = line[-1].text
    if SENTENCE_END.search(last) or len(line) < 5:
        return False
    return len(line) >= 8 or last[-1] in ",;:-–(" or fold(last) in STOPWORDS


def _height(words: tuple[Word, ...]) -> float:
    return max(w.box[3] - w.box[1] for w in words)


def heading(line: tuple[Word, ...], below: tuple[Word, ...]) -> bool:
    """Whether a line heads what is below it: numbered as a section ("1.2 Related Products") or printed larger."""
    if line is below:
        return False
    return bool(HEADING_NUMBER.fullmatch(line[0].text)) or _height(line) > LARGER * _height(below)


def complete_sentence(
    words: tuple[Word, ...], lines: list[tuple[Word, ...]], extra: int = 2, longest: int = 60, steps: bool = False
) -> tuple[Word, ...]:
    """A quote that stops mid-sentence runs on, up to `extra` more lines, to where the sentence can end:
    the answer is often its second half; with `steps` (a how-to question) it runs on past a sentence's
    end too, for the steps follow the introduction. One that starts mid-sentence (in lower case, after
    a line that runs on) starts where the sentence does: its subject is often the first half."""
    out = list(words)
    first = next((i for i, line in enumerate(lines) if words[0] in line), None)
    if first is not None and words[0].text[:1].islower():
        for line in reversed(lines[max(0, first - extra) : first]):
            if not runs_on(line) or len(out) + len(line) > longest:
                break
            out = [w for w in line if w not in out] + out
    at = next((i for i, line in enumerate(lines) if words[-1] in line), None)
    if at is None:
        return tuple(out)
    for line in lines[at + 1 : at + 1 + extra]:
        if not (steps or runs_on(lines[at])) or len(out) + len(line) > longest:
            break
        out += [w for w in line if w not in out]
        at += 1
    heads = first is not None and heading(lines[first], lines[at])
    for line in lines[at + 1 : at + 1 + LIST_ITEMS]:  # a heading's list of short items: to its end
        if (
            not heads
            or len(lines[at]) >= SHORT
            or len(line) >= SHORT
            or apart(lines[at], line)
            or len(out) + len(line) > longest
        ):
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
        edges = {
            _shape(ws)
            for ws in page_lines
            if max(w.box[3] for w in ws) < margin or min(w.box[1] for w in ws) > 1 - margin
        }
        for shape in edges:
            counts[shape] = counts.get(shape, 0) + 1
    return {shape for shape, n in counts.items() if n > 1 and shape}


def _column_names(p: Passage) -> str:
    """A quoted table row is read with its header: which value is whose."""
    return "_" + literal(p.header.replace("_", " ")) + ":_ " if p.header else ""


def concepts(question: str, query: set[str]) -> list[set[str]]:
    """The question's terms (`query`, stemmed) grouped by what they name: a name of several words, or an
    identifier and its parts, is one concept ("SKR Mini E3 V2.0": skr, mini, e3, v2, 2.0), so that a line
    repeating a product's name does not outweigh the line holding the one word asked about. Names are
    told by their shape (capitals, digits: names.name_runs), so this holds in any language."""
    words = question.split()
    runs = name_runs(question)  # none in a question typed in capitals: only identifiers are grouped then
    in_run = {i for a, b in runs for i in range(a, b)}
    groups, seen = [], set()
    for a, b in sorted(runs + [(i, i + 1) for i in range(len(words)) if i not in in_run]):
        group = {stem(t) for w in words[a:b] for t in content_tokens(w)} & query - seen
        if group:
            groups.append(group)
            seen |= group
    return groups + [{t} for t in query - seen]  # terms only the whole question yields (abbreviations)


def inflected(terms: set[str], query: set[str]) -> set[str]:
    """A passage's terms, with each query term that one of them inflects by a letter ("weigh" in "weight",
    "servo" in "servos") counted as present: stems of six letters leave short words whole."""
    return terms | {
        q
        for q in query - terms
        if len(q) >= 4 and q.isalpha() and any(len(t) == len(q) + 1 and t.startswith(q) for t in terms)
    }


def unmentioned_subject(question: str, pages: Sequence[ReaderPage], chosen: Sequence[Passage]) -> str:
    """When the question names a product that the first quote's document never mentions, though another
    retrieved one does (the "operating temperature of the light controller" quoted from a board's
    datasheet): saying so, and which document does. A document mentions it in its title or on a page read."""
    subject = subject_of(question)
    wanted = {stem(t) for t in content_tokens(subject)}
    if not wanted:
        return ""
    said: dict[str, set[str]] = {}
    for rp in pages:
        said.setdefault(rp.hit.doc_id, {stem(t) for t in content_tokens(rp.hit.title)})
        said[rp.hit.doc_id] |= {stem(t) for t in content_tokens(rp.page.text)}
    first = chosen[0].page.hit
    mentioning = next((rp.hit.title for rp in pages if wanted <= said[rp.hit.doc_id]), None)
    if wanted <= said[first.doc_id] or mentioning is None:
        return ""
    return f"The first passage quoted is from {first.title}, which does not mention “{subject}”; {mentioning} does."


def unstated_measure(question: str, measure: tuple[str, re.Pattern], chosen: Sequence[Passage]) -> str:
    """The limitation when no quote gives a value of the measure asked for under the conditions the question
    states: "261mA" on the +5V row is no answer to "the current from the 3.3 V pin"."""
    conditions = stated_values(question)
    giving = [p for p in chosen if measure[1].search(p.text)]
    if any(conditions <= stated_values(p.text) for p in giving):
        return ""
    under = f"for {', '.join(m.group(0) for m in VALUE.finditer(question))} " if giving else ""
    return f"No {measure[0]} value {under}is stated in the passages quoted."


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

    async def read(
        self, question: str, pages: Sequence[ReaderPage], images: Sequence[QueryImage], guidance: str = ""
    ) -> Draft:
        # `guidance` (a Jev task's formatting instructions) has no prompt to go into: the quotes stay as they are.
        # running headers and footers answer nothing, nor frame what does
        raw = [printed_lines(rp.page) for rp in pages]
        shapes = repeated_lines([[ln.words for ln in page] for page in raw])
        boilerplate = {w for page in raw for ln in page if _shape(ln.words) in shapes for w in ln.words}
        printed = [[ln for ln in passages(lines, boilerplate) if not set(ln.words) <= boilerplate] for lines in raw]
        pages_lines = [[ln.words for ln in page] for page in printed]
        candidates = [
            Passage(rp, rank, words, len(run), run[0].frame, run[0].header, tuple(ln.framed_text for ln in run))
            for rank, (rp, page) in enumerate(zip(pages, printed))
            for words, run in windows(page)
        ]
        query = {stem(t) for t in content_tokens(question)}
        if not candidates or not query:
            return Draft(
                LOCAL_NOTICE + "\n\nThe retrieved pages hold no readable text to quote.",
                limitations=("No readable text was found on the retrieved pages.",),
                topic=topic_of(question),
            )
        # Rare terms matter more: weight each query term by its rarity among the candidate passages.
        stems = [inflected({stem(t) for t in content_tokens(p.text)}, query) for p in candidates]
        frame_stems = {
            f: inflected({stem(t) for t in content_tokens(" ".join(w.text for w in f))}, query)
            for f in {p.frame for p in candidates}
        }  # windows of one line share its frame
        framed = [frame_stems[p.frame] for p in candidates]
        weight = {t: math.log(1 + len(candidates) / (1 + sum(t in s for s in stems))) for t in query}
        # Words of the documents' titles pick the document, not the passage within it.
        in_titles = {stem(t) for rp in pages for t in content_tokens(rp.hit.title)}
        weight = {t: w * (0.3 if t in in_titles else 1.0) for t, w in weight.items()}
        # A concept counts once, as much as its rarest term: the terms of a name share that weight.
        for group in concepts(question, query):
            share = max(weight[t] for t in group) / (sum(weight[t] for t in group) or 1.0)
            weight.update({t: weight[t] * share for t in group})
        total = sum(weight.values()) or 1.0

        # A field the question names, named in the page's own language ("supply voltage": "Versorgungsspannung"),
        # stands in for the question's words, at a lower weight: (its terms there, the question's terms).
        fields = [(concept, asked & query) for concept, asked in field_names_in(question) if asked & query]
        languages = [language_of(rp.page.text) if fields else None for rp in pages]
        in_language = [[(name_in(c, lang), asked) for c, asked in fields] if lang else [] for lang in languages]

        def coverage(i: int) -> float:
            own = query & stems[i]
            covered = sum(weight[t] for t in own) + FRAME_SHARE * sum(weight[t] for t in (query & framed[i]) - own)
            if fields_here := in_language[candidates[i].rank]:
                around = stems[i] | framed[i]
                for name, asked in fields_here:
                    if name and name <= around and not asked & around:
                        share = 1.0 if name <= stems[i] else FRAME_SHARE
                        covered += TRANSLATED * share * sum(weight[t] for t in asked)
            return covered / total

        quantity = asks_quantity(question)
        measure = asked_measure(question)
        count = counted(question)
        shortcut = asked_shortcut(question)

        def holds_form_asked(text: str) -> bool:
            return bool(
                measure
                and measure[1].search(text)
                or count
                and count.search(fold(text))
                or shortcut
                and shortcut.search(text)
            )

        def lexical_score(i: int) -> float:
            words = candidates[i].words
            if quantity:  # "how much", "wie groß": a number answers it
                value = QUANTITY_VALUE if any(is_number(w.text) for w in words) else NO_QUANTITY  # not "Mk4P", "V2.0"
            else:
                value = 1.25 if any(c.isdigit() for c in candidates[i].text) else 1.0  # answers carry values
            if holds_form_asked(candidates[i].text):
                value *= MEASURE_VALUE
            named = len(words) - bool(HEADING_NUMBER.fullmatch(words[0].text))  # "5.2 Narzędzie powiększenia"
            heading = 0.6 if named < 3 else 1.0  # a bare heading names a topic, it answers nothing
            prior = 1.0 + 0.15 * candidates[i].rank
            brevity = 0.9 ** (candidates[i].lines - 1)  # a longer quote must cover more to win
            news = 1.0 if stems[i] - query else NO_NEWS  # a line that only repeats the question tells nothing
            return coverage(i) * value * heading * brevity * news / prior  # earlier pages likelier hold the answer

        final = {i: lexical_score(i) for i in range(len(candidates))}
        final = {i: v for i, v in final.items() if v > 0}
        if self.similarity is not None and final:
            final = await self._rerank(question, candidates, final)
        order = sorted(final, key=lambda i: -final[i])
        procedure = asks_procedure(question)  # the steps follow the passage that matches
        chosen: list[Passage] = []
        for i in order:
            # further quotes only when not far behind the best: weak matches are noise
            if len(chosen) == MAX_QUOTES or final[i] < FURTHER_QUOTES * final[order[0]]:
                break
            quote = replace(
                candidates[i],
                words=complete_sentence(candidates[i].words, pages_lines[candidates[i].rank], steps=procedure),
            )
            if any(set(quote.words) & set(c.words) or fold(quote.text) == fold(c.text) for c in chosen):
                continue  # overlapping windows, or a drawing printed on two pages, would quote the same twice
            chosen.append(quote)
        limitations = []
        if not chosen:
            limitations.append("No passage on the retrieved pages matches the question.")
        if PRICE_WORDS.search(question) and not any(CURRENCY.search(p.text) for p in chosen):
            limitations.append("No price is stated on the retrieved pages.")
        elif chosen and measure and (missing := unstated_measure(question, measure, chosen)):
            limitations.append(missing)
        elif chosen and shortcut and not any(shortcut.search(p.text) for p in chosen):
            limitations.append("No keyboard shortcut is stated in the passages quoted.")
        if chosen and (elsewhere := unmentioned_subject(question, pages, chosen)):
            limitations.append(elsewhere)
        lines = [LOCAL_NOTICE, ""]
        for n, p in enumerate(chosen, 1):
            quote = in_bold([w.text for w in p.words], question, quantity)
            lines.append(f"{n}. {_column_names(p)}“{quote}” — **{literal(p.page.hit.title)}**, p. {p.page.hit.page}")
        if not chosen:
            lines.append("Nothing on the retrieved pages matches the question.")
        citations = tuple(DraftCitation(p.page.hit.doc_id, p.page.hit.page, p.text, p.box) for p in chosen)
        return Draft("\n".join(lines), citations, tuple(limitations), topic_of(question))

    async def read_streaming(
        self,
        question: str,
        pages: Sequence[ReaderPage],
        images: Sequence[QueryImage],
        on_text: Callable[[str], None],
        guidance: str = "",
    ) -> Draft:
        """Quotes are chosen all at once: the text arrives whole when they are."""
        draft = await self.read(question, pages, images)
        on_text(draft.markdown)
        return draft

    async def _rerank(self, question: str, candidates: list[Passage], lexical: dict[int, float]) -> dict[int, float]:
        """Blend the lexical score with the dense similarity over the lexical shortlist, both scaled to 0..1.
        The dense model reads each line of the shortlist once, with its frame ("Memory 32KB Flash", not
        "32KB Flash"), and a passage scores as its best line: its time goes with the words it reads, and the
        windows of the shortlist share most of their lines."""
        shortlist = sorted(lexical, key=lambda i: -lexical[i])[:SHORTLIST]
        texts = list(dict.fromkeys(t for i in shortlist for t in candidates[i].read_as))
        similar = dict(zip(texts, (float(d) for d in await asyncio.to_thread(self.similarity, question, texts))))
        dense = [max(similar[t] for t in candidates[i].read_as) for i in shortlist]
        low, spread = min(dense), (max(dense) - min(dense)) or 1.0
        top = lexical[shortlist[0]]
        return {
            i: (1 - DENSE_SHARE) * lexical[i] / top + DENSE_SHARE * (d - low) / spread for i, d in zip(shortlist, dense)
        }
