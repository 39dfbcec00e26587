"""One document of a build: open the PDF, then in steps of pages draw (the next step ahead) -> read the
words (the text layer, and what the backend reads from the pixels) -> embed (two steps at once), reusing
the pages whose pixels are unchanged; the document's record and its pages with their vectors."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field, replace

import numpy as np

from ..backends.base import Backend
from ..cleaning import clean_text
from ..config import Settings
from ..errors import BadInput, IndexProblem
from ..ports import IndexBuild
from ..records import Document, Page, PageInput, Progress, Word
from .page_rendering import DocumentPages, PageRenderer, Unrenderable
from .sources import PAGE_PIXELS, RenderedPage, Source, document_title, open_pdf, page_pixels

ProgressFn = Callable[[Progress], None]
# A step's embedding waits on remote calls while the next step is drawn; with only one step embedded at a
# time the drawing stalled whenever a step's calls ran late (eval/bench_indexing.py, Gemini backend).
STEPS_EMBEDDED_AT_ONCE = 2
PAGES_PER_STEP = 8  # pages rendered, read and embedded together; bounds memory on long PDFs
PACE_AFTER_S = 1.0  # a pace over less time than this is noise (or reused pages, which take none)


@dataclass
class Pending:
    """A document being built: its record and its pages with vectors."""

    document: Document
    pages: list[Page]
    vectors: list[np.ndarray]


class DocumentBuilder:
    def __init__(self, settings: Settings, backend: Callable[[], Backend], renderer: PageRenderer):
        self.settings, self.backend, self.renderer = settings, backend, renderer

    async def build(
        self,
        build: IndexBuild,
        source: Source,
        title: str | None,
        scope: str,
        progress: ProgressFn,
        warnings: list[str],
    ) -> tuple[Pending, int, int]:
        """The document's record and its pages with vectors, (embedded, reused) page counts; what the user
        should know of how it went is added to `warnings`."""
        pdf = await asyncio.to_thread(open_pdf, source, self.settings)
        embeddings: list[asyncio.Task] = []  # steps being embedded, oldest first
        drawn: DocumentPages | None = None
        try:
            document = Document(
                source.doc_id(scope),
                " ".join(clean_text(title or document_title(pdf, source)).split()),  # no control characters
                source.name,
                source.sha256,
                pdf.page_count,
                scope,
                source.origin,
            )
            await build.save_source(document, source.data)
            # Enough pages per step to keep the embedder busy; no more, or the last step's embedding
            # would wait long for its pages with nothing to overlap it.
            step_size = max(PAGES_PER_STEP, self.backend().embedder.pages_in_flight)
            got = _Gathered()
            pace = _Pace(progress, pdf.page_count, document.title)
            drawn = self.renderer.for_document(pdf, source, document.doc_id, step_size)
            steps = [
                range(start, min(pdf.page_count, start + step_size)) for start in range(0, pdf.page_count, step_size)
            ]
            async with contextlib.aclosing(_drawn_ahead(drawn, steps)) as rendered_steps:
                async for step, rendered in rendered_steps:
                    read = await self._read(build, rendered, document, progress)
                    fresh = got.add(read, document.title, self.settings.render_dpi)
                    while len(embeddings) >= STEPS_EMBEDDED_AT_ONCE:
                        await embeddings.pop(0)
                    pace.advance(len(step) - len(fresh))  # reused pages are done already
                    if fresh:
                        embeddings.append(asyncio.create_task(self._embed(fresh, got.vectors, pace)))
            if len(got.blank) == pdf.page_count:
                damage = " is damaged (PyMuPDF had to repair it) and" if pdf.is_repaired else ""
                raise BadInput(f"{source.name}{damage} has no page with anything on it; nothing was indexed.")
            for task in embeddings:
                await task
            warnings += got.warnings(source.name, pdf.is_repaired, self.settings.render_dpi)
            return Pending(document, got.pages, got.embedded(source.name)), got.fresh, pdf.page_count - got.fresh
        finally:
            for task in embeddings:
                task.cancel()
            await asyncio.gather(*embeddings, return_exceptions=True)  # every failure retrieved, none logged as lost
            if drawn is not None:
                drawn.close()
            pdf.close()

    async def _embed(self, fresh: list[tuple[int, PageInput]], vectors: list[np.ndarray | None], pace: _Pace) -> None:
        """Embed a step's new pages into their slots of `vectors`."""
        new = await self.backend().embedder.embed_pages([item for _, item in fresh], pace.advance)
        if len(new) != len(fresh):
            raise IndexProblem(f"The embedder returned {len(new)} vectors for {len(fresh)} pages.")
        for (slot, _), vector in zip(fresh, new):
            vectors[slot] = vector

    async def _read(
        self, build: IndexBuild, rendered: list[RenderedPage | Unrenderable], document: Document, progress: ProgressFn
    ) -> list[tuple[Page, bytes, np.ndarray | None, bool, float]]:
        """Read the drawn pages' words: (page, jpeg, reused vector rows or None, blank, dpi). Unchanged pixels
        reuse earlier work; a page PyMuPDF could not draw refuses its document only."""
        if failed := next((r for r in rendered if isinstance(r, Unrenderable)), None):
            raise BadInput(
                f"{document.file_name}: page {failed.index + 1} cannot be rendered ({failed.reason}); the document "
                "was not indexed."
            )
        drawn = [r for r in rendered if isinstance(r, RenderedPage)]
        reusable = await build.reusable([r.page.content_hash for r in drawn])
        out: list[tuple[Page, bytes, np.ndarray | None, bool, float]] = []
        for r in drawn:
            progress(Progress("read", r.page.page, document.page_count, document.title))
            await build.save_page_image(r.page.content_hash, r.jpeg)
            if (old := reusable.get(r.page.content_hash)) is not None:
                # Unchanged pixels: keep the earlier words (OCR included) and vectors.
                out.append((replace(old[0], doc_id=document.doc_id, page=r.page.page), r.jpeg, old[1], r.blank, r.dpi))
                continue
            words = r.page.words
            if r.needs_ocr and (ocr_dpi := self.backend().ocr_dpi):
                words = await asyncio.to_thread(self._read_pixels, r, ocr_dpi)
            out.append((replace(r.page, words=words), r.jpeg, None, r.blank, r.dpi))
        return out

    def _read_pixels(self, r: RenderedPage, ocr_dpi: int) -> tuple[Word, ...]:
        """The words of a page that has ink its text layer does not cover, read at the backend's
        resolution, one page at a time, so pixels are never held for a whole step."""
        return self.backend().page_words(page_pixels(r.jpeg, r.dpi, ocr_dpi), r.page.words)


