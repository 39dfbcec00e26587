"""The service every adapter holds: an index to build (core/indexing/) and turns to answer
(core/answering/pipeline.py), over one store and one lazily made backend. Conversations with memory are in
core/chat/conversation.py."""

from __future__ import annotations

import asyncio
import functools
import importlib
import logging
import time
from collections.abc import Awaitable, Sequence
from dataclasses import replace

from .answering.pipeline import Answerer
from .backends import make_backend
from .backends.base import Backend
from .chat import usage
from .config import Settings
from .diagnosis import Check, Finding, gemini_findings, index_findings, run_checks, typesafe_findings
from .errors import PixelragError
from .indexing import Indexer, ProgressFn
from .indexing.requests import IndexRequests
from .indexing.sources import Source
from .links import Links
from .metrics import INDEX_DOCUMENTS, INDEX_PAGES
from .page_viewer import PageView, PageViewer
from .ports import PageStore, ThreadMemory
from .records import SHARED_SCOPE, Answer, Citation, Document, EventSink, IndexReport, Turn
from .storage import page_store

log = logging.getLogger("pixelrag")

READINESS_S = 2.0  # a readiness probe's answer comes within this, whatever the database does


class Service:
    """Used as `async with Service(settings) as service:`, so that what it opened (a database pool,
    render workers) is let go of when the command or the bot ends."""

    def __init__(self, settings: Settings, backend: Backend | None = None, *, costs: ThreadMemory | None = None):
        self.settings = settings
        self._backend = backend
        self.pages: PageStore = page_store(settings)
        self.indexer = Indexer(settings, self.pages, lambda: self.backend)
        # Where what indexing costs is kept per workspace (a chat adapter's thread memory); None: not kept.
        self.costs = costs
        self.viewer = PageViewer(settings, self.pages)
        self._links: Links | None = None

    async def __aenter__(self) -> Service:
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    @functools.cached_property
    def answerer(self) -> Answerer:
        """Made on first use: a command that only indexes never builds it (nor its page selector)."""
        return Answerer(self.settings, self.pages, lambda: self.backend)

    @functools.cached_property
    def requests(self) -> IndexRequests:
        """Indexing asked for in a chat, as jobs: worked on here unless PIXELRAG_WORKERS=0."""
        return IndexRequests(self, work_here=self.settings.workers > 0, lease_s=self.settings.job_lease_s)

    @property
    def backend(self) -> Backend:
        if self._backend is None:  # made on first use: loading models or clients takes seconds
            self._backend = make_backend(self.settings)
        return self._backend

    # --- answering ----------------------------------------------------------------------------
    async def answer(
        self, turn: Turn, retrieve_only: bool = False, events: EventSink | None = None, top: int | None = None
    ) -> Answer:
        """Answer one turn; its citations carry their preview and highlight images as bytes, and their
        page viewer links when PIXELRAG_PUBLIC_URL is set. `events` hears the stages and the answer's
        text as they happen (records.Step, records.TextDelta). `top`: how many pages retrieve_only ranks."""
        answer = await self.answerer.answer(turn, retrieve_only, events, top)
        if not self.settings.public_url or not answer.citations:
            return answer
        return replace(answer, citations=await self.linked(answer.citations, turn.scope))

    # --- the page viewer ----------------------------------------------------------------------
    async def links(self) -> Links:
        """The links' signer: PIXELRAG_LINK_SECRET, or the secret the store keeps (made once)."""
        if self._links is None:
            secret = self.settings.link_secret
            key = secret.encode() if secret else await self.pages.link_secret()
            self._links = Links(key, self.settings.public_url or "", self.settings.link_days)
        return self._links

    async def linked(self, citations: Sequence[Citation], scope: str) -> tuple[Citation, ...]:
        """The citations with their viewer links; without them (and a warning logged) when no secret can
        be had: the answer matters more than its links."""
        try:
            links = await self.links()
        except PixelragError as exc:
            log.warning("answer sent without page links: %s", exc)
            return tuple(citations)
        documents = {d.doc_id: d for d in await self.pages.documents(scope)}
        now = time.time()
        return tuple(
            replace(c, url=links.view_url(links.link(documents[c.doc_id], c.page, c.highlight, now)))
            if c.doc_id in documents
            else c
            for c in citations
        )

    async def page_jpeg(self, scope: str, doc_id: str, page: int) -> bytes | None:
        """A page's stored image, as `scope` sees it (None when it does not)."""
        search = await self.pages.search(scope)
        found = await search.page(doc_id, page) if search else None
        return found.jpeg if found else None

    async def view_page(self, token: str) -> PageView:
        return await self.viewer.view(await self.links(), token)

    async def page_image(self, token: str) -> bytes:
        return await self.viewer.image(await self.links(), token)

    async def page_pdf(self, token: str) -> tuple[Document, bytes]:
        return await self.viewer.pdf(await self.links(), token)

    # --- the index ----------------------------------------------------------------------------
    async def index(
        self,
        sources: Sequence[str],
        *,
        titles: Sequence[str | None] = (),
        scope: str = SHARED_SCOPE,
        progress: ProgressFn | None = None,
        operator: bool = False,
    ) -> IndexReport:
        """`operator`: paths may join a chat's collection (a watched folder); a chat names URLs only."""
        return await self._counted(
            scope, self.indexer.index(sources, titles=titles, scope=scope, progress=progress, operator=operator)
        )

    async def index_bytes(
        self, data: bytes, name: str, *, scope: str, title: str | None = None, progress: ProgressFn | None = None
    ) -> IndexReport:
        return await self._counted(
            scope, self.indexer.index_bytes(data, name, scope=scope, title=title, progress=progress)
        )

    async def index_fetched(self, source: Source, scope: str, progress: ProgressFn | None = None) -> IndexReport:
        return await self._counted(scope, self.indexer.index_fetched(source, scope, progress))

    async def reindex(self, scope: str, document: str | None = None, progress: ProgressFn | None = None) -> IndexReport:
        return await self._counted(scope, self.indexer.reindex(scope, document, progress))

    async def _counted(self, scope: str, build: Awaitable[IndexReport]) -> IndexReport:
        """Run a build, adding its Gemini requests and tokens to the workspace's usage (self.costs)."""
        async with usage.kept(self.costs, scope):
            return await build

    async def remove(self, scope: str, document: str, progress: ProgressFn | None = None) -> Document:
        return await self.indexer.remove(scope, document, progress)

    async def move(self, scope: str, document: str, to: str, progress: ProgressFn | None = None) -> IndexReport:
        """Give a document another collection (this channel's or the workspace's) without embedding it again."""
        return await self._counted(scope, self.indexer.move(scope, document, to, progress))

    async def repair(self) -> tuple[str | None, list]:
        """Make the newest intact snapshot active; PDFs no intact snapshot lists are moved to
        <index>/recovered/ to be indexed again. (snapshot name or None, [(moved file, the documents it
        was indexed as)])."""
        async with self.indexer.build_lock:
            return await self.pages.repair()

    async def documents(self, scope: str) -> list[Document]:
        return await self.pages.documents(scope)

    async def all_documents(self) -> list[Document]:
        """Every scope's documents, for the operator (exports, evaluation)."""
        return await self.pages.all_documents()

    async def verify(self) -> tuple[list[Document], list[str]]:
        """Every document, the index checked as thoroughly as its store can (IndexProblem when damaged);
        and what is wrong that does not stop it from answering."""
        return await self.pages.verify()

    async def warm_up(self) -> None:
        await self.pages.warm_up()

    async def warm_up_indexing(self) -> None:
        """What a worker's first job would otherwise pay for, before it takes one: the store opened, the
        backend made (its client libraries imported), the page rendering's libraries loaded."""
        await self.warm_up()
        await asyncio.to_thread(lambda: (self.backend, importlib.import_module("core.indexing.document")))

    async def count_index(self) -> None:
        """The index's documents and pages, into the metrics (every scope's)."""
        documents = await self.pages.all_documents()
        INDEX_DOCUMENTS.set(len(documents))
        INDEX_PAGES.set(sum(d.page_count for d in documents))

    async def readiness(self) -> str | None:
        """Why questions cannot be answered now (the index damaged, the database away), or None; at once,
        as a probe waits only a few seconds."""
        try:
            async with asyncio.timeout(READINESS_S):
                await self.pages.search(SHARED_SCOPE)  # what a question opens first: cheap once warm
        except TimeoutError:
            return f"the index did not answer within {READINESS_S:g} s"
        except PixelragError as exc:
            return str(exc)
        return None

    async def diagnose(self, platforms: Sequence[tuple[str, Check]] = ()) -> list[Finding]:
        """`pixelrag doctor`'s lines: the index (or its database) and what it was built with, the
        platforms' checks an adapter gives, then the Gemini and TypeSafe models the settings name."""
        settings = self.settings
        return await run_checks(
            [
                ("index", lambda: index_findings(settings, self.readiness, self.status)),
                *platforms,
                ("gemini", lambda: gemini_findings(settings)),
                ("typesafe", lambda: typesafe_findings(settings)),
            ]
        )

    async def close(self) -> None:
        await self.pages.close()
        await asyncio.to_thread(self.indexer.close)  # joins the render workers: off the event loop

    def indexing_now(self, scope: str | None = None) -> list[str]:
        return self.indexer.indexing_now(scope)

    async def status(self, scope: str | None = None) -> dict:
        """What the index holds: for the operator (every scope) or, with `scope`, for one tenant (its own
        and the shared documents, and only its own indexing in progress)."""
        return {
            "backend": self.settings.backend,
            "indexing_now": self.indexing_now(scope),
            **await self.pages.status(scope),
        }  # a shared database knows every process's builds
