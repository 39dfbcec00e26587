"""What the extractive reader's answer owns up to: what the passages it quotes leave unsaid.

A quoting reader cannot tell "not stated" from "worded differently", but it can tell when its quotes hold no
answer of the kind asked for. The answer says so when no passage matches; when the question asks a price and
no quote states one in a currency; when it names a measure and no quote gives a value of it under the
conditions the question states, or asks for a shortcut and no quote holds a key combination; and when the
first quote comes from a document that never mentions the product asked about, though another retrieved one
does.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...language.question_kind import VALUE, stated_values
from ...language.tokens import search_terms
from ...language.topics import CURRENCY, PRICE_WORDS
from ...records import ReaderPage
from .context import subject_of
from .passage_scoring import Asked
from .passages import Passage


def limitations(question: str, pages: Sequence[ReaderPage], chosen: Sequence[Passage], asked: Asked) -> tuple[str, ...]:
    """The limitations the answer quoting `chosen` states, in the order it states them."""
    out = []
    if not chosen:
        out.append("No passage on the retrieved pages matches the question.")
    if unanswered := unanswered_kind(question, chosen, asked):
        out.append(unanswered)
    if chosen and (elsewhere := unmentioned_subject(question, pages, chosen)):
        out.append(elsewhere)
    return tuple(out)


def unanswered_kind(question: str, chosen: Sequence[Passage], asked: Asked) -> str:
    """The limitation when the quotes hold no answer of the kind asked for (a price, a value of the measure
    named, a keyboard shortcut), the first of these that applies; "" when they do."""
    if PRICE_WORDS.search(question) and not any(CURRENCY.search(p.text) for p in chosen):
        return "No price is stated on the retrieved pages."
    if chosen and asked.measure and (missing := unstated_measure(question, asked.measure, chosen)):
        return missing
    if chosen and asked.shortcut and not any(asked.shortcut.search(p.text) for p in chosen):
        return "No keyboard shortcut is stated in the passages quoted."
    return ""


def unstated_measure(question: str, measure: tuple[str, re.Pattern], chosen: Sequence[Passage]) -> str:
    """The limitation when no quote gives a value of the measure asked for under the conditions the question
    states: "261mA" on the +5V row is no answer to "the current from the 3.3 V pin"."""
    conditions = stated_values(question)
    giving = [p for p in chosen if measure[1].search(p.text)]
    if any(conditions <= stated_values(p.text) for p in giving):
        return ""
    under = f"for {', '.join(m.group(0) for m in VALUE.finditer(question))} " if giving else ""
    return f"No {measure[0]} value {under}is stated in the passages quoted."


def unmentioned_subject(question: str, pages: Sequence[ReaderPage], chosen: Sequence[Passage]) -> str:
    """When the question names a product that the first quote's document never mentions, though another
    retrieved one does (the "operating temperature of the light controller" quoted from a board's
    datasheet): saying so, and which document does. A document mentions it in its title or on a page read."""
    subject = subject_of(question)
    wanted = search_terms(subject)
    if not wanted:
        return ""
    said: dict[str, set[str]] = {}
    for rp in pages:
        said.setdefault(rp.hit.doc_id, search_terms(rp.hit.title))
        said[rp.hit.doc_id] |= search_terms(rp.page.text)
    first = chosen[0].page.hit
    mentioning = next((rp.hit.title for rp in pages if wanted <= said[rp.hit.doc_id]), None)
    if wanted <= said[first.doc_id] or mentioning is None:
        return ""
    return f"The first passage quoted is from {first.title}, which does not mention “{subject}”; {mentioning} does."
