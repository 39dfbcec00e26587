"""How the extractive reader scores the candidate passages against a question, and which of them it quotes.

A passage scores by lexical coverage: the share of the question's weight its terms hold. Rare terms weigh
more, and words of the documents' titles less, for they pick the document, not the passage within it. A
passage is matched together with its frame (layout.py: the headings above it, its table's header row), so a
value that repeats none of the question's words is still found; a line that only repeats the question's
words is worth less, for it tells nothing. A product's name counts once however many words it has
(concepts), so the lines that repeat it do not outweigh the line holding the word asked about. A field the
question names ("supply voltage") is found under its name in the page's own language too
("Versorgungsspannung": field_names.py), at a lower weight; never in a third language, whose lines (a
datasheet's French safety notes) answer nothing. The kind of answer asked for (question_kind.py) weighs in:
a number for "how much", and more so the form asked for (a current for "how much current", a count of the
outputs for "how many outputs", a key combination for "which shortcut"). Earlier pages and shorter passages
are likelier answers. The local dense model, when given, rereads a shortlist and blends in. A drawing's
labels read in a row ("XM YM ZAM ZBM EM Motor Driver 2B1B1A2A EN STEP DIR PA4") repeat the names a question
holds, so both signals like them; they come after the plain passages unless the question names one of
the labels. Up to three passages are quoted, each widened to its sentence (sentences.py): further ones only
when not far behind the first, and none twice.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from ...language.field_names import field_names_in, language_of, name_in
from ...language.fold import fold
from ...language.names import bare, name_runs
from ...language.question_kind import asked_measure, asked_shortcut, asks_procedure, asks_quantity, counted
from ...language.tokens import content_tokens, search_terms, stem
from ...records import ReaderPage
from .answer_span import is_number
from .passages import Passage, PrintedLine
from .sentences import HEADING_NUMBER, complete_sentence

MAX_QUOTES = 3
FRAME_SHARE = 0.6  # a question word in a line's headings or table header counts this much of one in the line
NO_NEWS = 0.5
FURTHER_QUOTES = 0.5  # a second or third quote scores at least this share of the first
TRANSLATED = 0.3  # of a question word's weight: its field's name in the page's language, standing in for it
QUANTITY_VALUE, NO_QUANTITY = 1.6, 0.7  # for a question that asks how much: a passage with a number, without
MEASURE_VALUE = 1.3  # more for the form asked for: a value of the measure named ("how much current": "410mA", not
# "20 MHz"), a count of the things named, a key combination for a shortcut
SOUP, SOUP_CODES, SOUP_SHARE = 0.5, 6, 0.7  # a drawing's labels read in a row (at least SOUP_CODES words, and
# SOUP_SHARE of its words, are codes) are worth this share of a plain passage, unless the question names a label
SHORTLIST = 24  # passages the dense model rereads, each of their lines once
DENSE_SHARE = 0.3  # of the blended passage score; lexical coverage stays the main signal

Similarity = Callable[[str, list[str]], np.ndarray]


@dataclass(frozen=True)
class Asked:
    """The kind of answer a question asks for (question_kind.py)."""

    quantity: bool  # "how much", "wie groß": a number answers it
    measure: tuple[str, re.Pattern] | None  # the measure it names: its name, and how a value of it is printed
    count: re.Pattern | None  # "how many <things>": how a count of them is printed (folded)
    shortcut: re.Pattern | None  # a keyboard shortcut: how a key combination is printed
    procedure: bool  # "how do I": the steps follow the passage that matches

    @classmethod
    def of(cls, question: str) -> Asked:
        """What `question` asks for."""
        return cls(
            asks_quantity(question),
            asked_measure(question),
            counted(question),
            asked_shortcut(question),
            asks_procedure(question),
        )


@dataclass(frozen=True)
class Matching:
    """The question's terms and their weights, and the terms each candidate passage holds."""

    query: set[str]
    weight: dict[str, float]
    total: float  # of the weights, 1.0 when they are all 0
    stems: list[set[str]]  # of each candidate, by its index
    framed: list[set[str]]  # of each candidate's frame
    fields: list[list[tuple[set[str], set[str]]]]  # by page rank: (a field's name there, the question's terms for it)
    codes: set[str]  # the terms of the codes the question names ("E0", "STEP"), not of a product's name


async def score_passages(
    question: str,
    query: set[str],
    asked: Asked,
    candidates: list[Passage],
    pages: Sequence[ReaderPage],
    similarity: Similarity | None,
) -> dict[int, float]:
    """The score of each candidate that matches the question at all, by its index: lexical, and reranked by
    the dense model when there is one."""
    matching = match_terms(question, query, candidates, pages)
    scores = {i: lexical_score(matching, asked, p, i) for i, p in enumerate(candidates)}
    scores = {i: v for i, v in scores.items() if v > 0}
    if similarity is not None and scores:
        scores = await dense_rerank(similarity, question, candidates, scores)
    soups = {i for i in scores if label_soup(candidates[i])}
    if any(matching.codes & matching.stems[i] for i in soups):
        return scores  # the question asks about a drawing's labels ("which pin is STEP"): any of them may answer
    return after_the_plain_passages(scores, soups)