async def _drawn_ahead(
    drawn: DocumentPages, steps: list[range]
) -> AsyncGenerator[tuple[range, list[RenderedPage | Unrenderable]], None]:
    """Each step with its drawn pages, the next step drawn meanwhile (its pages are read and embedded
    while the PDF renders on)."""
    upcoming: asyncio.Future | None = asyncio.ensure_future(drawn.render(steps[0]))
    try:
        for n, step in enumerate(steps):
            assert upcoming is not None
            rendered = await upcoming
            upcoming = asyncio.ensure_future(drawn.render(steps[n + 1])) if n + 1 < len(steps) else None
            yield step, rendered
    finally:
        if upcoming is not None:  # let the step being drawn finish: its thread reads the PDF closed after
            await asyncio.gather(upcoming, return_exceptions=True)


@dataclass
class _Gathered:
    """What a document's steps gathered: its pages in order, their vectors (None until embedded), and
    the pages that came out blank or were drawn below the render setting's resolution."""

    pages: list[Page] = field(default_factory=list)
    vectors: list[np.ndarray | None] = field(default_factory=list)
    blank: list[int] = field(default_factory=list)
    reduced: list[tuple[int, float]] = field(default_factory=list)  # (page, dpi)
    fresh: int = 0  # pages embedded (not reused)

    def add(
        self, read: list[tuple[Page, bytes, np.ndarray | None, bool, float]], title: str, render_dpi: int
    ) -> list[tuple[int, PageInput]]:
        """Keep a step's read pages; the new ones to embed, with their slots in `vectors`."""
        fresh = []
        for page, jpeg, reused, empty, dpi in read:
            if empty:
                self.blank.append(page.page)
            if dpi < render_dpi:
                self.reduced.append((page.page, dpi))
            self.pages.append(page)
            self.vectors.append(reused)
            if reused is None:
                fresh.append((len(self.pages) - 1, PageInput(page, jpeg, title)))
        self.fresh += len(fresh)
        return fresh

    def embedded(self, name: str) -> list[np.ndarray]:
        done = [v for v in self.vectors if v is not None]
        if len(done) != len(self.vectors):  # every fresh page's vectors were set by _embed()
            raise IndexProblem(f"{name}: {len(self.vectors) - len(done)} pages were not embedded.")
        return done

    def warnings(self, name: str, repaired: bool, render_dpi: int) -> list[str]:
        out = []
        if self.reduced:
            lowest = min(dpi for _, dpi in self.reduced)
            out.append(
                f"{name}: {_pages(n for n, _ in self.reduced)} more than "
                f"{PAGE_PIXELS // 1_000_000} megapixels at {render_dpi} dpi; rendered at "
                f"down to {lowest:.0f} dpi instead, so small print there may not be read."
            )
        if repaired:
            came_out = f"; pages {_ranges(self.blank)} came out empty" if self.blank else ""
            out.append(
                f"{name} is damaged (PyMuPDF had to repair it, perhaps the file is cut "
                f"short): it was indexed as far as it could be read{came_out}. Index the complete "
                "file again when you have it."
            )
        return out


class _Pace:
    """The embed progress of one document: pages done, and once measurable their rate and time left."""

    def __init__(self, progress: ProgressFn, total: int, title: str):
        self.progress, self.total, self.title = progress, total, title
        self.finished, self.began = 0, time.monotonic()

    def advance(self, n: int) -> None:
        self.finished += n
        done, elapsed = min(self.finished, self.total), time.monotonic() - self.began
        rate = done / elapsed if done and elapsed >= PACE_AFTER_S else 0.0
        left = (self.total - done) / rate if rate and done < self.total else None
        self.progress(Progress("embed", done, self.total, self.title, rate, left))


def _pages(numbers) -> str:
    numbers = list(numbers)
    return f"page {numbers[0]} is" if len(numbers) == 1 else f"pages {_ranges(numbers)} are"


def _ranges(numbers: list[int]) -> str:
    """[1, 2, 3, 7] -> '1-3, 7'."""
    out, start = [], None
    for i, n in enumerate(numbers):
        start = n if start is None else start
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            out.append(str(n) if n == start else f"{start}-{n}")
            start = None
    return ", ".join(out)
