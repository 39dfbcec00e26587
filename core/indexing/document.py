"""One document of a build: open the PDF, then in steps of pages draw (the next step ahead) -> read the
words (the text layer, and what the backend reads from the pixels) -> embed (two steps at once), reusing
the pages whose pixels are unchanged; the document's record and its pages with their vectors."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from ..backends.base import Backend
from ..cleaning import clean_text
from ..config import Settings
from ..documents import PAGE_PIXELS, RenderedPage, Source, document_title, open_pdf, page_pixels
from ..errors import BadInput, IndexProblem
from ..page_rendering import DocumentPages, PageRenderer, Unrenderable
from ..ports import IndexBuild
from ..records import Document, Page, PageInput, Progress, Word

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
        pdf = await asyncio.to_thread(open_pdf, source, self.settings)
        embeddings: list[asyncio.Task] = []  # steps being embedded, oldest first
        drawing: asyncio.Future | None = None
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
            total = pdf.page_count
            # Enough pages per step to keep the embedder busy; no more, or the last step's embedding
            # would wait long for its pages with nothing to overlap it.
            step_size = max(PAGES_PER_STEP, self.backend().embedder.pages_in_flight)
            pages: list[Page] = []
            vectors: list[np.ndarray | None] = []
            blank: list[int] = []
            reduced: list[tuple[int, float]] = []  # (page, dpi) of pages too large for the render setting
            finished = embedded = 0
            began = time.monotonic()

            def report(n: int) -> None:
                nonlocal finished
                finished += n
                done, elapsed = min(finished, total), time.monotonic() - began
                rate = done / elapsed if done and elapsed >= PACE_AFTER_S else 0.0
                left = (total - done) / rate if rate and done < total else None
                progress(Progress("embed", done, total, document.title, rate, left))

            async def embed(fresh: list[tuple[int, PageInput]]) -> None:
                new = await self.backend().embedder.embed_pages([item for _, item in fresh], report)
                if len(new) != len(fresh):
                    raise IndexProblem(f"The embedder returned {len(new)} vectors for {len(fresh)} pages.")
                for (slot, _), vector in zip(fresh, new):
                    vectors[slot] = vector

            drawn = self.renderer.for_document(pdf, source, document.doc_id, step_size)
            steps = [range(start, min(total, start + step_size)) for start in range(0, total, step_size)]
            this_step = drawing = asyncio.ensure_future(drawn.render(steps[0]))
            for n, step in enumerate(steps):
                # Read this step while the next one is drawn and the previous ones are embedded.
                rendered = await this_step
                drawing = None
                if n + 1 < len(steps):
                    this_step = drawing = asyncio.ensure_future(drawn.render(steps[n + 1]))
                fresh: list[tuple[int, PageInput]] = []
                for page, jpeg, reused, empty, dpi in await self._read(build, rendered, document, progress):
                    if empty:
                        blank.append(page.page)
                    if dpi < self.settings.render_dpi:
                        reduced.append((page.page, dpi))
                    pages.append(page)
                    vectors.append(reused)
                    if reused is None:
                        fresh.append((len(pages) - 1, PageInput(page, jpeg, document.title)))
                while len(embeddings) >= STEPS_EMBEDDED_AT_ONCE:
                    await embeddings.pop(0)
                report(len(step) - len(fresh))  # reused pages are done already
                embedded += len(fresh)
                if fresh:
                    embeddings.append(asyncio.create_task(embed(fresh)))
            if len(blank) == total:
                damage = " is damaged (PyMuPDF had to repair it) and" if pdf.is_repaired else ""
                raise BadInput(f"{source.name}{damage} has no page with anything on it; nothing was indexed.")
            for task in embeddings:
                await task
            if reduced:
                lowest = min(dpi for _, dpi in reduced)
                warnings.append(
                    f"{source.name}: {_pages(n for n, _ in reduced)} more than "
                    f"{PAGE_PIXELS // 1_000_000} megapixels at {self.settings.render_dpi} dpi; rendered at "
                    f"down to {lowest:.0f} dpi instead, so small print there may not be read."
                )
            if pdf.is_repaired:
                came_out = f"; pages {_ranges(blank)} came out empty" if blank else ""
                warnings.append(
                    f"{source.name} is damaged (PyMuPDF had to repair it, perhaps the file is cut "
                    f"short): it was indexed as far as it could be read{came_out}. Index the complete "
                    "file again when you have it."
                )
            done = [v for v in vectors if v is not None]
            if len(done) != len(vectors):  # every fresh page's vectors were set by embed()
                raise IndexProblem(f"{source.name}: {len(vectors) - len(done)} pages were not embedded.")
            return Pending(document, pages, done), embedded, total - embedded
        finally:
            for task in embeddings:
                task.cancel()
            await asyncio.gather(*embeddings, return_exceptions=True)  # every failure retrieved, none logged as lost
            if drawing is not None:  # let the step being drawn finish: its thread reads the PDF closed below
                await asyncio.gather(drawing, return_exceptions=True)
            if drawn is not None:
                drawn.close()
            pdf.close()

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
