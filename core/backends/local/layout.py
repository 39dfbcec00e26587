"""A page's printed lines and what frames each one: the headings above it and its table's header row.

A value rarely repeats the words a question uses: "32KB Flash" sits under "ATMega328P Processor" ›
"Memory", "62 × 27.5 × 9.5mm" in the row "Abmessungen" of a table headed "Parameter Mk4 Mk4P Mk4S".
The reader matches a line together with this frame, and quotes the line. Everything here comes from
the words' boxes alone (text layer or OCR), so it holds for any language and any PDF producer:
a heading is printed larger than the line or further left (an outline), a table is a run of rows of
separate cells, and its first row is the header.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median

from ...records import Page, Word

SENTENCE_END = (".", "!", "?", "…", ":")
LARGER = 1.08  # a heading's letters are at least this much taller than the line's
INDENT = 0.01  # of the page width: an outline parent starts at least this far left
MAX_HEADING_WORDS = 12
MAX_ANCESTORS = 3


@dataclass(frozen=True)
class Line:
    words: tuple[Word, ...]  # left to right
    top: float
    bottom: float
    left: float
    right: float
    height: float  # of its letters (the median word box), a proxy for the font size

    @property
    def centre(self) -> float:
        return (self.top + self.bottom) / 2


def printed_lines(page: Page) -> list[Line]:
    """The page's lines in reading order (top to bottom, then left to right)."""
    grouped: dict[int, list[Word]] = {}
    for w in page.words:
        grouped.setdefault(w.line, []).append(w)
    lines = []
    for words in grouped.values():
        words.sort(key=lambda w: w.box[0])
        lines.append(
            Line(
                tuple(words),
                min(w.box[1] for w in words),
                max(w.box[3] for w in words),
                words[0].box[0],
                max(w.box[2] for w in words),
                median(w.box[3] - w.box[1] for w in words),
            )
        )
    return sorted(lines, key=lambda ln: (ln.top, ln.left))


def rows(lines: list[Line]) -> list[list[int]]:
    """Each line's printed row: the lines whose middle lies within its height (table cells, a label and
    its value), as indexes into `lines`, left to right."""
    return [
        sorted(
            (j for j, other in enumerate(lines) if line.top <= other.centre <= line.bottom), key=lambda j: lines[j].left
        )
        for line in lines
    ]


def _heading_like(line: Line) -> bool:
    return len(line.words) <= MAX_HEADING_WORDS and not line.words[-1].text.endswith(SENTENCE_END[:4])


def ancestors(lines: list[Line], row_of: list[list[int]], i: int) -> list[int]:
    """The headings line `i` sits under, nearest first: walking up, each next one is printed larger
    than the last one found, or starts further left at no smaller size. Table cells head nothing."""
    out, current = [], lines[i]
    for j in range(i - 1, -1, -1):
        other = lines[j]
        if other.bottom > current.top or not _heading_like(other) or len(row_of[j]) > 1:
            continue  # beside it, not above it; prose; or a cell
        larger = other.height > current.height * LARGER
        outline = other.left < current.left - INDENT and other.height >= current.height / LARGER
        if larger or outline:
            out.append(j)
            current = other
            if len(out) == MAX_ANCESTORS:
                break
    return out


def frame(lines: list[Line], row_of: list[list[int]], i: int) -> tuple[list[int], list[int]]:
    """What frames line `i`: (its headings, nearest first; its table's header row or []). A cell is framed
    as its row's first cell, and the headings of a table are those above its header."""
    first = row_of[i][0]
    header = table_header(lines, row_of, first) or []
    return ancestors(lines, row_of, header[0] if header else first), header


def table_header(lines: list[Line], row_of: list[list[int]], i: int) -> list[int] | None:
    """When line `i` is a cell of a table row, the table's first row (its header), else None. A table is
    a run of rows, each close below the last, the first of two or more cells; a lone line inside it is a
    wrapped cell, unless it reads as a heading (larger) or prose (long, or ending a sentence)."""
    row = row_of[i]
    if len(row) < 2:
        return None
    header, last_top = row, min(lines[j].top for j in row)
    for j in range(min(row) - 1, -1, -1):
        above = row_of[j]
        bottom = max(lines[k].bottom for k in above)
        if bottom > last_top:
            continue  # part of the same row, or overlapping it
        if last_top - bottom > 2.5 * lines[j].height:
            break  # a gap: the table ended
        if len(above) < 2 and (lines[j].height > lines[row[0]].height * LARGER or not _heading_like(lines[j])):
            break  # a heading or prose above the table
        if len(above) >= 2:
            header = above
        last_top = min(lines[k].top for k in above)
    return None if header == row else header
