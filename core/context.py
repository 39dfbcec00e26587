"""Follow-up questions: thread history in, a standalone question (or a clarifying question) out.

History supplies references only; every answer reads fresh pages. The Gemini resolver (one small
text-only call) lives in core/gemini.py; this module holds the local heuristic and the trimming
both use.
"""
from __future__ import annotations

import re
from typing import Sequence

from .backends import Resolution
from .records import Exchange

FOLLOW_UP_START = re.compile(
    r"^\s*(and|also|what about|how about|und|und was|was ist mit|a|i|oraz|a co z|a jak)\b[\s,]*", re.I
)
PRONOUN = re.compile(
    r"\b(it|its|it's|they|them|their|this one|that one|es|sein|seine|seinen|seiner|ihr|ihre|dessen|jego|jej|ich|"
    r"ten|tego|tej)\b",
    re.I,
)
QUESTION_WORDS = {"what", "which", "who", "how", "where", "when", "why", "does", "do", "is", "are", "can",
                  "was", "wie", "wo", "welche", "welcher", "welches", "wann", "warum", "ist", "sind", "kann",
                  "jak", "jaki", "jaka", "jakie", "gdzie", "kiedy", "czy", "ile", "co", "the", "a", "an", "and"}
NAME_TOKEN = re.compile(r"^(?=.*[A-Z0-9])[\w.\-/+®™]+$")
# How "the width ___ UNO R3" is joined in each language; a follow-up is guessed German or Polish by
# its function words, English otherwise.
CONNECTORS = (
    ("von", {"der", "die", "das", "ist", "sind", "wie", "welche", "welcher", "welches", "und", "groß", "hoch", "breit"}),
    ("dla", {"jaki", "jaka", "jakie", "jest", "są", "ile", "czy", "jak", "gdzie", "który", "która", "które"}),
)


def trim_history(history: Sequence[Exchange], exchanges: int = 4, chars: int = 12_000) -> list[Exchange]:
    """The latest `exchanges` exchanges whose text fits in `chars`, oldest first."""
    kept, used = [], 0
    for ex in reversed(history[-exchanges:] if exchanges else []):
        size = len(ex.question) + len(ex.interpreted) + len(ex.answer)
        if used + size > chars:
            break
        kept.append(ex)
        used += size
    return list(reversed(kept))


def subject_of(question: str) -> str:
    """The longest run of name-like words (capitals or digits), e.g. 'BTT SKR Mini E3 V2.0'."""
    best: list[str] = []
    run: list[str] = []
    for raw in question.split():
        word = raw.strip("?,.;:!()\"'“”")
        if word and NAME_TOKEN.match(word) and word.lower() not in QUESTION_WORDS:
            run.append(word)
            if len(run) > len(best):
                best = list(run)
        else:
            run = []
    return " ".join(best)


def is_follow_up(question: str) -> bool:
    return bool(FOLLOW_UP_START.match(question) or PRONOUN.search(question)) or len(question.split()) <= 3


class HeuristicResolver:
    """Carries the previous subject into a follow-up: 'And its width?' -> 'And the width of UNO R3?'."""

    def __init__(self, exchanges: int = 4, chars: int = 12_000):
        self.exchanges, self.chars = exchanges, chars

    async def resolve(self, question: str, history: Sequence[Exchange]) -> Resolution:
        history = trim_history(history, self.exchanges, self.chars)
        if not is_follow_up(question):
            return Resolution(question)
        opener = bool(FOLLOW_UP_START.match(question))
        if not history and not opener:
            # A first question's "it"/"this" points inside the question itself ("Is the X waterproof? How
            # should it be protected?") or at an attached screenshot: nothing to resolve.
            return Resolution(question)
        if history and not opener and subject_of(question):
            return Resolution(question)  # names its own subject: a new question, not a follow-up
        subject = next((s for ex in reversed(history) if (s := subject_of(ex.interpreted or ex.question))), "")
        if not subject:  # a pronoun with nothing to point at: ask rather than guess
            if PRONOUN.search(question):
                return Resolution(question, clarify="Which product or document do you mean? Please name it.")
            return Resolution(question)
        if subject.lower() in question.lower():
            return Resolution(question)
        body = FOLLOW_UP_START.sub("", question).strip()
        if PRONOUN.search(body):
            body = PRONOUN.sub(lambda m: subject + ("'s" if m.group(0).lower() in ("its", "their") else ""), body, count=1)
            return Resolution(body[0].upper() + body[1:])
        words = set(body.lower().split())
        connector = next((word for word, cues in CONNECTORS if words & cues), "of")
        body = body[0].upper() + body[1:]
        return Resolution(f"{body.rstrip('?')} {connector} {subject}?")