def after_the_plain_passages(scores: dict[int, float], soups: set[int]) -> dict[int, float]:
    """A drawing's label soup never leads while a plain passage matches: it scores at most SOUP of the best
    of them. The labels repeat the question's names, which both the coverage and the dense model count."""
    best_plain = max((v for i, v in scores.items() if i not in soups), default=None)
    if best_plain is None:
        return scores
    return {i: SOUP * min(v, best_plain) if i in soups else v for i, v in scores.items()}


def match_terms(question: str, query: set[str], candidates: list[Passage], pages: Sequence[ReaderPage]) -> Matching:
    """The terms of the query, of each candidate and of its frame, with the query terms' weights."""
    stems = [inflected(search_terms(p.text), query) for p in candidates]
    titles = {stem(t) for rp in pages for t in content_tokens(rp.hit.title)}
    weight = term_weights(question, query, titles, stems)
    total = sum(weight.values()) or 1.0
    codes = asked_codes(question, titles)
    return Matching(
        query, weight, total, stems, frame_terms(candidates, query), translated_fields(question, query, pages), codes
    )


def asked_codes(question: str, titles: set[str]) -> set[str]:
    """The terms of the codes `question` asks about ("E0", "STEP"), not those of a product's name ("SKR Mini E3
    V2.0": a name of three words or more, or one in the documents' titles)."""
    words = question.split()
    in_names = {i for a, b in name_runs(question) if b - a >= 3 for i in range(a, b)}
    parts = [part for i, w in enumerate(words) if i not in in_names for part in re.split(r"[-/]", bare(w))]
    codes = [search_terms(part) for part in parts if is_code(part)]  # "USB" of "USB-Datenleitungen" too
    return {t for terms in codes if not terms & titles for t in terms}


def frame_terms(candidates: list[Passage], query: set[str]) -> list[set[str]]:
    """The terms of each candidate's frame (its headings and table header), by its index."""
    of_frame = {
        f: inflected(search_terms(" ".join(w.text for w in f)), query) for f in {p.frame for p in candidates}
    }  # windows of one line share its frame
    return [of_frame[p.frame] for p in candidates]


def term_weights(question: str, query: set[str], titles: set[str], stems: list[set[str]]) -> dict[str, float]:
    """Each query term's weight: its rarity among the candidates' `stems`, less for a word of the documents'
    titles, and shared among the terms of one concept."""
    weight = {t: math.log(1 + len(stems) / (1 + sum(t in s for s in stems))) for t in query}
    # Words of the documents' titles pick the document, not the passage within it.
    weight = {t: w * (0.3 if t in titles else 1.0) for t, w in weight.items()}
    # A concept counts once, as much as its rarest term: the terms of a name share that weight.
    for group in concepts(question, query):
        share = max(weight[t] for t in group) / (sum(weight[t] for t in group) or 1.0)
        weight.update({t: weight[t] * share for t in group})
    return weight


def concepts(question: str, query: set[str]) -> list[set[str]]:
    """The question's terms (`query`, stemmed) grouped by what they name: a name of several words, or an
    identifier and its parts, is one concept ("SKR Mini E3 V2.0": skr, mini, e3, v2, 2.0), so that a line
    repeating a product's name does not outweigh the line holding the one word asked about. Names are
    told by their shape (capitals, digits: names.name_runs), so this holds in any language."""
    words = question.split()
    runs = name_runs(question)  # none in a question typed in capitals: only identifiers are grouped then
    in_run = {i for a, b in runs for i in range(a, b)}
    groups: list[set[str]] = []
    seen: set[str] = set()
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


def translated_fields(
    question: str, query: set[str], pages: Sequence[ReaderPage]
) -> list[list[tuple[set[str], set[str]]]]:
    """For each page, the fields the question names ("supply voltage"), each as its name in the page's own
    language ("Versorgungsspannung") with the question's terms it stands in for; none on a page of no known
    language."""
    fields = [(concept, asked & query) for concept, asked in field_names_in(question) if asked & query]
    languages = [language_of(rp.page.text) if fields else None for rp in pages]
    return [[(name_in(c, lang), asked) for c, asked in fields] if lang else [] for lang in languages]


def coverage(m: Matching, i: int, rank: int) -> float:
    """The share of the query's weight candidate i holds: in its lines, less in its frame, and less again in the
    names its page (of that rank) gives the question's fields."""
    weight = m.weight
    own = m.query & m.stems[i]
    covered = sum(weight[t] for t in own) + FRAME_SHARE * sum(weight[t] for t in (m.query & m.framed[i]) - own)
    if fields_here := m.fields[rank]:
        around = m.stems[i] | m.framed[i]
        for name, asked in fields_here:
            if name and name <= around and not asked & around:
                share = 1.0 if name <= m.stems[i] else FRAME_SHARE
                covered += TRANSLATED * share * sum(weight[t] for t in asked)
    return covered / m.total


