"""The ports: what a backend fills (what it embeds, reads and rewrites; core/backends/base.py holds the
policies that differ between backends: which words a page has, what a query embeds, how pages are
ranked), where pages and thread memory live. The orchestration (core/indexing/, core/answering/pipeline.py,
core/chat/conversation.py) calls these and never asks which implementation it has.

Backends live in core/backends/ (local/, gemini/); core/backends/__init__.py picks one. Pages and
thread memory live in core/embedded/ (an index folder, SQLite) or core/postgres/; core/storage.py picks one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from typing import Protocol

import numpy as np

from .records import (
    ApiKey,
    Document,
    Draft,
    Exchange,
    GapQuestion,
    Hit,
    Job,
    Page,
    PageInput,
    QueryImage,
    Rated,
    ReaderPage,
    Resolution,
    WatchedSource,
)

ThreadKey = tuple[str, str, str, str]  # (platform, workspace, channel, thread)


class Embedder(Protocol):
    name: str  # backend name recorded in the index
    model: str
    dim: int
    pages_in_flight: int  # pages it embeds at once when it has them: an indexing step is no smaller

    async def embed_pages(self, pages: Sequence[PageInput], done: Callable[[int], None]) -> list[np.ndarray]:
        """One float32 array of shape (rows, dim) per page; `done(n)` after each n pages."""

    async def embed_query(self, text: str, images: Sequence[QueryImage]) -> np.ndarray:
        """One normalized float32 vector of shape (dim,)."""


TextSink = Callable[[str], None]  # more of the answer's Markdown, as it is written


class Reader(Protocol):
    async def read(
        self, question: str, pages: Sequence[ReaderPage], images: Sequence[QueryImage], guidance: str = ""
    ) -> Draft:
        """`guidance`: extra formatting instructions for this question (core/jev/decisions.GUIDANCE)."""

    async def read_streaming(
        self,
        question: str,
        pages: Sequence[ReaderPage],
        images: Sequence[QueryImage],
        on_text: TextSink,
        guidance: str = "",
    ) -> Draft:
        """As `read`, calling `on_text` with each new piece of the answer's Markdown as it is
        written (a reader that composes nothing may give it all at once)."""


class ContextResolver(Protocol):
    async def resolve(self, question: str, history: Sequence[Exchange]) -> Resolution: ...


class PageSearch(Protocol):
    """The published pages one scope sees (its own documents and the shared ones), for one question."""

    built_with: dict  # backend, model, dim of the index
    documents: dict[str, Document]  # doc_id -> the visible documents

    async def rank(
        self, text: str, vector: np.ndarray, k: int, lexical: bool, answered: int | None = None
    ) -> list[Hit]:
        """The top `k` visible pages for a query's text and vector; `lexical`: BM25 fused with the dense
        scores (core/ranking/ says how), else the dense scores alone. `answered`: how many of them the
        answer reads, when `k` asks for more to choose from (ranking.gaps.fill_gaps fills gaps among those)."""

    async def absent_words(self, question: str) -> list[str]:
        """The question's content words that no visible page contains (LexicalIndex.absent_words)."""

    async def page(self, doc_id: str, page: int) -> ReaderPage | None:
        """One page of a visible document with its image (the page viewer), or None."""

    async def read(self, hits: Sequence[Hit]) -> list[ReaderPage]:
        """The hits' pages with their words and page images, for the reader."""


class PageIndex(Protocol):
    """Where the published pages live: snapshots in an index folder (core/embedded/pages.py) or PostgreSQL
    (core/postgres/pages.py), chosen in core/storage.py."""

    async def search(self, scope: str) -> PageSearch | None:
        """What a scope can search now; None when nothing was ever indexed (IndexProblem when damaged)."""

    async def documents(self, scope: str) -> list[Document]:
        """What a scope can see, cheaply (for listings and chat acknowledgements)."""

    async def all_documents(self) -> list[Document]:
        """Every scope's documents, for the operator."""

    async def warm_up(self) -> None:
        """Be ready for the first question (a damaged index is logged, and reported to whoever asks)."""

    async def published(self) -> None:
        """A build was published: what this process holds for questions is brought up to date (nothing,
        where it holds nothing: a command that only indexes)."""


