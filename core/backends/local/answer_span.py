"""What kind of answer a question asks for, and where in a quoted passage that answer is.

The kind comes from the question's interrogative ("how much", "wie viel", "ile", "combien", "quanto") or
the measured property it names, listed for many languages, not only the corpus's; the span comes from
the passage's shape alone: a number with its unit or range, or an identifier that mixes letters and
digits ("TMC2209", "PB13", "A4/SDA"). Among the spans of the expected kind, the one printed nearest the
question's own words (the label beside the value) is the answer.
"""
from __future__ import annotations

import re
from typing import Sequence

from ...records import Word
from ...text import content_tokens, fold, stem

# Folded cues, matched at word starts. Interrogatives first, then the properties people ask a value of.
QUANTITY_CUES = (
    "how much", "how many", "how long", "how big", "how large", "how far", "how high", "how heavy", "how fast",
    "wie viel", "wieviel", "wie lange", "wie gross", "wie weit", "wie hoch", "wie schwer", "wie schnell",
    "ile ", "jak dlug", "jak duz", "jak dalek", "jak wysok", "combien", "quelle taille", "quelle tension",
    "quanto", "quanti", "quanta", "quante", "cuanto", "cuanta", "hoeveel", "hoe lang", "hoe groot",
    "voltage", "current", "temperature", "size", "dimension", "diameter", "distance", "spacing", "resistor value",
    "resistance", "baud", "capacity", "weigh", "frequency", "rate", "maximum", "minimum", "at most", "at least", "range",
    "hochstens", "mindestens", "maximal", "minimal", "bereich", "maksymaln", "minimaln", "zakres", "massim",
    "minim", "maximo", "au moins", "au plus", "plage",
    "spannung", "strom", "temperatur", "abmessung", "durchmesser", "abstand", "widerstand", "frequenz",
    "napiec", "prad", "wymiar", "rozmiar", "srednic", "odleglos", "czestotliw", "rezystanc",
    "tension", "courant", "taille", "diametre", "resistance", "frequence", "tensione", "corrente", "dimension",
    "tamano", "voltaje", "corriente", "spanning", "stroom", "afmeting",
)
IDENTIFIER_CUES = (
    "which", "what model", "what part", "what chip", "what kind", "what type", "what is the name", "what version",
    "welche", "welcher", "welches", "jaki", "jaka", "jakie", "ktory", "ktora", "ktore", "quel", "quelle",
    "quale", "quali", "cual", "welk", "qual",
    "model", "part", "chip", "pin", "driver", "component", "connector", "header", "version", "format",
    "typ", "bauteil", "stecker", "anschluss", "ausgang", "treiber", "uklad", "zlacze", "wersj", "sterownik",
    "modele", "composant", "broche", "pilote", "modello", "componente", "versione",
)
UNIT = re.compile(r"^[(\[]?(?:[^\W\d_]{1,5}|[°µΩ%][^\W\d_]{0,3}|ohm|ohms|volts?)[)\],;:.]?$", re.I)
NUMBER = re.compile(r"^[(\[]?[-+±~≈Ø]?\d+(?:[.,]\d+)?(?:[^\W\d_°µΩ%/]{0,5}|[°µΩ%][^\W\d_]{0,3})?"
                    r"(?:(?:-|–|\.\.|/|~)[-+]?\d+(?:[.,]\d+)?(?:[^\W\d_°µΩ%]{0,4}|[°µΩ%][^\W\d_]{0,3}))*[)\],;:.]?$")
JOINERS = {"-", "–", "..", "to", "bis", "do", "à", "a", "×", "x", "~", "...", "…"}
IDENTIFIER = re.compile(r"^[(\[]?(?:[^\W_]*(?:[^\W\d_]\d|\d[^\W\d_])[^\W_]*(?:[-_/+.][^\W_]+)*"
                        r"|[^\W\d_]+[-_/+][^\W_]+(?:[-_/+][^\W_]+)*)[)\],;:.]?$")


def _has(text: str, cues: Sequence[str]) -> bool:
    q = " " + re.sub(r"[^\w ]+", " ", fold(text)) + " "
    return any(" " + cue in q for cue in cues)


def answer_kind(question: str) -> str:
    """"quantity" (a number with a unit), "identifier" (a code or name), or "other"."""
    if _has(question, QUANTITY_CUES):
        return "quantity"
    if _has(question, IDENTIFIER_CUES):
        return "identifier"
    return "other"


def _is_identifier(text: str) -> bool:
    bare = text.strip("()[],;:.")
    if NUMBER.match(text) or len(bare) < 2:
        return False
    return bool(IDENTIFIER.match(text)) and (any(c.isdigit() for c in bare) or bare.upper() == bare
                                             or bool(re.search(r"[a-z][A-Z]", bare)))


def spans(words: Sequence[Word], kind: str, asked: set[str]) -> list[tuple[int, int]]:
    """[start, end) word ranges holding an answer of `kind` that the question did not already say."""
    out, i = [], 0
    texts = [w.text for w in words]
    while i < len(texts):
        end = i
        if kind == "quantity" and NUMBER.match(texts[i]):
            end = i + 1
            while end < len(texts):
                if texts[end] in JOINERS and end + 1 < len(texts) and NUMBER.match(texts[end + 1]):
                    end += 2
                elif UNIT.match(texts[end]) and not end - i > 4 and fold(texts[end]) not in JOINERS:
                    end += 1
                    break
                else:
                    break
        elif kind == "identifier" and _is_identifier(texts[i]):
            end = i + 1
        if end > i:
            said = {stem(t) for t in content_tokens(" ".join(texts[i:end]))}
            if not said <= asked or not said:
                out.append((i, end))
            i = end
        else:
            i += 1
    return out


def best_span(words: Sequence[Word], kind: str, weight: dict[str, float]) -> tuple[tuple[int, int], float] | None:
    """The span printed nearest the question's words (the value beside its label, on the same row if it
    can), with its closeness to them: 1.0 when the rarest words are right beside it, 0 when none is near."""
    found = spans(words, kind, set(weight))
    if not found:
        return None
    hits = [(j, weight[s]) for j, w in enumerate(words) for s in {stem(t) for t in content_tokens(w.text)} if s in weight]

    def closeness(span: tuple[int, int]) -> float:
        a, b = span
        line = {words[k].line for k in range(a, b)}
        # a question word inside the span ("32KB Flash" for "flash") is its label: distance 0
        return sum(wt / (1 + max(a - j, j - b + 1, 0)) * (1.5 if words[j].line in line else 1.0) for j, wt in hits)

    best = max(found, key=lambda s: (closeness(s), -s[0]))
    return best, min(1.0, closeness(best) / (1.5 * (max(weight.values(), default=0) or 1.0)))


def bolded(words: Sequence[Word], span: tuple[int, int] | None) -> str:
    texts = [w.text for w in words]
    if span is None:
        return " ".join(texts)
    a, b = span
    return " ".join(texts[:a] + [f"**{' '.join(texts[a:b])}**"] + texts[b:])
