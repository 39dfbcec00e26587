"""Indexing spread over workers: `pixelrag index --detach` queues six documents, two `pixelrag worker`
processes share them (or a chat process, `pixelrag web`, and a worker), and one is killed with SIGKILL in
the middle of a job. Every document must end up indexed exactly once, each page once, no job left running,
nothing published twice; on the embedded store (an index folder) and on a real PostgreSQL alike."""

from __future__ import annotations

import asyncio
import signal
import sys
import time

import pytest

from core import Service, Settings, job_queue
from tests.conftest import closed_port, text_pdf
from tests.end_to_end.web_process import environment, pixelrag

DOCUMENTS = 6
PAGES = 4  # each: enough for a job to take a few seconds, so that the kill lands inside one
LEASE_S = 4  # a killed worker's job waits this long for another


@pytest.fixture(params=["folder", "postgresql"])
def settings(request, tmp_path) -> Settings:
    url = request.getfixturevalue("database_url") if request.param == "postgresql" else None
    return Settings(index_dir=tmp_path / "index", backend="local", database_url=url)


async def start_worker(settings: Settings, name: str, chat: bool = False) -> asyncio.subprocess.Process:
    """`pixelrag worker --name NAME`; with `chat`, a chat process (`pixelrag web`) whose in-process worker
    is named host:pid:… instead."""
    extra = {"PIXELRAG_JOB_LEASE_S": str(LEASE_S)}
    if settings.database_url:
        extra["PIXELRAG_DATABASE_URL"] = settings.database_url
    command = ["web", "--port", str(closed_port())] if chat else ["worker", "--name", name]
    return await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", *command, "--index", str(settings.index_dir),
        env=environment(**extra), cwd=settings.index_dir.parent,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip


@pytest.mark.parametrize("doomed_by", ["pixelrag worker", "a chat process"])
async def test_a_worker_killed_mid_job_loses_nothing_and_doubles_nothing(settings, tmp_path, doomed_by):
    pdfs = [
        text_pdf(
            tmp_path / f"manual-{n}.pdf",
            [f"Manual {n}, page {p}: the part M{n}-{p} weighs {n}.{p} kg." for p in range(1, PAGES + 1)],
        )
        for n in range(1, DOCUMENTS + 1)
    ]
    settings.index_dir.mkdir()
    env = {"PIXELRAG_DATABASE_URL": settings.database_url} if settings.database_url else {}
    queued = pixelrag(settings.index_dir, "index", "--detach", *map(str, pdfs), env=env)
    assert queued.returncode == 0, queued.stderr
    assert queued.stdout.count("queued: ") == DOCUMENTS

    queue = await job_queue(settings).open()
    doomed = await start_worker(settings, "doomed", chat=doomed_by == "a chat process")
    holder = "doomed" if doomed_by == "pixelrag worker" else f":{doomed.pid}:"  # a chat's worker: host:pid:…
    survivor = None
    try:
        held = None
        for _ in range(3000):  # killed the moment it holds a job: taken, not finished
            held = next((j for j in await queue.jobs() if j.state == "running" and holder in j.worker), None)
            if held is not None:
                doomed.kill()
                break
            await asyncio.sleep(0.02)
        else:
            raise AssertionError("the first worker took no job")
        await doomed.wait()
        [still] = [j for j in await queue.jobs() if j.id == held.id]
        assert (still.state, still.worker) == ("running", held.worker)  # killed inside it
        survivor = await start_worker(settings, "survivor")
        deadline = time.monotonic() + 300
        while any(j.state in ("queued", "running") for j in await queue.jobs()):
            assert time.monotonic() < deadline, await queue.jobs()
            assert survivor.returncode is None, (await survivor.stderr.read()).decode()
            await asyncio.sleep(0.2)
    finally:
        for process in (doomed, survivor):
            if process is not None and process.returncode is None:
                process.send_signal(signal.SIGTERM)
        stderr = (await survivor.stderr.read()).decode() if survivor else ""
        if survivor is not None:
            assert await survivor.wait() == 0, stderr  # SIGTERM: it stops between jobs
        jobs = await queue.jobs()
        await queue.close()

    assert [j.state for j in jobs] == ["done"] * DOCUMENTS, [(j.id, j.state, j.outcome) for j in jobs]
    again = next(j for j in jobs if j.id == held.id)
    assert (again.worker, again.attempts) == ("survivor", 2)  # taken over once its lease ran out
    assert "Traceback" not in stderr
    async with Service(settings) as service:
        documents = await service.all_documents()
        status = await service.status()
    assert sorted(d.file_name for d in documents) == sorted(p.name for p in pdfs)  # each exactly once
    assert all(d.page_count == PAGES for d in documents) and status["pages"] == DOCUMENTS * PAGES
    if settings.database_url:  # each publication is a version: one per document, none twice
        assert status["snapshot"] == f"database version {DOCUMENTS}"


async def test_index_works_on_its_own_jobs_while_a_worker_helps_and_reports_them_all(settings, tmp_path):
    import json

    pdfs = [
        text_pdf(tmp_path / f"guide-{n}.pdf", [f"Guide {n}, page {p}: valve V{n}-{p}." for p in range(1, PAGES + 1)])
        for n in range(1, DOCUMENTS + 1)
    ]
    settings.index_dir.mkdir()
    env = {"PIXELRAG_DATABASE_URL": settings.database_url} if settings.database_url else {}
    queue = await job_queue(settings).open()
    helper = await start_worker(settings, "helper")
    try:
        for _ in range(600):  # alive once its backend is loaded
            if await queue.workers(time.time() - 60):
                break
            await asyncio.sleep(0.1)
        done = await asyncio.to_thread(pixelrag, settings.index_dir, "index", "--json", *map(str, pdfs), env=env)
        jobs = await queue.jobs()
    finally:
        helper.send_signal(signal.SIGTERM)
        stderr = (await helper.stderr.read()).decode()
        assert await helper.wait() == 0, stderr
        await queue.close()
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert sorted(d["file_name"] for d in report["documents"]) == sorted(
        p.name for p in pdfs
    )  # its own and the helper's
    assert report["pages_embedded"] == DOCUMENTS * PAGES and report["skipped"] == []
    assert [j.state for j in jobs] == ["done"] * DOCUMENTS
    workers = {j.worker for j in jobs}
    assert "helper" in workers and len(workers) == 2, workers  # the command did some, the worker the rest
