"""A build over the embedded store (IndexBuild in core/ports.py): it starts from the active snapshot,
or from what recovery finds when that is damaged; reuses unchanged pages from it; and writes and
publishes a whole new snapshot, under the index folder's file lock."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from ..errors import IndexProblem
from ..ranking import bm25_file
from ..ranking.bm25 import LexicalIndex
from ..records import Document, Page
from .index_folder import IndexFolder
from .recovery import recover
from .snapshot_format import Snapshot

log = logging.getLogger(__name__)


class EmbeddedBuild:
    def __init__(self, store: IndexFolder, previous: Snapshot | None, damaged: bool, recovered: list):
        self.store, self.previous = store, previous
        self.damaged, self.recovered = damaged, recovered
        self.name = previous.name if previous else None
        self.built_with = previous.built_with if previous else None
        self.documents = list(previous.documents) if previous else []
        self.pages_total = len(previous.pages) if previous else 0
        self.unsourced = previous.unsourced if previous else frozenset()
        self.redraw = previous.redraw if previous else frozenset()
        self.created: list[Path] = []  # files no snapshot lists yet: removed again when the build fails

    @functools.cached_property
    def _rows(self) -> dict[str, np.ndarray]:
        return self.previous.page_rows() if self.previous else {}

    @functools.cached_property
    def _pages(self) -> dict[str, Page]:
        return {p.content_hash: p for p in self.previous.pages} if self.previous else {}

    async def reusable(self, content_hashes: Sequence[str]) -> dict[str, tuple[Page, np.ndarray]]:
        return {h: (self._pages[h], self._rows[h]) for h in content_hashes if h in self._pages and h in self._rows}

    async def save_source(self, document: Document, data: bytes) -> None:
        self.created += await asyncio.to_thread(self.store.save_source, document, data)

    async def save_page_image(self, content_hash: str, jpeg: bytes) -> None:
        self.created += await asyncio.to_thread(self.store.save_page_image, content_hash, jpeg)

    def discard_created(self) -> None:
        """After a failed build: what it stored for documents never published (a full disk gets its
        space back; a refused PDF leaves no orphan behind)."""
        for path in self.created:
            path.unlink(missing_ok=True)

    def _previous_lexical(self) -> LexicalIndex | None:
        """The previous snapshot's BM25, when a new one can extend it: read whole, of this terms version,
        of all its pages (else the new one is built from every page's words)."""
        assert self.previous is not None
        try:
            lexical = bm25_file.load(self.store.lexical_path(self.previous.name))
        except Exception as exc:  # stale, missing or damaged: derived data, built again
            log.info("BM25 of %s not reused: %s", self.previous.name, exc)
            return None
        return lexical if lexical.n == len(self.previous.pages) else None

    async def publish(
        self,
        built_with: dict,
        removed: set[str],
        added: Sequence[tuple[Document, Sequence[Page], Sequence[np.ndarray]]],
    ) -> tuple[str, int]:
        documents, pages, vectors = [], [], []
        kept: list[int] = []  # which of the previous snapshot's pages the first of `pages` are
        if self.previous:
            rows = self._rows
            documents = [d for d in self.previous.documents if d.doc_id not in removed]
            kept_docs = {d.doc_id for d in documents}
            by_doc: dict[str, list[tuple[int, Page]]] = {}
            for i, page in enumerate(self.previous.pages):
                if page.doc_id in kept_docs:
                    by_doc.setdefault(page.doc_id, []).append((i, page))
            for doc in documents:  # in document order, as the snapshot lists them
                for i, page in by_doc.get(doc.doc_id, []):
                    kept.append(i)
                    pages.append(page)
                    vectors.append(rows[page.content_hash])
        for document, doc_pages, doc_vectors in added:
            documents.append(document)
            pages.extend(doc_pages)
            vectors.extend(doc_vectors)
        earlier = await asyncio.to_thread(self._previous_lexical) if self.previous else None
        reuse = (earlier, kept) if earlier is not None else None
        name = await asyncio.to_thread(self.store.write_snapshot, built_with, documents, pages, vectors, reuse)
        await asyncio.to_thread(self.store.publish, name)
        self.created = []  # the snapshot lists them now
        return name, len(pages)


@contextlib.asynccontextmanager
async def embedded_build(
    store: IndexFolder,
    active_snapshot: Callable[[], Snapshot | None],
    on_wait: Callable[[str], None],
    warnings: list[str],
):
    """The folder's build lock held (one build at a time per index folder), then the build."""
    recovered: list  # (Source, title, scope) to rebuild from their stored PDFs
    with await asyncio.to_thread(store.lock, on_wait):
        try:
            previous, damaged, recovered = await asyncio.to_thread(active_snapshot), False, []
        except IndexProblem as exc:  # a damaged index must not block a build, nor lose what it held
            log.warning("building over a damaged index: %s", exc)
            previous, recovered = await asyncio.to_thread(recover, store, exc, warnings)
            damaged = True
        build = EmbeddedBuild(store, previous, damaged, recovered)
        try:
            yield build
        except BaseException:
            await asyncio.to_thread(build.discard_created)
            raise
