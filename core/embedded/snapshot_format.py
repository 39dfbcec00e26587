"""What a published snapshot holds in memory (Snapshot), what its manifest alone says (Catalog), and
how a page's words are written to and read from pages.jsonl."""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..errors import IndexProblem
from ..records import Document, Page, Word

WORDS_FILE = "pages.jsonl"  # one line of words per page, in page order
OFFSETS_FILE = "pages.offsets.npy"  # where each page's line starts


@dataclass(frozen=True)
class Catalog:
    """What the active snapshot holds, read from its manifest alone: cheap, unverified, for listings."""

    name: str
    built_with: dict
    documents: list[Document]
    pages: int


@dataclass
class Snapshot:
    """A published index. Opened for serving, its pages come without their words, which are read
    from pages.jsonl when a page is needed (`page(i)`): a question needs a few pages, not all."""

    name: str
    built_with: dict  # backend, model, dim
    documents: list[Document]
    pages: list[Page]
    vectors: np.ndarray  # (rows, dim) float32; several rows may belong to one page
    row_page: np.ndarray  # (rows,) index into pages
    words_file: Path | None = None  # set when the pages' words are read on demand
    word_offsets: np.ndarray | None = None  # byte offset of each page's line in words_file
    # doc_ids whose stored PDF is missing (or, checked by hash, damaged): their pages still serve and
    # are carried into the next build, but they cannot be rebuilt from the stored copy.
    unsourced: frozenset[str] = frozenset()
    redraw: frozenset[str] = frozenset()  # doc_ids with a damaged page image (checked when opened for a build)

    def page(self, i: int) -> Page:
        """Page i with its words."""
        if self.words_file is None:
            return self.pages[i]
        try:
            if self.word_offsets is None:  # set with words_file (IndexFolder.open): reported as damage
                raise TypeError("no word offsets")
            with open(self.words_file, "rb") as lines:
                lines.seek(int(self.word_offsets[i]))
                row = json.loads(lines.readline())
            return replace(self.pages[i], words=tuple(word_from_row(r) for r in row["words"]))
        except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
            page = self.pages[i]
            raise IndexProblem(
                f"Snapshot {self.name}: the words of page {page.page} of document {page.doc_id} are "
                f"damaged ({type(exc).__name__}); `pixelrag index` rebuilds it from the stored "
                "PDFs."
            ) from None

    def with_words(self) -> Snapshot:
        """This snapshot with every page's words in memory (what a build starts from)."""
        if self.words_file is None:
            return self
        with open(self.words_file, encoding="utf-8") as lines:
            pages = [
                replace(p, words=tuple(word_from_row(r) for r in json.loads(line)["words"]))
                for p, line in zip(self.pages, lines)
            ]
        return replace(self, pages=pages, words_file=None, word_offsets=None)

    # Per-page lookups a question needs, computed once per snapshot rather than once per question.
    @functools.cached_property
    def page_docs(self) -> np.ndarray:
        return np.array([p.doc_id for p in self.pages])

    @functools.cached_property
    def index_of(self) -> dict[tuple[str, int], int]:
        return {p.key: i for i, p in enumerate(self.pages)}

    def page_rows(self) -> dict[str, np.ndarray]:
        """content_hash -> that page's vector rows, for reuse by the next build."""
        out: dict[str, np.ndarray] = {}
        order = np.argsort(self.row_page, kind="stable")
        bounds = np.searchsorted(self.row_page[order], np.arange(len(self.pages) + 1))
        for i, page in enumerate(self.pages):
            out[page.content_hash] = self.vectors[order[bounds[i] : bounds[i + 1]]]
        return out


def write_words(folder: Path, pages: list[Page]) -> None:
    """Every page's words, one line each, and where each line starts."""
    offsets = np.zeros(len(pages), dtype=np.int64)
    with open(folder / WORDS_FILE, "wb") as out:
        for i, p in enumerate(pages):
            offsets[i] = out.tell()
            out.write(json.dumps({"words": [word_row(w) for w in p.words]}, ensure_ascii=False).encode() + b"\n")
    np.save(folder / OFFSETS_FILE, offsets)


def read_words(folder: Path) -> list[list]:
    """Every page's word rows (word_from_row reads one), in page order."""
    with open(folder / WORDS_FILE, encoding="utf-8") as lines:
        return [json.loads(line)["words"] for line in lines]


def line_offsets(folder: Path) -> np.ndarray:
    """Where each page's line starts in the words file: saved with the snapshot, or found by one scan
    for a snapshot written before they were saved."""
    saved = folder / OFFSETS_FILE
    if saved.is_file():
        return np.load(saved)
    offsets, at = [], 0
    with open(folder / WORDS_FILE, "rb") as lines:
        for line in lines:
            offsets.append(at)
            at += len(line)
    return np.array(offsets, dtype=np.int64)


def word_row(w: Word) -> list:
    return [w.text, *(round(float(v), 5) for v in w.box), w.line, w.source]


def word_from_row(row: list) -> Word:
    return Word(row[0], tuple(row[1:5]), row[5], row[6])