class IndexBuild(Protocol):
    """One build, holding the build lock of the documents it writes: what is published now, and the
    publication of a new state (documents removed and added) that readers see all at once or not at all."""

    name: str | None  # what is published now (a snapshot name, or the database's version); None: nothing
    built_with: dict | None
    documents: list[Document]  # every published document, every scope
    pages_total: int
    damaged: bool  # the published state was damaged and is being rebuilt (embedded store)
    recovered: list  # (Source, title, scope) of damaged documents to rebuild from their stored PDFs
    unsourced: frozenset[str]  # doc_ids whose stored PDF is missing: kept, but not rebuildable from it
    redraw: frozenset[str]  # doc_ids with a damaged page image: drawn again from the stored PDF

    async def reusable(self, content_hashes: Sequence[str]) -> dict[str, tuple[Page, np.ndarray]]:
        """Published pages with these pixels: their words (OCR included) and vector rows, to reuse."""

    async def save_source(self, document: Document, data: bytes) -> None: ...

    async def save_page_image(self, content_hash: str, jpeg: bytes) -> None: ...

    async def publish(
        self,
        built_with: dict,
        removed: set[str],
        added: Sequence[tuple[Document, Sequence[Page], Sequence[np.ndarray]]],
    ) -> tuple[str, int]:
        """Replace the published state: without `removed` (doc_ids), with `added`. (name, pages in total)."""


class PageStore(PageIndex, Protocol):
    """A page index that builds are written to."""

    def building(
        self, keys: Sequence[str], on_wait: Callable[[str], None], warnings: list[str]
    ) -> AbstractAsyncContextManager[IndexBuild]:
        """Wait for the build lock of these documents (`on_wait(holder)` first when another build holds
        it), then the build; damage found on the way is reported in `warnings`."""

    async def source(self, sha256: str) -> bytes | None:
        """A stored source PDF, for re-indexing a document whose origin cannot be fetched, and for the
        page viewer."""

    async def link_secret(self) -> bytes:
        """The secret the page links are signed with: made once, then the same for every process that
        shares the store. IndexProblem when it can be neither read nor made."""

    async def repair(self) -> tuple[str | None, list]:
        """After damage: the newest intact state published, stray PDFs set aside with what they were
        indexed as; (what is published, [(path, documents)]). BadInput where nothing can be half-published."""

    async def verify(self) -> tuple[list[Document], list[str]]:
        """Every document, the store checked as thoroughly as it can be (IndexProblem when damaged); and
        what is wrong that does not stop the index from answering (a stored PDF or page image damaged)."""

    async def close(self) -> None:
        """Let go of what the store holds open (a database's connections)."""

    async def status(self, scope: str | None = None) -> dict:
        """What the store holds (for `scope` only, when given): snapshot or version, built_with, documents,
        pages, and where it lives; `indexing_now` too where the store sees every process's builds."""


class ThreadMemory(Protocol):
    """A chat thread's exchanges, and the claims that make each delivery answered exactly once.

    A claim is finished when the answer is out. One that is never finished (its process died) is
    taken over by the platform's redelivery: at once by the next process of a single-process
    deployment, after a lease where several replicas share the memory."""

    async def open(self) -> ThreadMemory: ...

    async def close(self) -> None: ...

    async def add(self, key: ThreadKey, exchange: Exchange, pending_reply: object = None) -> int:
        """Store a turn; `pending_reply` (JSON-ready) is the rendered reply while it is not yet posted."""

    async def keep_reply(self, turn_id: int, rendered: object) -> None:
        """Keep a turn's rendered reply (JSON-ready) until it is delivered."""

    async def delivered(self, turn_id: int) -> None: ...

    async def rate(self, turn_id: int, user: str, rating: str) -> bool:
        """Record a user's latest rating ("good" or "bad") of a turn's answer; False for an unknown turn."""

    async def ratings(self, rating: str) -> list[Rated]:
        """Every turn whose latest rating by someone is `rating`, oldest first."""

    async def gap_questions(self, since: float) -> list[GapQuestion]:
        """The turns asked since `since` (unix time) that the documents did not answer: a stated
        limitation, an abstention, or someone's latest rating bad (which wins); oldest first."""

    async def pending_reply(self, key: ThreadKey, question: str) -> tuple[int, object] | None:
        """The stored, unposted reply to the thread's latest turn when it asked `question`."""

    async def history(self, key: ThreadKey, limit: int = 4) -> tuple[Exchange, ...]:
        """The latest `limit` exchanges of a thread, oldest first."""

    async def knows_thread(self, key: ThreadKey) -> bool: ...

    async def claim(self, event_id: str) -> bool:
        """True when this process should handle the delivery."""

    async def finish(self, *event_ids: str) -> None:
        """The deliveries are handled: later redeliveries are dropped."""

    async def note(self, event_id: str, **progress: object) -> None:
        """Record how far the work on a claimed delivery got (JSON-ready values, merged into earlier ones),
        so that a process taking it over after a crash finishes what the dead one started."""

    async def progress(self, event_id: str) -> dict:
        """What was noted of a delivery; {} when nothing was."""

    async def asked(self, platform: str, workspace: str, user: str | None, since: float) -> list[float]:
        """When the questions counted (record_question) in a workspace since `since` were asked, oldest
        first: one person's, or (user None) everyone's."""

    async def record_question(self, platform: str, workspace: str, user: str, at: float) -> None:
        """Count a question against the limits (core/chat/limits.py)."""

    async def add_usage(self, platform: str, workspace: str, counts: Mapping[str, int], at: float) -> None:
        """Add what a question cost (core/chat/usage.py) to its workspace's total for the day of `at`."""

    async def usage(self, platform: str | None, workspace: str | None, since: float) -> dict[str, int]:
        """The costs added since `since` (from the start of its day): one workspace's, or every one's."""

    async def choose(self, platform: str, workspace: str, name: str, value: str) -> None:
        """Keep what a workspace's admins chose (which collection chat indexing goes to)."""

    async def choice(self, platform: str, workspace: str, name: str) -> str | None:
        """What was chosen, or None."""

    async def add_key(self, name: str, scope: str, digest: str, at: float) -> bool:
        """Keep an API key's digest for `scope` (core/api_keys.py); False when the name is taken."""

    async def key(self, digest: str) -> tuple[str, str] | None:
        """(name, scope) of the unrevoked key with this digest, or None."""

    async def api_keys(self) -> list[ApiKey]:
        """Every key, revoked ones too, oldest first."""

    async def revoke_key(self, name: str, at: float) -> bool:
        """Revoke the key named `name`; False when there is no such unrevoked key."""


