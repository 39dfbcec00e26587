"""The passages the extractive reader chooses among: the printed lines of the retrieved pages, and runs of them.

A passage is a printed line of a retrieved page (text layer or OCR), or a run of up to three lines of one
block. Short lines, such as table cells, are widened with the words printed at the same height, so
"Operating voltage" brings its "5V" along, and a "Label:" brings the line below it. A passage carries its
frame (layout.py: the headings above it, its table's header row), which it is matched together with
(passage_scoring.py), and its table's header, which a quoted row is shown after. Running headers and
footers, lines in the margin printed on two or more of the pages, are no passages and frame none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from ...answering.citations import union_box
from ...language.fold import fold
from ...records import Box, ReaderPage, Word
from .layout import Line, frame, printed_lines, rows

GAP = 1.2  # blank space between two lines, in line heights, that ends a block


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
        """Its words, as printed."""
        return " ".join(w.text for w in self.words)

    @property
    def box(self) -> Box:
        """The box around its words."""
        return union_box(self.words)


@dataclass(frozen=True)
class PrintedLine:
    words: tuple[Word, ...]  # a line, or a short line widened to its whole printed row
    frame: tuple[Word, ...]  # its headings and table header
    header: str  # the table header's cells, shown before a quoted row

    @property
    def framed_text(self) -> str:
        """Its frame's words, then its own: what the dense model reads."""
        return " ".join(w.text for w in self.frame + self.words)


def candidate_passages(pages: Sequence[ReaderPage], printed: list[list[PrintedLine]]) -> list[Passage]:
    """Every run of one to three lines of each page's `printed` lines, as a passage of that page."""
    return [
        Passage(rp, rank, words, len(run), run[0].frame, run[0].header, tuple(ln.framed_text for ln in run))
        for rank, (rp, page) in enumerate(zip(pages, printed))
        for words, run in windows(page)
    ]


def pages_printed_lines(pages: Sequence[ReaderPage]) -> list[list[PrintedLine]]:
    """Each page's printed lines with their frames, its running headers and footers left out."""
    raw = [printed_lines(rp.page) for rp in pages]
    boilerplate = running_words(raw)
    return [[ln for ln in framed_lines(lines, boilerplate) if not set(ln.words) <= boilerplate] for lines in raw]


def running_words(raw: list[list[Line]]) -> set[Word]:
    """The words of the pages' running headers and footers: they answer nothing, nor frame what does."""
    shapes = repeated_lines([[ln.words for ln in page] for page in raw])
    return {w for page in raw for ln in page if _shape(ln.words) in shapes for w in ln.words}


def framed_lines(lines: list[Line], boilerplate: AbstractSet[Word] = frozenset()) -> list[PrintedLine]:
    """Each of a page's printed lines (layout.printed_lines) with its frame; lines of `boilerplate`
    (running headers) frame nothing."""
    row_of = rows(lines)
    out: list[PrintedLine] = []
    for i, line in enumerate(lines):
        row = list(line.words)
        if len(row) < 6:  # a table cell or a label: take the whole printed row
            row = sorted((w for j in row_of[i] for w in lines[j].words), key=lambda w: w.box[0])
        if row[-1].text.endswith(":") and i + 1 < len(lines):  # "Label:" with its value below
            row += lines[i + 1].words
        heading_rows, header_row = frame(lines, row_of, i)
        header = tuple(w for j in header_row for w in lines[j].words)
        header_text = " · ".join(" ".join(w.text for w in lines[j].words) for j in header_row)
        headings = tuple(w for j in heading_rows for w in lines[j].words if w not in boilerplate)
        words = tuple(dict.fromkeys(row))
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
