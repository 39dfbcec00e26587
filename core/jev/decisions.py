"""The Jev page selector's decisions, without HTTP: which pages to keep from the candidates' relevance
probabilities, whether a topic or task answer is confident enough to use, and the reader
instructions a task adds. core/jev/selector.py asks TypeSafe; this module decides what the answer does with it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from ..records import TOPICS

CANDIDATES = 8  # pages retrieved for Jev to judge when it is on (top_k of them are kept)
CONFIDENT = 0.65  # a topic or task below this changes nothing
# What a question asks for; keys are the `choice` labels sent to TypeSafe.
TASKS = ("explain", "find_document", "procedure", "compare", "other")
TASK_MEANING = {
    "explain": "explain how something works or what something means",
    "find_document": "find a particular document (a warranty, a manual, a data sheet)",
    "procedure": "give the steps of a procedure",
    "compare": "compare two or more products, options or values",
    "other": "anything else",
}
TOPIC_MEANING = {
    "warranty": "warranty terms, guarantees, coverage",
    "complaint": "a complaint or a problem the customer reports",
    "service": "service, maintenance or repair",
    "instructions": "how to install, set up or use a product",
    "price": "prices, costs, fees",
    "other": "anything else",
}
assert tuple(TOPIC_MEANING) == TOPICS
# Fixed instructions per task (the Gemini reader puts them in its prompt; the extractive reader has none).
GUIDANCE = {
    "procedure": "Give the procedure as numbered steps, in the documented order, one step per line, each "
    "cited; do not add steps the pages do not document.",
    "compare": "Compare along the dimensions the question names (for example price, size, power), one line "
    "or table row per dimension, each value cited; say which values the pages do not state.",
    "find_document": "The question asks for a particular document. If the pages are not that document (say "
    "the warranty or the manual is missing and only a brochure was found), say plainly that it "
    "is missing; do not answer from another kind of document instead.",
}


def probability(value: object) -> float | None:
    """A usable noul: a real number in 0..1 (a bool is not one)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    value = float(value)
    return value if math.isfinite(value) and 0.0 <= value <= 1.0 else None


def select(probabilities: Sequence[float], k: int) -> list[int]:
    """The positions (in dense order) of the `k` pages to keep: highest probability first, ties in the
    dense order. Stable by construction: the same probabilities always keep the same pages."""
    order = sorted(range(len(probabilities)), key=lambda i: (-probabilities[i], i))
    return order[:k]


def confident_choice(answer: object, labels: Sequence[str]) -> tuple[str | None, float | None]:
    """(label, confidence) of a choice answer when it is well formed and at least CONFIDENT; else the
    confidence alone (or nothing) so that the report can say why it was not used."""
    if not isinstance(answer, dict) or answer.get("type") != "choice":
        return None, None
    label, confidence = answer.get("choice"), probability(answer.get("confidence"))
    if label not in labels or confidence is None:
        return None, None
    return (label if confidence >= CONFIDENT else None), confidence


def guidance(task: str | None) -> str:
    """The reader instructions for a confident task; '' for none (the reader's usual instructions)."""
    return GUIDANCE.get(task or "", "")
