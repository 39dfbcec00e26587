"""Drawing a PDF's pages for indexing: in a worker thread, or in worker processes when there are cores to spare.

Drawing a page, hashing its pixels, encoding its JPEG and reading its text layer (documents.render_page) is
the work every backend does for every page, and PyMuPDF holds the interpreter while it draws, so threads do
not share it out. With PIXELRAG_INDEX_WORKERS above 1, a long document is drawn by that many spawned
processes (kept for any later document of more than one step), each reading its own copy of the PDF from a
temporary file; a step's pages are split among them and come back in page order, and the next step is being
drawn while this one is embedded.
"""

from __future__ import annotations

import asyncio
import multiprocessing
import os
import tempfile
import threading
import time
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass

from ..config import Settings
from .sources import RenderedPage, Source, render_page

# Each worker spends most of a second of CPU importing its modules; below about this many pages the workers
# do not earn that back (eval/bench_indexing.py, Gemini backend).
WORTH_STARTING = 100  # pages


@dataclass(frozen=True)
class Unrenderable:
    """A page PyMuPDF could not draw, and why."""

    index: int
    reason: str


class PageRenderer:
    """Draws the pages of one document at a time; worker processes are started at the first document that
    needs them and kept for the next."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self._pool: Executor | None = None
        self._started: list[Future] = []

    def for_document(self, pdf, source: Source, doc_id: str, step_size: int) -> DocumentPages:
        """The pages of `pdf` (opened from `source`), to be drawn `step_size` at a time."""
        workers = self.settings.index_workers
        if workers < 2 or pdf.page_count <= step_size or (self._pool is None and pdf.page_count < WORTH_STARTING):
            return DocumentPages(pdf, doc_id, self.settings)
        if self._pool is None:
            # spawn, not fork: this process has threads (the event loop's workers, the models' own)
            spawn = multiprocessing.get_context("spawn")
            self._pool = ProcessPoolExecutor(workers, mp_context=spawn, initializer=_exit_with, initargs=(os.getpid(),))
            # one task per worker starts them all now; they take a while to import their modules
            self._started = [self._pool.submit(_started) for _ in range(workers)]
        return WorkerPages(pdf, doc_id, self, source.data)

    def ready_pool(self) -> Executor | None:
        """The worker processes, once every one of them is up; None while they start (or after they failed)."""
        if self._pool is None or not all(worker.done() for worker in self._started):
            return None
        return self._pool

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(cancel_futures=True)
            self._pool = None


class DocumentPages:
    """A document's pages drawn in a worker thread of this process."""

    def __init__(self, pdf, doc_id: str, settings: Settings):
        self.pdf, self.doc_id, self.settings = pdf, doc_id, settings

    async def render(self, indexes: range) -> list[RenderedPage | Unrenderable]:
        """Pages `indexes`, in order; drawing stops at the first page that cannot be drawn."""
        return await asyncio.to_thread(_render_all, self.pdf, indexes, self.doc_id, self.settings)

    def close(self) -> None:
        pass


class WorkerPages(DocumentPages):
    """A document's pages drawn by worker processes from a temporary copy of the PDF."""

    def __init__(self, pdf, doc_id: str, renderer: PageRenderer, data: bytes):
        super().__init__(pdf, doc_id, renderer.settings)
        self.renderer = renderer
        handle, self.path = tempfile.mkstemp(suffix=".pdf", prefix="pixelrag-render-")
        with os.fdopen(handle, "wb") as out:
            out.write(data)

    async def render(self, indexes: range) -> list[RenderedPage | Unrenderable]:
        pool = self.renderer.ready_pool()
        if pool is None:
            return await super().render(indexes)  # workers starting (or gone): this step is drawn here
        size = -(-len(indexes) // self.settings.index_workers)
        shares = [indexes[k : k + size] for k in range(0, len(indexes), size)]
        loop = asyncio.get_running_loop()
        try:
            done = await asyncio.gather(
                *(
                    loop.run_in_executor(pool, _render_file, self.path, share, self.doc_id, self.settings)
                    for share in shares
                )
            )
        except BrokenProcessPool:  # a worker died (PyMuPDF crashed on a page, or it was killed)
            self.renderer.close()  # the next document starts new workers
            reason = f"a render process stopped while drawing pages {indexes.start + 1}-{indexes.stop}"
            return [Unrenderable(indexes.start, reason)]
        return [page for share in done for page in share]

    def close(self) -> None:
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass


def _render_all(pdf, indexes: range, doc_id: str, settings: Settings) -> list[RenderedPage | Unrenderable]:
    out: list[RenderedPage | Unrenderable] = []
    for i in indexes:
        try:
            out.append(render_page(pdf, i, doc_id, settings))
        except Exception as exc:  # PyMuPDF raises several types for a page it cannot draw
            out.append(Unrenderable(i, str(exc)))
            break
    return out


def _started() -> None:
    """In a worker process: nothing; its return says the worker is up."""


def _exit_with(parent: int) -> None:
    """In a worker process: exit when the indexing process is gone. A process killed outright (SIGKILL, the
    OOM killer) cannot shut its pool down, and the workers, blocked on a queue they hold both ends of, would
    otherwise live on; the copy of the PDF they read goes with them."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1)
        for path in _opened:
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


_opened: dict[str, object] = {}  # in a worker process: the PDF it read last, kept open for its next share


def _render_file(path: str, indexes: range, doc_id: str, settings: Settings) -> list[RenderedPage | Unrenderable]:
    """In a worker process: pages `indexes` of the PDF at `path`."""
    import pymupdf

    if path not in _opened:
        for old in _opened.values():
            old.close()  # type: ignore[attr-defined]
        _opened.clear()
        _opened[path] = pymupdf.open(path)
    return _render_all(_opened[path], indexes, doc_id, settings)
