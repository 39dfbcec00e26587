"""Follow-up questions: thread history in, a standalone question (or a clarifying question) out.

History supplies references only; every answer reads fresh pages. This is the local heuristic;
the Gemini backend asks its model instead (core/backends/gemini/context.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher

from ...answering.history import trim_history
from ...language.follow_ups import ARTICLES, CONNECTORS, FOLLOW_UP_START, FUNCTION_WORDS, LEADING_PREPOSITIONS, PRONOUN
from ...language.names import QUESTION_WORDS, subject_runs
from ...language.names import bare as _bare
from ...records import Exchange, Resolution

SAME_SHAPE = 0.85  # ATmega16U2 ~ ATmega328P (0.9); Abmessungen ~ Pre-Processor (0.75) is chance
MAX_PHRASE_WORDS = 6  # "And the main ATmega328P?" is a phrase; longer follow-ups are questions


def subject_span(question: str) -> tuple[int, int] | None:
    """The span of the question's subject: the run that looks most like a product name (has a
    digit, like 'ATmega16U2' or 'Mk4P'), then the longest, then the first."""
    words = question.split()
    runs = subject_runs(question)
    if not runs:
        return None
    return max(runs, key=lambda r: (any(c.isdigit() for w in words[r[0] : r[1]] for c in w), r[1] - r[0], -r[0]))


def subject_of(question: str) -> str:
    """The subject's words, e.g. 'BTT SKR Mini E3 V2.0'."""
    span = subject_span(question)
    return " ".join(_bare(w) for w in question.split()[span[0] : span[1]]) if span else ""


def shape(text: str) -> str:
    """Letters and digits by class: 'ATmega16U2' -> 'AAaaaa99A9'."""
    return "".join("A" if c.isupper() else "a" if c.isalpha() else "9" if c.isdigit() else c for c in _bare(text))


def name_shaped(shaped: str) -> bool:
    """Whether a shape() is a name's: a digit, or a capital after the first letter."""
    return "9" in shaped or "A" in shaped[1:]


def asks(words: list[str]) -> bool:
    """Whether bare, lowercased words hold a question word (an article is none)."""
    return any(w in QUESTION_WORDS - ARTICLES for w in words)


def is_phrase(text: str) -> bool:
    """A short noun phrase with no question word: 'the main ATmega328P', 'der Pre-Processor'."""
    words = [_bare(w).lower() for w in text.split() if _bare(w)]
    return 0 < len(words) <= MAX_PHRASE_WORDS and not asks(words)


def carry_over(previous: str, phrase: str) -> str | None:
    """The previous question asked about `phrase` instead of its own subject: 'How much SRAM does the
    ATmega16U2 have?' + 'the main ATmega328P' -> 'How much SRAM does the main ATmega328P have?'."""
    words = previous.split()
    runs = subject_runs(previous)
    own = subject_span(phrase)
    span = subject_span(previous)  # None exactly when there are no runs
    if not runs or own is None or span is None:
        return None
    # The new subject stands in for a run shaped like it (D1 for U1, not UNO R3), else for the
    # previous question's subject.
    theirs = shape(" ".join(phrase.split()[own[0] : own[1]]))
    likeness = {r: SequenceMatcher(None, shape(" ".join(words[r[0] : r[1]])), theirs).ratio() for r in runs}
    best = max(runs, key=likeness.__getitem__)
    new = phrase.split()
    led = new[0].lower() in ARTICLES  # a whole noun phrase: "der Lichtbalken", "the main ATmega328P"
    # With no run shaped like it, a noun phrase stands in for the previous question's last noun phrase
    # ("der Blinker hinten links" in "Welcher Ausgang ist ab Werk der Blinker hinten links?").
    after_article = [r for r in runs if r[0] > 0 and words[r[0] - 1].lower() in ARTICLES]
    # Only a name's shape tells (digits, inner capitals: "Z-axis DIR", "ATmega16U2"); every German noun
    # and a Polish menu's "Edit" or "Trim" share a capital's shape by chance.
    shaped = likeness[best] >= SAME_SHAPE and name_shaped(theirs)
    start, end = best if shaped else after_article[-1] if led and after_article else span
    if own[1] < len(new) or (led and not shaped):
        # The phrase brings its own head noun ("the 5-channel pre-processor"), or is a noun phrase not
        # shaped like any name there: the old subject's noun phrase goes as a whole ("the Mk4P board
        # itself," or "der Blinker hinten links?"). One shaped like a name replaces just that name
        # ("the Z-axis DIR" for "the X-axis STEP" of "the X-axis STEP signal").
        end = _phrase_end(words, end)
    return _replaced(words, start, end, " ".join(new))


def _phrase_end(words: list[str], end: int) -> int:
    """Where a noun phrase going on from `end` stops: before a function word, or after punctuation."""
    while end < len(words) and _bare(words[end]).lower() not in FUNCTION_WORDS:
        end += 1
        if words[end - 1] != _bare(words[end - 1]):
            break
    return end


def _replaced(words: list[str], start: int, end: int, phrase: str) -> str:
    """The question `words` with words[start:end] replaced by `phrase`, its closing punctuation kept; an
    article before the old words gives way to the phrase's own ("the ATmega16U2" to "the main ATmega328P")."""
    if phrase.split()[0].lower() in ARTICLES and start > 0 and words[start - 1].lower() in ARTICLES:
        start -= 1
    ending = words[end - 1][len(words[end - 1].rstrip("?,.;:!")) :]
    return " ".join(words[:start] + [phrase + ending] + words[end:])


