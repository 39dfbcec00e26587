"""Pages drawn in worker processes are the pages drawn in this process, in page order."""

from __future__ import annotations

from concurrent.futures import wait

import pymupdf

from core.config import Settings
from core.indexing.page_rendering import WORTH_STARTING, PageRenderer, WorkerPages
from core.indexing.sources import Source, open_pdf


def _pdf(pages: int) -> bytes:
    doc = pymupdf.open()
    for n in range(pages):
        page = doc.new_page(width=300, height=400)
        page.insert_text((40, 60 + 10 * (n % 20)), f"Page {n + 1}: pump P{n} delivers {n * 3} l/min")
        page.draw_rect(pymupdf.Rect(40, 300, 80 + n, 340), color=(0, 0, 1))
    return doc.tobytes()


async def test_worker_processes_draw_the_same_pages_in_order_as_this_process():
    total = WORTH_STARTING + 5
    source = Source(_pdf(total), "pumps.pdf", "pumps.pdf")
    settings = Settings()
    drawn = {}
    for workers in (1, 2):
        renderer = PageRenderer(settings.with_(index_workers=workers))
        pdf = open_pdf(source, settings)
        pages = renderer.for_document(pdf, source, "doc1", step_size=8)
        assert isinstance(pages, WorkerPages) == (workers == 2)
        wait(renderer._started)  # until they are up, steps are drawn in this process
        try:
            drawn[workers] = [
                p for start in range(0, total, 8) for p in await pages.render(range(start, min(total, start + 8)))
            ]
        finally:
            pages.close()
            renderer.close()
            pdf.close()
    assert [p.page.page for p in drawn[2]] == list(range(1, total + 1))
    assert drawn[2] == drawn[1]  # records, words, hashes and JPEG bytes alike


async def test_short_documents_start_no_workers_but_use_those_a_long_one_started():
    settings = Settings(index_workers=2)
    renderer = PageRenderer(settings)
    opened = {pages: (Source(_pdf(pages), f"{pages}.pdf", f"{pages}.pdf")) for pages in (8, 20, WORTH_STARTING)}
    pdfs = {pages: open_pdf(source, settings) for pages, source in opened.items()}

    def drawn_by_workers(pages: int) -> bool:
        drawn = renderer.for_document(pdfs[pages], opened[pages], f"doc{pages}", step_size=8)
        drawn.close()
        return isinstance(drawn, WorkerPages)

    try:
        assert not drawn_by_workers(20)
        assert renderer._pool is None  # not worth starting processes for it
        assert drawn_by_workers(WORTH_STARTING)
        assert drawn_by_workers(20)  # the processes are there now
        assert not drawn_by_workers(8)  # one step: nothing to draw ahead
    finally:
        for pdf in pdfs.values():
            pdf.close()
        renderer.close()


ORPHAN_SCRIPT = """
import asyncio, sys, time
from concurrent.futures import wait
from core.config import Settings
from core.indexing.sources import Source, open_pdf
from core.indexing.page_rendering import WORTH_STARTING, PageRenderer
from tests.core.test_page_rendering import _pdf

async def main():
    source = Source(_pdf(WORTH_STARTING), "pumps.pdf", "pumps.pdf")
    renderer = PageRenderer(Settings(index_workers=2))
    pages = renderer.for_document(open_pdf(source, Settings()), source, "doc1", step_size=4)
    wait(renderer._started)
    await pages.render(range(0, 4))
    print(pages.path, *renderer._pool._processes, flush=True)
    time.sleep(600)

asyncio.run(main())
"""


def _running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"  # an exited child nobody reaped yet is gone
    except FileNotFoundError:
        return False


def test_workers_and_their_pdf_copy_go_when_the_indexing_process_is_killed(tmp_path):
    import os
    import signal
    import subprocess
    import sys
    import time

    from tests.conftest import ROOT

    proc = subprocess.Popen([sys.executable, "-c", ORPHAN_SCRIPT], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        path, *workers = proc.stdout.readline().split()
        assert len(workers) == 2 and all(_running(int(pid)) for pid in workers) and os.path.exists(path)
    finally:
        proc.send_signal(signal.SIGKILL)  # no shutdown, no finally: as the OOM killer does it
        proc.wait()
    deadline = time.monotonic() + 30
    while any(_running(int(pid)) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not [pid for pid in workers if _running(int(pid))]
    assert not os.path.exists(path)


async def test_a_worker_that_dies_fails_its_document_only():
    import os
    import signal

    settings = Settings(index_workers=2)
    source = Source(_pdf(WORTH_STARTING), "pumps.pdf", "pumps.pdf")
    renderer = PageRenderer(settings)
    pdf = open_pdf(source, settings)
    try:
        pages = renderer.for_document(pdf, source, "doc1", step_size=8)
        wait(renderer._started)
        os.kill(next(iter(renderer._pool._processes)), signal.SIGKILL)  # as PyMuPDF crashing on a page would
        drawn = await pages.render(range(8, 16))
        pages.close()
        assert [(p.index, p.reason) for p in drawn] == [(8, "a render process stopped while drawing pages 9-16")]
        again = renderer.for_document(pdf, source, "doc1", step_size=8)  # new workers for the next try
        wait(renderer._started)
        try:
            assert [p.page.page for p in await again.render(range(8, 16))] == list(range(9, 17))
        finally:
            again.close()
    finally:
        renderer.close()
        pdf.close()


async def test_closing_the_service_stops_its_render_workers(tmp_path):
    from core.service import Service

    service = Service(Settings(index_dir=tmp_path / "index", backend="local", index_workers=2))
    renderer = service.indexer.renderer
    source = Source(_pdf(WORTH_STARTING), "pumps.pdf", "pumps.pdf")
    pdf = open_pdf(source, service.settings)
    try:
        renderer.for_document(pdf, source, "doc1", step_size=8).close()
        wait(renderer._started)
        workers = list(renderer._pool._processes)
        assert workers and all(_running(pid) for pid in workers)
        await service.close()
        assert renderer.ready_pool() is None and not any(_running(pid) for pid in workers)
    finally:
        pdf.close()
