"""The Backend every backend is: an embedder, a reader and a context resolver (the ports), with the
policies that differ between backends."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

from ..errors import IndexProblem
from ..ports import ContextResolver, Embedder, Reader, TextSink
from ..records import Draft, QueryImage, ReaderPage, Word


class Backend:
    """An embedder, a reader and a context resolver, with the policies of a backend whose models see
    pixels (Gemini): pages keep their text-layer words, screenshots go to the embedder and reader as
    images, pages are ranked by the dense scores alone. The local backend overrides these."""

    name = "base"

    def __init__(self, embedder: Embedder, reader: Reader, resolver: ContextResolver):
        self.embedder, self.reader, self.resolver = embedder, reader, resolver

    # --- policies ---------------------------------------------------------------------------------
    ocr_dpi: int | None = None  # the resolution page_words reads a page's pixels at; None: it reads none

    def page_words(self, pixels: Image.Image, words: tuple[Word, ...]) -> tuple[Word, ...]:
        """The words a page is searched and quoted by, for a page with ink its text layer's `words`
        do not cover, at `ocr_dpi` or less (blocking: run it in a worker thread)."""
        return words

    def query_text(self, question: str, images: Sequence[QueryImage]) -> str:
        """The text a query is searched with (blocking)."""
        return question

    async def embed_query(self, text: str, images: Sequence[QueryImage]) -> np.ndarray:
        return await self.embedder.embed_query(text, images)

    async def read(
        self,
        question: str,
        query_text: str,
        pages: Sequence[ReaderPage],
        images: Sequence[QueryImage],
        guidance: str = "",
        on_text: TextSink | None = None,
    ) -> Draft:
        return await read_with(self.reader, question, pages, images, guidance, on_text)

    # Whether pages are ranked by BM25 fused with the dense scores (else by the dense scores alone),
    # and whether the answer reports the query words no visible page contains.
    lexical = False

    def limitations(self, absent_words: Sequence[str]) -> tuple[str, ...]:
        """What the answer should admit besides what the reader said (given the query's content words no
        visible page contains, where `lexical` is set)."""
        return ()

    # --- what an index records -----------------------------------------------------------------------
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


async def read_with(
    reader: Reader,
    question: str,
    pages: Sequence[ReaderPage],
    images: Sequence[QueryImage],
    guidance: str,
    on_text: TextSink | None,
) -> Draft:
    """The reader's answer, streamed to `on_text` when someone watches it being written."""
    if on_text is None:
        return await reader.read(question, pages, images, guidance)
    return await reader.read_streaming(question, pages, images, on_text, guidance)


def _describe(built_with: dict) -> str:
    text = f"{built_with['backend']} ({built_with['model']}, {built_with['dim']}-d"
    if "document_format" in built_with:
        text += f", pages embedded as {built_with['document_format'] or 'an older, unrecorded format'}"
    return text + ")"
