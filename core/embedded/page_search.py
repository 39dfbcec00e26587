"""One question's search in an index folder's snapshot (the PageSearch port; its twin is
postgres/page_search.py): every visible page is scored, the vectors in memory."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import numpy as np

from ..ranking.bm25 import LexicalIndex
from ..ranking.dense import dense_page_scores
from ..ranking.fusion import fuse_scores
from ..ranking.gaps import fill_gaps
from ..records import Document, Hit, ReaderPage
from .index_folder import IndexFolder
from .snapshot_format import Snapshot


class EmbeddedSearch:
    """One question's search over the snapshot: every visible page is scored (vectors in memory)."""

    def __init__(self, store: IndexFolder, snap: Snapshot, lexical: LexicalIndex, documents: dict[str, Document]):
        self.store, self.snap, self.lexical, self.documents = store, snap, lexical, documents
        self.built_with = snap.built_with
        self.allowed = np.isin(snap.page_docs, list(documents))

    async def rank(
        self, text: str, vector: np.ndarray, k: int, lexical: bool, answered: int | None = None
    ) -> list[Hit]:
        # CPU work that grows with the index: off the loop.
        return await asyncio.to_thread(self._rank, text, vector, k, lexical, answered)

    def _rank(self, text: str, vector: np.ndarray, k: int, lexical: bool, answered: int | None) -> list[Hit]:
        snap = self.snap
        dense = dense_page_scores(snap.vectors, snap.row_page, len(snap.pages), vector)
        if lexical:
            ranked = fuse_scores(
                dense, self.lexical.scores(text), self.allowed, k, self.lexical.coverage(text, self.allowed)
            )
        else:
            ranked = fuse_scores(dense, None, self.allowed, k)
        filled = fill_gaps(
            [(snap.pages[i].doc_id, snap.pages[i].page, score) for i, score in ranked],
            lambda key: key in snap.index_of,
            answered,
        )
        pages = [snap.pages[snap.index_of[(doc_id, page)]] for doc_id, page, _ in filled]
        return [
            Hit(p.doc_id, self.documents[p.doc_id].title, p.page, round(score, 6), p.content_hash)
            for p, (_, _, score) in zip(pages, filled)
        ]

    async def absent_words(self, question: str) -> list[str]:
        return await asyncio.to_thread(self.lexical.absent_words, question, self.allowed)

    async def page(self, doc_id: str, page: int) -> ReaderPage | None:
        i = self.snap.index_of.get((doc_id, page))
        if i is None or doc_id not in self.documents:
            return None
        found = self.snap.pages[i]
        return (await self.read([Hit(doc_id, self.documents[doc_id].title, page, 0.0, found.content_hash)]))[0]

    async def read(self, hits: Sequence[Hit]) -> list[ReaderPage]:
        def read() -> list[ReaderPage]:
            return [
                ReaderPage(
                    h,
                    self.snap.page(self.snap.index_of[(h.doc_id, h.page)]),
                    self.store.page_image_path(h.content_hash).read_bytes(),
                )
                for h in hits
            ]

        return await asyncio.to_thread(read)
