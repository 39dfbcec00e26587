"""The embedded default backend: no key, no network. Pages are read from their text layer plus OCR
of their pixels, ranked by BM25 fused with multilingual-e5-small, and answered by quoting."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from PIL import Image

from ...config import Settings
from ...ports import TextSink
from ...records import Draft, QueryImage, ReaderPage, Word
from ..base import Backend, read_with
from .context import HeuristicResolver
from .embedder import LocalEmbedder
from .ocr import Ocr, return_large_buffers_when_freed
from .reader import ExtractiveReader


class LocalBackend(Backend):
    """Its models see no pixels: OCR turns page drawings and screenshots into words, and lexical
    search (which those words feed) is fused with the dense ranking."""

    name = "local"

    def __init__(self, settings: Settings):
        embedder = LocalEmbedder()
        super().__init__(
            embedder,
            ExtractiveReader(embedder.similarities),
            HeuristicResolver(settings.history_exchanges, settings.history_chars),
        )
        self.settings = settings
        self.ocr_dpi = settings.ocr_dpi
        return_large_buffers_when_freed()
        self.ocr = Ocr()

    def page_words(self, pixels: Image.Image, words: tuple[Word, ...]) -> tuple[Word, ...]:
        first_line = 1 + max((w.line for w in words), default=0)
        return words + tuple(self.ocr.page_words(pixels, words, first_line))

    def query_text(self, question: str, images: Sequence[QueryImage]) -> str:
        if not images:
            return question
        return "\n".join([question, *(self.ocr.image_text(img.data) for img in images)]).strip()

    async def embed_query(self, text: str, images: Sequence[QueryImage]) -> np.ndarray:
        return await self.embedder.embed_query(text, ())  # the screenshots are in `text` as OCR

    async def read(
        self,
        question: str,
        query_text: str,
        pages: Sequence[ReaderPage],
        images: Sequence[QueryImage],
        guidance: str = "",
        on_text: TextSink | None = None,
    ) -> Draft:
        # It cannot see the screenshots either: it reads the question with their OCR text. It quotes
        # passages and has no prompt, so the Jev task's formatting instructions (`guidance`) do not apply.
        return await read_with(self.reader, query_text, pages, images, "", on_text)

    lexical = True
    ABSENT_NOTE = "None of the documents here contain "

    def limitations(self, absent_words: Sequence[str]) -> tuple[str, ...]:
        # A quoting reader cannot tell "not stated" from "worded differently"; it can say this much.
        if absent := absent_words:
            return (
                self.ABSENT_NOTE
                + ", ".join(f"“{w}”" for w in absent)
                + ": they may not state this, or may word it differently.",
            )
        return ()
