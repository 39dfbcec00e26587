"""Answering one turn: resolve context -> query (text, screenshots) -> search within the turn's scope ->
read at most top_k pages -> check and locate citations -> draw previews and crops -> Answer."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

from . import citations as cites
from . import deadline
from .backends.base import Backend
from .config import Settings
from .errors import BadInput
from .jev.selector import PageSelector
from .ports import PageIndex
from .query_images import prepare_query_images
from .records import Answer, Citation, DraftCitation, EventSink, Hit, ReaderPage, Step, TextDelta, Turn

log = logging.getLogger(__name__)

MAX_QUESTION_CHARS = 2000
DRAWING_THREADS = 4  # cited pages whose images are drawn at once


class Answerer:
    def __init__(self, settings: Settings, pages: PageIndex, backend: Callable[[], Backend]):
        self.settings, self.pages, self.backend = settings, pages, backend
        self.jev = PageSelector(settings)  # off unless asked for: then retrieval gets 8 candidates

    async def answer(self, turn: Turn, retrieve_only: bool = False, events: EventSink | None = None) -> Answer:
        """`events`, when given, hears each stage a person waits on and the answer's text as it is written."""
        # One budget for the whole question: retries of one call cannot add up past it.
        with deadline.budget(self.settings.answer_timeout_s):
            return await self._answer(turn, retrieve_only, events)

    async def _answer(self, turn: Turn, retrieve_only: bool, events: EventSink | None) -> Answer:
        emit = events or _ignore
        # Only a listener makes the reader stream (Gemini then calls streamGenerateContent).
        on_text = (lambda text: events(TextDelta(text))) if events else None
        timings: dict[str, float] = {}
        clock = time.perf_counter()

        def lap(stage: str) -> None:
            nonlocal clock
            now = time.perf_counter()
            timings[stage] = round((now - clock) * 1000, 2)
            clock = now

        question = " ".join(turn.question.split())
        if not question and not turn.images:
            raise BadInput("Ask a question, attach a screenshot, or both.")
        if len(question) > MAX_QUESTION_CHARS:
            raise BadInput(
                f"The question is {len(question):,} characters long; keep it to {MAX_QUESTION_CHARS:,} or fewer."
            )
        # Decoded and normalised once, off the loop: a large PNG takes a while.
        images, image_notes = await asyncio.to_thread(prepare_query_images, turn.images, self.settings.max_image_bytes)
        backend = self.backend()

        # A screenshot without words has nothing to rewrite. Each resolver trims the history itself.
        if question and turn.history:
            emit(Step("context", "Reading the thread"))
        resolution = await backend.resolver.resolve(question, turn.history) if question else None
        interpreted = resolution.question if resolution else question
        if question and turn.history:
            emit(
                Step(
                    "context",
                    "Reading the thread",
                    "complete",
                    f"Understood as: {interpreted}" if interpreted != question else "",
                )
            )
        lap("context")
        if resolution and resolution.clarify:
            return Answer(
                question,
                interpreted,
                resolution.clarify,
                clarifying_question=resolution.clarify,
                backend=backend.name,
                timings=timings,
            )

        search = await self.pages.search(turn.scope)
        if search is None or not search.documents:
            return Answer(
                question,
                interpreted,
                "No documents are indexed here yet. Index a PDF first, then ask again.",
                limitations=("No indexed documents are visible here.",),
                backend=backend.name,
                timings=timings,
            )
        backend.check_index(search.built_with)
        n_docs = len(search.documents)
        searching = f"Searching {n_docs} document{'s' if n_docs != 1 else ''}"
        emit(Step("search", searching))

        query_text = await asyncio.to_thread(backend.query_text, interpreted, images)
        if images:
            lap("query_ocr")
        qvec = await backend.embed_query(query_text, images)
        lap("embed_query")
        pool = self.jev.pool(self.settings.top_k)
        if images:
            from . import page_match  # OpenCV: loaded by the first screenshot question, not at start-up
        hits = await search.rank(
            query_text,
            qvec,
            max(pool, page_match.CANDIDATES) if images else pool,
            backend.lexical,
            answered=self.settings.top_k,
        )
        candidates = None  # the pages read, once they are
        if images:  # the page a screenshot was cut from goes first, whatever its words matched
            candidates = list(await search.read(hits))
            shown = await asyncio.to_thread(
                page_match.shown_page, [im.data for im in images], [rp.jpeg for rp in candidates]
            )
            if shown is not None:
                hits.insert(0, hits.pop(shown))
                candidates.insert(0, candidates.pop(shown))
            hits, candidates = hits[:pool], candidates[:pool]
        lap("search")
        emit(Step("search", searching, "complete", f"{len(hits)} page{'s' if len(hits) != 1 else ''} found"))
        if retrieve_only and not self.jev.enabled:  # the ranking alone: no page needs reading
            return Answer(
                question, interpreted, "", hits=tuple(hits), notes=image_notes, backend=backend.name, timings=timings
            )
        # The pages with their words and images: what the reader reads, and Jev judges when it is on.
        if candidates is None:
            candidates = await search.read(hits)
        picked = await self.jev.select(interpreted, images, candidates, self.settings.top_k)  # dense order when off
        hits, attached = list(picked.hits), list(picked.pages)
        image_notes += picked.notes
        if picked.selection:
            lap("jev")
        if retrieve_only:
            return Answer(
                question,
                interpreted,
                "",
                hits=tuple(hits),
                notes=image_notes,
                topic=picked.topic or "other",
                backend=backend.name,
                timings=timings,
                selector=picked.selection,
            )

        reading = _reading(hits)
        emit(Step("read", reading))
        draft = await backend.read(interpreted, query_text, attached, images, picked.guidance, on_text)
        emit(Step("read", reading, "complete"))
        lap("read")

        absent = await search.absent_words(interpreted) if backend.lexical else []
        limitations = draft.limitations + backend.limitations(absent)
        emit(Step("cite", "Locating the quotes"))
        accepted, notes = await asyncio.to_thread(self._check_citations, draft.citations, attached)
        emit(
            Step(
                "cite",
                "Locating the quotes",
                "complete",
                f"{len(accepted)} quote{'s' if len(accepted) != 1 else ''} located",
            )
        )
        lap("citations")
        return Answer(
            question,
            interpreted,
            draft.markdown,
            tuple(hits),
            tuple(accepted),
            limitations,
            image_notes + tuple(notes),
            picked.topic or draft.topic,
            None,
            backend.name,
            timings,
            picked.selection,
        )

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
            image = None
            for i in of_page[key]:
                try:
                    image = image or cites.PageImage(pages[key].jpeg)
                    accepted[i] = cites.with_images(accepted[i], image)
                except OSError as exc:
                    log.exception("could not draw citation images")
                    failed[i] = f"Images for {accepted[i].label} could not be drawn ({exc})."

        if of_page:
            with ThreadPoolExecutor(max_workers=min(DRAWING_THREADS, len(of_page))) as pool:
                list(pool.map(draw, of_page))
        return accepted, notes + [failed[i] for i in sorted(failed)]


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
