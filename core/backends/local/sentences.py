"""Where a quote of the extractive reader starts and stops: at its sentence's ends, or at the end of a heading's list.

A quote that starts or stops mid-sentence is widened to the sentence: its subject is often the first half,
the answer the second. For a how-to question it runs on past a sentence's end too, for the steps follow
the introduction. One that starts with a heading and stops inside its list of short items (a section's
products) runs on to the list's end. All of it is told by the words' boxes and punctuation alone.
"""

from __future__ import annotations

import re

from ...language.fold import fold
from ...language.stopwords import STOPWORDS
from ...records import Word
from .layout import LARGER
from .passages import apart

LIST_ITEMS, SHORT = 3, 5  # a heading's list: up to this many more items of fewer than SHORT words
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
    """The height of a line's tallest word."""
    return max(w.box[3] - w.box[1] for w in words)


def heading(line: tuple[Word, ...], below: tuple[Word, ...]) -> bool:
    """Whether a line heads what is below it: numbered as a section ("1.2 Related Products") or printed larger."""
    if line is below:
        return False
    return bool(HEADING_NUMBER.fullmatch(line[0].text)) or _height(line) > LARGER * _height(below)


def complete_sentence(
    words: tuple[Word, ...], lines: list[tuple[Word, ...]], extra: int = 2, longest: int = 60, steps: bool = False
) -> tuple[Word, ...]:
    """A quote widened, by up to `extra` lines each way and to at most `longest` words, to its sentence's ends
    (past its end too with `steps`, for a how-to question), and from a heading on to the end of its list."""
    out = list(words)
    first = next((i for i, line in enumerate(lines) if words[0] in line), None)
    if first is not None and words[0].text[:1].islower():
        out = _from_sentence_start(out, lines, first, extra, longest)
    at = next((i for i, line in enumerate(lines) if words[-1] in line), None)
    if at is None:
        return tuple(out)
    out, at = _to_sentence_end(out, lines, at, extra, longest, steps)
    if first is not None and heading(lines[first], lines[at]):
        out = _to_list_end(out, lines, at, longest)
    return tuple(out)


def _from_sentence_start(
    out: list[Word], lines: list[tuple[Word, ...]], first: int, extra: int, longest: int
) -> list[Word]:
    """The quote preceded by the lines above line `first` that run on into it: a quote that starts
    mid-sentence starts where the sentence does."""
    for line in reversed(lines[max(0, first - extra) : first]):
        if not runs_on(line) or len(out) + len(line) > longest:
            break
        out = [w for w in line if w not in out] + out
    return out


def _to_sentence_end(
    out: list[Word], lines: list[tuple[Word, ...]], at: int, extra: int, longest: int, steps: bool
) -> tuple[list[Word], int]:
    """The quote run on over the lines below line `at` that finish its sentence (with `steps`, over the steps
    that follow it), and the index of the line it now stops on."""
    for line in lines[at + 1 : at + 1 + extra]:
        if not (steps or runs_on(lines[at])) or len(out) + len(line) > longest:
            break
        out += [w for w in line if w not in out]
        at += 1
    return out, at


def _to_list_end(out: list[Word], lines: list[tuple[Word, ...]], at: int, longest: int) -> list[Word]:
    """A quote that starts with a heading and stops on line `at`, run on over the short items listed below."""
    for line in lines[at + 1 : at + 1 + LIST_ITEMS]:
        if len(lines[at]) >= SHORT or len(line) >= SHORT or apart(lines[at], line) or len(out) + len(line) > longest:
            break
        out += [w for w in line if w not in out]
        at += 1
    return out
