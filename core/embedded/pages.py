"""The page index in an index folder (the PageStore port; its twin is postgres/pages.py): the active
snapshot, opened once with its BM25 index and shared by answering and indexing; each question
searches it through an EmbeddedSearch (page_search.py), each build writes through page_builds.py."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace

from ..errors import IndexProblem
from ..ranking import bm25_file
from ..ranking.bm25 import LexicalIndex, lexical_index
from ..records import Document
from ..scopes import visible
from .disk import kept_secret, write_replacing
from .index_folder import IndexFolder
from .page_builds import embedded_build
from .page_search import EmbeddedSearch
from .recovery import repair
from .snapshot_format import Snapshot

log = logging.getLogger(__name__)


class EmbeddedPages:
    def __init__(self, store: IndexFolder):
        self.store = store
        self._cached: tuple[str, Snapshot, LexicalIndex] | None = None
        self._load_lock = asyncio.Lock()
        self._serving = False  # questions are asked in this process: a build loads what it publishes

    def snapshot(self) -> tuple[Snapshot, LexicalIndex] | None:
        name = self.store.active_name()
        if name is None:
            return None
        if self._cached is None or self._cached[0] != name:
            snap = self.store.open(name, serving=True)
            assert snap is not None  # open() returns None only when given no name and none is active
            self._cached = (name, snap, self._lexical(snap))
        return self._cached[1], self._cached[2]

    def _lexical(self, snap: Snapshot) -> LexicalIndex:
        """The snapshot's saved BM25 index; built again when it is missing (a snapshot from before it was
        saved) or unusable: it is derived from the pages, so only time is lost."""
        path = self.store.lexical_path(snap.name)
        if path.is_file():
            try:
                lexical = bm25_file.load(path)
                if lexical.n == len(snap.pages):
                    return lexical
                log.warning("%s holds %d pages, its snapshot %d; rebuilding it", path, lexical.n, len(snap.pages))
            except bm25_file.StaleTerms as exc:
                log.warning("%s holds %s; rebuilding it", path, exc)
            except Exception as exc:  # damaged in any way: the pages are intact, so rebuild
                log.warning("%s cannot be read (%s); rebuilding it", path, exc)
        lexical = lexical_index(snap.documents, snap.with_words().pages)
        try:  # derived data: written in place of the stale file, so the next start is quick again
            write_replacing(path, bm25_file.encoded(lexical))
        except OSError as exc:
            log.warning("%s cannot be written (%s); it is rebuilt at each start", path, exc.strerror)
        return lexical

    def current(self) -> tuple[str, Snapshot, LexicalIndex] | None:
        """The cache, when it still holds the active snapshot."""
        cached = self._cached
        return cached if cached is not None and cached[0] == self.store.active_name() else None

    def active_snapshot(self) -> Snapshot | None:
        """The active snapshot for a build to start from, with every page's words: the cached one when
        current (its words read in), else opened with every check."""
        current = self.current()
        if current is None:
            return self.store.open()
        snapshot = current[1].with_words()  # opened for serving: its page images were not looked at
        return replace(snapshot, redraw=self.store.redraw(snapshot.pages))

    async def load(self) -> tuple[Snapshot, LexicalIndex] | None:
        """snapshot(), with a stale cache reloaded in a worker thread: opening a snapshot verifies it and
        reads its pages, which must not stall a bot's event loop."""
        if current := self.current():
            return current[1], current[2]
        async with self._load_lock:
            return await asyncio.to_thread(self.snapshot)

    async def search(self, scope: str) -> EmbeddedSearch | None:
        self._serving = True
        loaded = await self.load()
        if loaded is None:
            return None
        snap, lexical = loaded
        return EmbeddedSearch(self.store, snap, lexical, {d.doc_id: d for d in visible(snap.documents, scope)})

    def building(self, keys: Sequence[str], on_wait: Callable[[str], None], warnings: list[str]):
        return embedded_build(self.store, self.active_snapshot, on_wait, warnings)

    async def source(self, sha256: str) -> bytes | None:
        path = self.store.source_path(sha256)
        data = await asyncio.to_thread(path.read_bytes) if path.is_file() else None
        return data if data is not None and hashlib.sha256(data).hexdigest() == sha256 else None

    async def link_secret(self) -> bytes:
        return await asyncio.to_thread(kept_secret, self.store.root)

    async def warm_up(self) -> None:
        """Open the index before the first question; a damaged one is logged here and reported to whoever
        asks (so that a bot still starts and can re-index it)."""
        self._serving = True
        try:
            await self.load()
        except IndexProblem as exc:
            log.warning("the index cannot be opened: %s", exc)

    async def published(self) -> None:
        if self._serving:
            await self.warm_up()

    async def documents(self, scope: str) -> list[Document]:
        return self.visible_documents(scope)

    async def close(self) -> None:
        """Nothing is held open between questions: files are opened as they are read."""

    async def repair(self) -> tuple[str | None, list]:
        """The newest intact snapshot made active, stray PDFs moved to recovered/ (recovery.repair),
        under the folder's build lock."""
        with await asyncio.to_thread(self.store.lock):
            return await asyncio.to_thread(repair, self.store)

    async def verify(self) -> tuple[list[Document], list[str]]:
        """The active snapshot opened with every check, its source PDFs hashed, its page images looked at."""
        snapshot = await asyncio.to_thread(self.store.open)
        if snapshot is None:
            return [], []
        docs = snapshot.documents
        return docs, [
            f"{d.title}: its stored PDF is missing or damaged (index it again to store it anew)"
            for d in docs
            if d.doc_id in snapshot.unsourced
        ] + [
            f"{d.title}: some of its page images are damaged (the next build draws them again)"
            for d in docs
            if d.doc_id in snapshot.redraw
        ]

    async def status(self, scope: str | None = None) -> dict:
        catalog = self.store.catalog()
        documents = (self.visible_documents(scope) if scope else catalog.documents) if catalog else []
        return {
            **({} if scope else {"index_dir": str(self.store.root)}),
            "snapshot": catalog.name if catalog else None,
            "built_with": catalog.built_with if catalog else None,
            "documents": len(documents),
            "pages": sum(d.page_count for d in documents),
        }

    async def all_documents(self) -> list[Document]:
        catalog = self.store.catalog()
        return list(catalog.documents) if catalog else []

    def visible_documents(self, scope: str) -> list[Document]:
        """What a scope can see: its own documents and the shared collection (from the manifest: cheap
        enough for a chat command's acknowledgement)."""
        current = self.current()
        if current:
            return visible(current[1].documents, scope)
        catalog = self.store.catalog()
        return visible(catalog.documents, scope) if catalog else []