def lexical_score(m: Matching, asked: Asked, p: Passage, i: int) -> float:
    """Candidate i's lexical score: its coverage, weighed by the kind of answer it holds, its length, whether it
    tells anything new, and its page's rank."""
    named = len(p.words) - bool(HEADING_NUMBER.fullmatch(p.words[0].text))  # "5.2 Narzędzie powiększenia"
    bare = 0.6 if named < 3 else 1.0  # a bare heading names a topic, it answers nothing
    prior = 1.0 + 0.15 * p.rank
    brevity = 0.9 ** (p.lines - 1)  # a longer quote must cover more to win
    news = 1.0 if m.stems[i] - m.query else NO_NEWS  # a line that only repeats the question tells nothing
    value = answer_value(asked, p)
    return coverage(m, i, p.rank) * value * bare * brevity * news / prior  # earlier pages likelier hold the answer


def is_code(text: str) -> bool:
    """A label's shape on a drawing: capitals and digits, no lowercase letter ("ZAM", "PA4", "2B1B1A2A")."""
    return any(c.isupper() or c.isdigit() for c in text) and not any(c.islower() for c in text) and not is_number(text)


def label_soup(p: Passage) -> bool:
    """Whether a passage is a drawing's labels read in a row ("XM YM ZAM ZBM EM Motor Driver 2B1B1A2A EN STEP
    DIR PA4"): mostly codes."""
    codes = sum(is_code(w.text) for w in p.words)
    return codes >= SOUP_CODES and codes >= SOUP_SHARE * len(p.words)


def answer_value(asked: Asked, p: Passage) -> float:
    """What a passage's content is worth as the kind of answer asked for: a number, the more so the form asked."""
    if asked.quantity:  # "how much", "wie groß": a number answers it
        value = QUANTITY_VALUE if any(is_number(w.text) for w in p.words) else NO_QUANTITY  # not "Mk4P", "V2.0"
    else:
        value = 1.25 if any(c.isdigit() for c in p.text) else 1.0  # answers carry values
    if holds_form_asked(asked, p.text):
        value *= MEASURE_VALUE
    return value


def holds_form_asked(asked: Asked, text: str) -> bool:
    """Whether `text` holds a value of the measure named, a count of the things named, or a key combination."""
    return bool(
        asked.measure
        and asked.measure[1].search(text)
        or asked.count
        and asked.count.search(fold(text))
        or asked.shortcut
        and asked.shortcut.search(text)
    )


async def dense_rerank(
    similarity: Similarity, question: str, candidates: list[Passage], lexical: dict[int, float]
) -> dict[int, float]:
    """The lexical shortlist's scores blended with the dense similarity, both scaled to 0..1.
    The dense model reads each line of the shortlist once, with its frame ("Memory 32KB Flash", not
    "32KB Flash"), and a passage scores as its best line: its time goes with the words it reads, and the
    windows of the shortlist share most of their lines."""
    shortlist = sorted(lexical, key=lambda i: -lexical[i])[:SHORTLIST]
    texts = list(dict.fromkeys(t for i in shortlist for t in candidates[i].read_as))
    similar = dict(zip(texts, (float(d) for d in await asyncio.to_thread(similarity, question, texts))))
    dense = [max(similar[t] for t in candidates[i].read_as) for i in shortlist]
    low, spread = min(dense), (max(dense) - min(dense)) or 1.0
    top = lexical[shortlist[0]]
    return {
        i: (1 - DENSE_SHARE) * lexical[i] / top + DENSE_SHARE * (d - low) / spread for i, d in zip(shortlist, dense)
    }


def choose_quotes(
    scores: dict[int, float], candidates: list[Passage], printed: list[list[PrintedLine]], procedure: bool
) -> list[Passage]:
    """Up to MAX_QUOTES of the best-scoring candidates, each widened to its sentence: further ones only when
    not far behind the best (weak matches are noise), and none that repeats one already chosen."""
    pages_lines = [[ln.words for ln in page] for page in printed]
    order = sorted(scores, key=lambda i: -scores[i])
    chosen: list[Passage] = []
    for i in order:
        if len(chosen) == MAX_QUOTES or scores[i] < FURTHER_QUOTES * scores[order[0]]:
            break
        quote = replace(
            candidates[i],
            words=complete_sentence(candidates[i].words, pages_lines[candidates[i].rank], steps=procedure),
        )
        if any(set(quote.words) & set(c.words) or fold(quote.text) == fold(c.text) for c in chosen):
            continue  # overlapping windows, or a drawing printed on two pages, would quote the same twice
        chosen.append(quote)
    return chosen
