"""The service every adapter holds: an index to build (core/indexing.py) and turns to answer
(core/answering.py), over one store and one lazily made backend. Conversations with memory are in
core/conversation.py."""
from __future__ import annotations

from typing import Sequence

from .answering import Answerer
from .backends import make_backend
from .config import Settings
from .indexing import Indexer, ProgressFn
from .ports import Backend
from .records import SHARED_SCOPE, Answer, Document, EventSink, IndexReport, Turn
from .search import LexicalIndex
from .snapshots import IndexView
from .snapshot_format import Snapshot
from .store import IndexStore


class Service:
    def __init__(self, settings: Settings, backend: Backend | None = None):
        self.settings = settings
        self.store = IndexStore(settings.index_dir)
        self._backend = backend
        self.view = IndexView(self.store)
        self.indexer = Indexer(settings, self.store, self.view, lambda: self.backend)
        self.answerer = Answerer(settings, self.store, self.view, lambda: self.backend)

    @property
    def backend(self) -> Backend:
        if self._backend is None:  # made on first use: loading models or clients takes seconds
            self._backend = make_backend(self.settings)
        return self._backend

    # --- answering ----------------------------------------------------------------------------
    async def answer(self, turn: Turn, retrieve_only: bool = False, events: EventSink | None = None) -> Answer:
        """Answer one turn; its citations carry their preview and highlight images as bytes. `events`
        hears the stages and the answer's text as they happen (records.Step, records.TextDelta)."""
        return await self.answerer.answer(turn, retrieve_only, events)

    # --- the index ----------------------------------------------------------------------------
    async def index(self, sources: Sequence[str], *, titles: Sequence[str | None] = (), scope: str = SHARED_SCOPE,
                    progress: ProgressFn | None = None) -> IndexReport:
        return await self.indexer.index(sources, titles=titles, scope=scope, progress=progress)

    async def index_bytes(self, data: bytes, name: str, *, scope: str, title: str | None = None,
                          progress: ProgressFn | None = None) -> IndexReport:
        return await self.indexer.index_bytes(data, name, scope=scope, title=title, progress=progress)

    async def reindex(self, scope: str, document: str | None = None, progress: ProgressFn | None = None) -> IndexReport:
        return await self.indexer.reindex(scope, document, progress)

    async def remove(self, scope: str, document: str) -> Document:
        return await self.indexer.remove(scope, document)

    async def repair(self):
        return await self.indexer.repair()

    def documents(self, scope: str) -> list[Document]:
        return self.view.documents(scope)

    def all_documents(self) -> list[Document]:
        """Every scope's documents, for the operator (exports, status)."""
        catalog = self.store.catalog()
        return list(catalog.documents) if catalog else []

    def snapshot(self) -> tuple[Snapshot, LexicalIndex] | None:
        return self.view.snapshot()

    def verify(self) -> Snapshot | None:
        """The active snapshot opened with every check, its source PDFs hashed (IndexProblem when damaged)."""
        return self.store.open()

    async def load(self) -> tuple[Snapshot, LexicalIndex] | None:
        return await self.view.load()

    async def warm_up(self) -> None:
        await self.view.warm_up()

    def indexing_now(self) -> list[str]:
        return self.indexer.indexing_now()

    def status(self) -> dict:
        catalog = self.store.catalog()
        return {
            "index_dir": str(self.settings.index_dir),
            "backend": self.settings.backend,
            "snapshot": catalog.name if catalog else None,
            "built_with": catalog.built_with if catalog else None,
            "documents": len(catalog.documents) if catalog else 0,
            "pages": catalog.pages if catalog else 0,
            "indexing_now": self.indexing_now(),
        }