class JobQueue(Protocol):
    """Indexing jobs and the watched sources that make them, kept where the index is (a SQLite file
    beside the folder, or the database), so that any process reaching it may work on them: queued ->
    running (held by a worker under a lease it renews) -> done or failed. A job whose lease runs out
    (its worker died) is queued work again."""

    async def open(self) -> JobQueue: ...

    async def close(self) -> None: ...

    async def add(self, jobs: Sequence[Job], uploads: Mapping[str, bytes] | None = None) -> None:
        """Queue the jobs (their ids made by the caller), with the PDFs of upload jobs by job id."""

    async def upload(self, job_id: str) -> bytes | None:
        """An upload job's PDF, kept until the job ends."""

    async def take(self, worker: str, lease_s: float, batch: str | None = None) -> Job | None:
        """The oldest queued job (of `batch`, when given), or a running one whose lease ran out, now held
        by `worker` until `lease_s` from now; None when there is none. Two workers never get the same job
        while its lease holds."""

    async def renew(self, job_id: str, worker: str, lease_s: float, progress: dict) -> bool:
        """Extend `worker`'s lease and note its progress; False when the job is no longer its own."""

    async def finish(self, job_id: str, worker: str, state: str, outcome: str, result: dict) -> bool:
        """Mark the job done or failed with what came of it (its upload let go of); False when it is no
        longer `worker`'s."""

    async def untold(self, platform: str, ended_before: float) -> list[Job]:
        """The jobs of requests from `platform`'s threads that all ended before `ended_before` and that
        nobody has told yet (the process that asked died meanwhile)."""

    async def cancel(self, batch: str, outcome: str) -> int:
        """End the batch's jobs not yet ended as failed with `outcome` (their holders can no longer end
        them); how many."""

    async def claim_telling(self, batch: str, now: float) -> bool:
        """The right to tell the thread that asked for `batch` how it ended: True for one caller only."""

    async def jobs(self, batch: str | None = None, since: float = 0.0) -> list[Job]:
        """The jobs (of `batch`; created or finished since `since`, or unfinished), oldest first."""

    async def waiting(self) -> int:
        """How many jobs are queued."""

    async def beat(self, worker: str, now: float) -> None:
        """`worker` is alive (status lists the workers seen lately)."""

    async def workers(self, since: float) -> list[tuple[str, float]]:
        """(worker, last seen) of the workers alive since `since`."""

    async def add_source(self, source: WatchedSource) -> bool:
        """Keep `source` current; False when the same location is watched in that collection already."""

    async def sources(self) -> list[WatchedSource]: ...

    async def checked(self, source_id: str, fields: dict) -> None:
        """Record what a check found: WatchedSource's fields by name."""

    async def remove_source(self, source_id: str) -> bool: ...

    async def tell_once(self, source_id: str, now: float) -> bool:
        """Mark the source's current failure told; False when it is told already (or not failing)."""

    async def due(self, now: float, hold_s: float) -> list[WatchedSource]:
        """The sources whose check is due, each held `hold_s` ahead so that no other process takes it too."""
