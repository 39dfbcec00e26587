"""Answering one turn: resolve context -> query (text, screenshots) -> search within the turn's scope ->
read at most top_k pages -> check and locate citations -> draw previews and crops -> Answer."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from functools import partial

import numpy as np

from .. import deadline
from ..backends.base import Backend
from ..config import Settings
from ..errors import BadInput
from ..jev.selector import PageSelector, Picked
from ..metrics import QUESTIONS, STAGE_SECONDS, platform_of
from ..ports import PageIndex, PageSearch
from ..question_ids import new_question_id
from ..records import (
    Answer,
    Citation,
    DraftCitation,
    EventSink,
    Exchange,
    Hit,
    PagesFound,
    QueryImage,
    ReaderPage,
    Step,
    TextDelta,
    Turn,
)
from . import citations as cites
from .query_images import prepare_query_images

log = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 2000
DRAWING_THREADS = 4  # cited pages whose images are drawn at once


class Stages:
    """One question's way through the stages: the progress events a person waits on, and each stage's time."""

    def __init__(self, events: EventSink | None):
        self.emit = events or _ignore
        self.timings: dict[str, float] = {}
        self._inner: list[float] = []  # time spent in the stages nested in each open one

    @contextmanager
    def stage(self, timing: str, step: str = "", title: str = "") -> Iterator[StageDetail]:
        """Times the block as `timing` (added up over blocks of one name; a stage nested in it counts for
        itself only). With a `step`, a listener hears it begin and complete, with the detail the block set."""
        if step:
            self.emit(Step(step, title))
        detail = StageDetail()
        begun = time.perf_counter()
        self._inner.append(0.0)
        try:
            yield detail
        finally:
            spent = time.perf_counter() - begun
            own = spent - self._inner.pop()
            if self._inner:
                self._inner[-1] += spent
        self.timings[timing] = round(self.timings.get(timing, 0.0) + own * 1000, 2)
        log.info("stage %s done in %.1f ms", timing, own * 1000)
        if step:
            self.emit(Step(step, title, "complete", detail.text))


@dataclass
class StageDetail:
    text: str = ""  # "4 pages found", "Understood as: …"


@dataclass(frozen=True)
class Retrieved:
    """What the search stage found: the ranked hits, the pages read of them (when a screenshot needed them
    read to find the page it shows), and the text the pages were searched with."""

    hits: list[Hit]
    pages: list[ReaderPage] | None
    query_text: str
    vector: np.ndarray


class Answerer:
    """The answer pipeline: resolve, retrieve, select, read, cite; each a stage of its own."""

    def __init__(self, settings: Settings, pages: PageIndex, backend: Callable[[], Backend]):
        self.settings, self.pages, self.backend = settings, pages, backend
        self.jev = PageSelector(settings)  # off unless asked for: then retrieval gets 8 candidates

    async def answer(
        self, turn: Turn, retrieve_only: bool = False, events: EventSink | None = None, top: int | None = None
    ) -> Answer:
        """`events`, when given, hears each stage a person waits on and the answer's text as it is written.
        `top`: how many pages to rank (for retrieve_only; top_k unless given)."""
        new_question_id()
        log.info("question from %s", turn.thread or turn.scope)  # its id is on this line and every later one
        platform, outcome = platform_of(turn.thread), "failed"
        try:
            # One budget for the whole question: retries of one call cannot add up past it.
            with deadline.budget(self.settings.answer_timeout_s):
                answer = await self._answer(turn, retrieve_only, events, top or self.settings.top_k)
            outcome = outcome_of(answer)
            for stage, ms in answer.timings.items():  # once per question: a stage may take several blocks
                STAGE_SECONDS.labels(stage).observe(ms / 1000)
            return answer
        except BadInput:
            outcome = "refused"
            raise
        finally:
            QUESTIONS.labels(platform, outcome).inc()

    async def _answer(self, turn: Turn, retrieve_only: bool, events: EventSink | None, top: int) -> Answer:
        run = Stages(events)
        question = _checked(turn)
        # Decoded and normalised once, off the loop: a large PNG takes a while.
        images, notes = await asyncio.to_thread(prepare_query_images, turn.images, self.settings.max_image_bytes)
        backend = self.backend()
        answer = partial(Answer, question, backend=backend.name, timings=run.timings)

        interpreted, clarify = await self._resolve(run, backend, question, turn.history)
        if clarify:
            return answer(interpreted, clarify, clarifying_question=clarify)
        with run.stage("search"):
            search = await self.pages.search(turn.scope)
        if search is None or not search.documents:
            return answer(
                interpreted,
                "No documents are indexed here yet. Index a PDF first, then ask again.",
                limitations=("No indexed documents are visible here.",),
            )
        backend.check_index(search.built_with)
        found = await self._retrieve(run, backend, search, interpreted, images, top)
        answer = partial(answer, query_vector=np.asarray(found.vector, dtype=np.float16).tobytes())
        if retrieve_only and not self.jev.enabled:  # the ranking alone: no page needs reading
            return answer(interpreted, "", hits=tuple(found.hits), notes=notes)

        picked = await self._select(run, search, interpreted, images, found)
        notes += picked.notes
        if retrieve_only:
            return answer(
                interpreted, "", hits=picked.hits, notes=notes, topic=picked.topic or "other", selector=picked.selection
            )
        run.emit(PagesFound(tuple(picked.hits)))
        # Only a listener makes the reader stream (Gemini then calls streamGenerateContent).
        on_text = (lambda text: events(TextDelta(text))) if events else None
        with run.stage("read", "read", _reading(picked.hits)):
            draft = await backend.read(
                interpreted, found.query_text, list(picked.pages), images, picked.guidance, on_text
            )
        absent = await search.absent_words(interpreted) if backend.lexical else []
        accepted, cite_notes = await self._cite(run, draft.citations, list(picked.pages))
        return answer(
            interpreted,
            draft.markdown,
            hits=picked.hits,
            citations=tuple(accepted),
            limitations=draft.limitations + backend.limitations(absent),
            notes=notes + tuple(cite_notes),
            topic=picked.topic or draft.topic,
            selector=picked.selection,
        )

    async def _resolve(
        self, run: Stages, backend: Backend, question: str, history: Sequence[Exchange]
    ) -> tuple[str, str | None]:
        """The question as it stands alone, and a clarifying question when the thread does not tell.
        A screenshot without words has nothing to rewrite; each resolver trims the history itself."""
        shown = bool(question and history)
        with run.stage("context", "context" if shown else "", "Reading the thread") as detail:
            resolution = await backend.resolver.resolve(question, history) if question else None
            interpreted = resolution.question if resolution else question
            if interpreted != question:
                detail.text = f"Understood as: {interpreted}"
        return interpreted, resolution.clarify if resolution else None

    async def _retrieve(
        self,
        run: Stages,
        backend: Backend,
        search: PageSearch,
        interpreted: str,
        images: Sequence[QueryImage],
        top: int,
    ) -> Retrieved:
        """The ranked pages (more of them when Jev chooses among them); for a screenshot, the page it was cut
        from goes first, whatever its words matched."""
        n_docs = len(search.documents)
        with run.stage("search", "search", f"Searching {n_docs} document{'s' if n_docs != 1 else ''}") as detail:
            with run.stage("query_ocr" if images else "embed_query"):
                query_text = await asyncio.to_thread(backend.query_text, interpreted, images)
            with run.stage("embed_query"):
                vector = await backend.embed_query(query_text, images)
            pool = self.jev.pool(top)
            if images:
                from . import page_match  # OpenCV: loaded by the first screenshot question, not at start-up
            wanted = max(pool, page_match.CANDIDATES) if images else pool
            hits = await search.rank(query_text, vector, wanted, backend.lexical, answered=top)
            pages = None
            if images:
                pages = list(await search.read(hits))
                shown = await asyncio.to_thread(
                    page_match.shown_page, [im.data for im in images], [rp.jpeg for rp in pages]
                )
                if shown is not None:
                    hits.insert(0, hits.pop(shown))
                    pages.insert(0, pages.pop(shown))
                hits, pages = hits[:pool], pages[:pool]
            detail.text = f"{len(hits)} page{'s' if len(hits) != 1 else ''} found"
        return Retrieved(hits, pages, query_text, vector)

    async def _select(
        self, run: Stages, search: PageSearch, interpreted: str, images: Sequence[QueryImage], found: Retrieved
    ) -> Picked:
        """The pages the reader reads, with their words and images: the top k, or those Jev keeps."""
        with run.stage("jev" if self.jev.enabled else "read"):
            pages = found.pages if found.pages is not None else await search.read(found.hits)
            return await self.jev.select(interpreted, images, pages, self.settings.top_k)  # dense order when off

    async def _cite(
        self, run: Stages, drafts: Sequence[DraftCitation], attached: list[ReaderPage]
    ) -> tuple[list[Citation], list[str]]:
        """The citations of pages the reader was given, located on their pages and drawn."""
        with run.stage("citations", "cite", "Locating the quotes") as detail:
            accepted, notes = await asyncio.to_thread(self._check_citations, drafts, attached)
            detail.text = f"{len(accepted)} quote{'s' if len(accepted) != 1 else ''} located"
        return accepted, notes

    def _check_citations(
        self, drafts: Sequence[DraftCitation], attached: list[ReaderPage]
    ) -> tuple[list[Citation], list[str]]:
        """Keep citations of attached pages only; locate their quotes; draw their images, a page per thread
        (Pillow decodes, scales and encodes without holding the GIL)."""
        pages = {(rp.hit.doc_id, rp.hit.page): rp for rp in attached}
        accepted: list[Citation] = []
        notes: list[str] = []
        of_page: dict[tuple[str, int], list[int]] = {}  # a page is decoded and scaled once, however often cited
        for draft in drafts:
            rp = pages.get((draft.doc_id, draft.page))
            if rp is None:
                notes.append(f"A citation of page {draft.page} was dropped: that page was not among the pages read.")
                continue
            of_page.setdefault((draft.doc_id, draft.page), []).append(len(accepted))
            accepted.append(
                Citation(
                    draft.doc_id,
                    rp.hit.title,
                    draft.page,
                    draft.quote,
                    cites.highlight(draft.quote, rp.page, draft.box),
                )
            )
        failed: dict[int, str] = {}

        def draw(key: tuple[str, int]) -> None:
            first = of_page[key][0]
            try:
                image = cites.PageImage(pages[key].jpeg)
            except OSError as exc:  # said once for the page, without a traceback: the reason is known
                log.warning("the images of %s cannot be drawn: %s", accepted[first].label, exc)
                failed[first] = f"Images for {accepted[first].label} could not be drawn ({exc})."
                return
            for i in of_page[key]:
                try:
                    accepted[i] = cites.with_images(accepted[i], image)
                except OSError as exc:
                    log.exception("could not draw citation images")
                    failed[i] = f"Images for {accepted[i].label} could not be drawn ({exc})."

        if of_page:
            with ThreadPoolExecutor(max_workers=min(DRAWING_THREADS, len(of_page))) as pool:
                list(pool.map(draw, of_page))
        return accepted, notes + [failed[i] for i in sorted(failed)]


def outcome_of(answer: Answer) -> str:
    """How a question ended, as the metrics count it."""
    if answer.clarifying_question:
        return "clarified"
    if not answer.markdown and answer.hits:
        return "retrieved"  # --retrieve-only
    return "answered" if answer.citations else "unanswered"


def _checked(turn: Turn) -> str:
    """The question with its whitespace made plain; a clear message for an empty or overlong one."""
    question = " ".join(turn.question.split())
    if not question and not turn.images:
        raise BadInput("Ask a question, attach a screenshot, or both.")
    if len(question) > MAX_QUESTION_CHARS:
        raise BadInput(
            f"The question is {len(question):,} characters long; keep it to {MAX_QUESTION_CHARS:,} or fewer."
        )
    return question


def _ignore(event) -> None:
    pass


def _reading(hits: Sequence[Hit]) -> str:
    """ "Reading p. 12 of manual.pdf, pp. 3, 4 of guide.pdf": what the reader is given."""
    pages: dict[str, list[str]] = {}
    for h in hits:
        pages.setdefault(h.title, []).append(str(h.page))
    return (
        "Reading "
        + ", ".join(f"{'p.' if len(p) == 1 else 'pp.'} {', '.join(p)} of {title}" for title, p in pages.items())
        if pages
        else "Reading"
    )
