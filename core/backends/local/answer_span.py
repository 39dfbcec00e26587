"""The answer within a quoted passage, to print in bold: the number with its unit, or what it counts,
that a question of quantity asks for ("16 A", "62 × 27.5 × 9.5mm", "24 months"), and for other questions
also a model code the question does not name already ("TMC2209"). Words are told apart by their shape
alone (digits, letters), so this holds in any language; a passage with many such words (a pin table)
gets no bold, for bolding everything points at nothing.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...language.fold import fold
from ...language.stopwords import STOPWORDS
from ...markup import literal

MAX_SPANS = 4
# a number, with its unit when printed together: "16", "-40", "0,8", "9.5mm", "16-bit", "32KB"; not "Mk4P",
# "3.For" (a list number glued to a word) nor "2." (a list number)
NUMBER = re.compile(r"[(\[~≈±<>≤≥+\-−]?\d+([.,:/]\d+)*(-?[^\W\d_]{1,4}|%|‰|°\w{0,2})?[)\]]?[,;:]?")
LIST_NUMBER = re.compile(r"\d{1,2}[.)]")
SECTION_NUMBER = re.compile(r"\d+(\.\d+)+\.?")  # "5.4 Board Outline": a heading's number, not a value
UNIT_ATTACHED = re.compile(r"\d[^\W\d_]")  # "32KB", "9.5mm": the unit is there already
CODE = re.compile(r"^(?=\w*[^\W\d_])(?=\w*\d)\w{3,}$")  # letters and digits together: R200, STM32F103RCT6
UNIT = re.compile(r"^(%|‰|°\w{0,2}|[^\W\d_]{1,4})$")  # what may follow a number: A, mm, KB, °C, %
JOINER = {"×", "x", "X", "*", "/", "-", "–", "~", "±"}  # between two numbers: one value ("62 × 27.5")
TRAILING = ",.;:)]”\"'"


def is_number(word: str) -> bool:
    """Whether a printed word is a number, its unit attached or not; the reader's quantity preference uses it too."""
    return bool(NUMBER.fullmatch(word.rstrip("."))) and not LIST_NUMBER.fullmatch(word)


def _bare(word: str) -> str:
    """A word without the punctuation around it, folded: how it is compared with the question's."""
    return fold(word).strip(TRAILING + "(")


def spans(words: Sequence[str], question: str, quantity: bool) -> list[tuple[int, int]]:
    """The runs of `words` (start, end exclusive) that answer the question."""
    asked = {_bare(w) for w in question.split()}
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(words):
        start = i
        if is_number(words[i]) and not (
            SECTION_NUMBER.fullmatch(words[i])
            and i + 1 < len(words)
            and words[i + 1][:1].isupper()
            and not UNIT.match(words[i + 1])
        ):
            i += 1
            while i + 1 < len(words) and words[i] in JOINER and is_number(words[i + 1]):
                i += 2  # "62 × 27.5 × 9.5mm"
            unit = words[i].rstrip(TRAILING) if i < len(words) else ""
            if (
                unit
                and words[i - 1][-1:] not in TRAILING
                and not UNIT_ATTACHED.search(words[i - 1])
                and (UNIT.match(unit) or unit.isalpha() and unit.islower())
                and unit not in STOPWORDS
            ):
                i += 1  # its unit or what it counts: "16 A" (a capital "A" is no article), "24 months"
        elif not quantity and CODE.match(_bare(words[i])):
            i += 1
        else:
            i += 1
            continue
        if not {_bare(w) for w in words[start:i]} <= asked:
            out.append((start, i))
    return out if len(out) <= MAX_SPANS else []


def in_bold(words: Sequence[str], question: str, quantity: bool) -> str:
    """The passage's text as Markdown that shows it as printed, with its answering runs in bold;
    punctuation that ends a run stays outside."""
    marks = {start: end for start, end in spans(words, question, quantity)}
    out, i = [], 0
    while i < len(words):
        if i not in marks:
            out.append(literal(words[i]))
            i += 1
            continue
        text = " ".join(words[i : marks[i]])
        core = text.rstrip(TRAILING).lstrip("([")
        at = text.index(core) if core else 0
        out.append(
            f"{literal(text[:at])}**{literal(core)}**{literal(text[at + len(core) :])}" if core else literal(text)
        )
        i = marks[i]
    return " ".join(out)