def swap_phrase(previous: str, phrase: str) -> str | None:
    """A follow-up phrase that shares its first or its last word with the previous question replaces the
    noun phrase that word stands in: 'Do czego służy narzędzie Koperta?' + 'narzędzie powiększenia' ->
    'Do czego służy narzędzie powiększenia?'; 'What is the input voltage of the HF-300?' + 'the output
    voltage' -> 'What is the output voltage of the HF-300?'. None when it shares neither."""
    words = previous.split()
    bare = [_bare(w).lower() for w in words]
    content = [w for w in (_bare(w).lower() for w in phrase.split()) if w not in ARTICLES]
    if not content or not words:
        return None
    if content[0] in bare and content[0] not in FUNCTION_WORDS:
        start = bare.index(content[0])
        end = _phrase_end(words, start)
    elif content[-1] in bare and content[-1] not in FUNCTION_WORDS:
        end = bare.index(content[-1]) + 1
        start = end - 1
        while start > 0 and bare[start - 1] not in FUNCTION_WORDS and words[start - 1] == _bare(words[start - 1]):
            start -= 1  # back to a function word or punctuation
    else:
        return None
    return _replaced(words, start, end, phrase)


def swap_modifier(previous: str, phrase: str) -> str | None:
    """A follow-up that is a prepositional phrase with no question word replaces the previous question's
    phrase opened by the same preposition, up to its end: 'What resistor do I need for one orange LED at
    6 V?' + 'for a light bar of six white LEDs' -> 'What resistor do I need for a light bar of six white
    LEDs?'. None when the phrase is no such modifier or the previous question has no such phrase."""
    bare = [_bare(w).lower() for w in phrase.split()]
    if len(bare) < 2 or bare[0] not in LEADING_PREPOSITIONS or asks(bare):
        return None
    words = previous.split()
    at = next((i for i, w in enumerate(words) if i > 0 and _bare(w).lower() == bare[0]), None)
    return _replaced(words, at, len(words), phrase) if at is not None else None


def opens_follow_up(question: str) -> bool:
    """Whether the question starts like a follow-up ("And …", "Und …", "A …"). Polish "i" (and) is taken
    as one only in a short question: a long one starting "I" is an English sentence ("I hooked a servo …")."""
    opener = FOLLOW_UP_START.match(question)
    return opener is not None and not (opener.group(1).lower() == "i" and len(question.split()) > 2 * MAX_PHRASE_WORDS)


def is_follow_up(question: str) -> bool:
    return opens_follow_up(question) or bool(PRONOUN.search(question)) or len(question.split()) <= 3


class HeuristicResolver:
    """Carries the previous subject into a follow-up: 'And its width?' -> 'And the width of UNO R3?'."""

    def __init__(self, exchanges: int = 4, chars: int = 12_000):
        self.exchanges, self.chars = exchanges, chars

    async def resolve(self, question: str, history: Sequence[Exchange]) -> Resolution:
        history = trim_history(history, self.exchanges, self.chars)
        if not is_follow_up(question):
            return Resolution(question)
        opener = opens_follow_up(question)
        if not history and (not opener or subject_of(question)):
            # A first question's "it"/"this" points inside the question itself ("Is the X waterproof? How
            # should it be protected?", "I want to program my Uno: how do I hook it up?") or at an attached
            # screenshot: nothing to resolve.
            return Resolution(question)
        if history and not opener and subject_of(question):
            return Resolution(question)  # names its own subject: a new question, not a follow-up
        body = FOLLOW_UP_START.sub("", question).strip() if opener else question.strip()
        previous = (history[-1].interpreted or history[-1].question) if history else ""
        new_subject = subject_of(body) if history and not PRONOUN.search(body) else ""
        if new_subject and is_phrase(body):
            # A phrase naming a new subject takes over the previous question's ask ("And the main
            # ATmega328P?" after "How much SRAM does the ATmega16U2 have?").
            words = body.split()
            if _bare(words[0]).lower() in LEADING_PREPOSITIONS and len(words) > 1:
                body = " ".join(words[1:])
            carried = carry_over(previous, body.rstrip("?!. "))
            return Resolution(carried or body[0].upper() + body[1:])
        if history and opener and (modified := swap_modifier(previous, body.rstrip("?!. "))):
            return Resolution(modified)  # "And for a light bar of six LEDs?" after "What resistor … for one LED?"
        if any(c.isdigit() for c in new_subject):
            return Resolution(body[0].upper() + body[1:])  # a whole question about another model
        if (
            history
            and is_phrase(body)
            and not PRONOUN.search(body)
            and (swapped := swap_phrase(previous, body.rstrip("?!. ")))
        ):
            return Resolution(swapped)  # "A narzędzie powiększenia?" after "Do czego służy narzędzie Koperta?"
        subject = next((s for ex in reversed(history) if (s := subject_of(ex.interpreted or ex.question))), "")
        if not subject:  # a pronoun with nothing to point at: ask rather than guess
            if PRONOUN.search(question):
                return Resolution(question, clarify="Which product or document do you mean? Please name it.")
            return Resolution(question)
        if subject.lower() in question.lower():
            return Resolution(question)
        if PRONOUN.search(body):
            body = PRONOUN.sub(
                lambda m: subject + ("'s" if m.group(0).lower() in ("its", "their") else ""), body, count=1
            )
            return Resolution(body[0].upper() + body[1:])
        body_words = set(body.lower().split())
        connector = next((word for word, cues in CONNECTORS if body_words & cues), "of")
        body = body[0].upper() + body[1:]
        return Resolution(f"{body.rstrip('?')} {connector} {subject}?")
