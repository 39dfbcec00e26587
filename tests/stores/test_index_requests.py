"""Indexing asked for as jobs (core.IndexRequests), on both stores with the local backend: one report for
a request's jobs, failures said as before, an upload's bytes kept only while its job lasts, and a process
that may not index (PIXELRAG_WORKERS=0) waiting for another worker while passing on its progress."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from core import (
    BadInput,
    IndexRequests,
    Progress,
    Service,
    Settings,
    Worker,
    job_queue,
    job_runner,
    new_jobs,
    told_later,
)
from core.records import Job
from tests.conftest import text_pdf


@pytest.fixture(params=["folder", "postgresql"])
def settings(request, tmp_path) -> Settings:
    url = request.getfixturevalue("database_url") if request.param == "postgresql" else None
    return Settings(index_dir=tmp_path / "index", backend="local", database_url=url, job_lease_s=4)


@pytest.fixture
async def service(settings):
    async with Service(settings) as made:
        yield made


async def queued(settings: Settings) -> list[Job]:
    queue = await job_queue(settings).open()
    try:
        return await queue.jobs()
    finally:
        await queue.close()


async def upload(settings: Settings, job_id: str) -> bytes | None:
    queue = await job_queue(settings).open()
    try:
        return await queue.upload(job_id)
    finally:
        await queue.close()


def requests(service: Service, work_here: bool = True) -> IndexRequests:
    return IndexRequests(service, work_here=work_here, lease_s=service.settings.job_lease_s)


async def test_one_report_for_a_requests_jobs(service, tmp_path):
    relay = text_pdf(tmp_path / "relay.pdf", ["Relay R200 switches 16 A.", "Coil 24 V."])
    pump = text_pdf(tmp_path / "pump.pdf", ["Pump P9 weighs 2.6 kg."])
    seen: list[Progress] = []
    report = await requests(service).index([str(relay), str(pump), str(relay)], progress=seen.append)
    assert [d.title for d in report.documents] == ["relay.pdf", "pump.pdf"]
    assert (report.pages_total, report.pages_embedded, report.pages_reused) == (3, 3, 0)
    assert report.unchanged == () and report.skipped == ()  # the same file twice: indexed once, said once
    assert {p.stage for p in seen} >= {"embed", "publish"}
    done = await queued(service.settings)
    assert [j.state for j in done] == ["done"] * 3 and len({j.batch for j in done}) == 1
    again = await requests(service).index([str(relay)])
    assert again.documents == () and [d.title for d in again.unchanged] == ["relay.pdf"]


async def test_refused_pdfs_are_skipped_or_raised_as_before(service, tmp_path):
    good = text_pdf(tmp_path / "good.pdf", ["Valve V3 opens at 2 bar."])
    bad = tmp_path / "bad.pdf"
    bad.write_text("not a PDF")
    report = await requests(service).index([str(good), str(bad)])
    assert [d.title for d in report.documents] == ["good.pdf"]
    assert report.skipped == ("bad.pdf: not a PDF.",)
    with pytest.raises(BadInput) as refused:
        await requests(service).index([str(bad), str(tmp_path / "missing.pdf")])
    assert "bad.pdf: not a PDF." in str(refused.value) and "missing.pdf" in str(refused.value)
    assert [d.title for d in await service.all_documents()] == ["good.pdf"]


async def test_an_upload_is_indexed_into_its_collection_and_let_go_of(service, tmp_path):
    data = text_pdf(tmp_path / "x.pdf", ["Sensor S1 reads 0-10 bar."]).read_bytes()
    report = await requests(service).index_bytes(data, "sensor.pdf", scope="slack:T1:C1", notify="slack:T1:C1:1.5")
    [document] = report.documents
    assert (document.title, document.scope, document.source) == ("sensor.pdf", "slack:T1:C1", "attachment:sensor.pdf")
    [job] = await queued(service.settings)
    assert (job.kind, job.notify, job.state) == ("upload", "slack:T1:C1:1.5", "done")
    assert await upload(service.settings, job.id) is None
    with pytest.raises(BadInput, match="over the"):
        await requests(service).index_bytes(b"%PDF" + bytes(service.settings.max_pdf_bytes), "huge.pdf", scope="shared")


async def test_a_process_that_may_not_index_waits_for_a_worker_and_shows_its_progress(service, settings, tmp_path):
    manual = text_pdf(tmp_path / "manual.pdf", [f"Gear G{n} torque {n} Nm." for n in range(1, 41)])
    seen: list[Progress] = []
    asked = asyncio.create_task(requests(service, work_here=False).index([str(manual)], progress=seen.append))
    await asyncio.sleep(1.5)
    assert not asked.done() and [j.state for j in await queued(service.settings)] == ["queued"]  # nobody indexes here
    async with Service(settings) as elsewhere:  # another process's worker
        queue = await job_queue(settings).open()
        worker = Worker(queue, job_runner(elsewhere, queue), name="elsewhere", lease_s=1)
        stop = asyncio.Event()
        working = asyncio.create_task(worker.work(stop))
        report = await asyncio.wait_for(asked, 120)
        stop.set()
        await working
        await queue.close()
    assert [d.title for d in report.documents] == ["manual.pdf"] and report.pages_embedded == 40
    assert any(p.total == 40 for p in seen)  # read from the job, as the worker recorded it
    [job] = await queued(service.settings)
    assert (job.worker, job.state) == ("elsewhere", "done")


async def test_reindex_is_a_job_too(service, tmp_path):
    pdf = text_pdf(tmp_path / "relay.pdf", ["Relay R200 switches 16 A."])
    await requests(service).index([str(pdf)])
    text_pdf(Path(pdf), ["Relay R200 switches 10 A."])  # the same path, new content
    report = await requests(service).reindex("shared")
    assert [d.title for d in report.documents] == ["relay.pdf"] and report.pages_embedded == 1
    assert [j.kind for j in await queued(service.settings)] == ["index", "reindex"]


async def test_a_request_whose_process_died_is_told_once_by_another(service, settings, tmp_path, monkeypatch):
    import core.indexing.requests

    monkeypatch.setattr(core.indexing.requests, "TELL_AFTER_S", 0.0)
    relay = text_pdf(tmp_path / "relay.pdf", ["Relay R200 switches 16 A."])
    pump = text_pdf(tmp_path / "pump.pdf", ["Pump P9 weighs 2.6 kg."])
    await requests(service).index([str(pump)], notify="slack:T1:C9:1.1")  # told by the process that asked
    asked = asyncio.create_task(
        requests(service, work_here=False).index([str(relay)], notify="slack:T1:C9:1700000000.000100")
    )
    await asyncio.sleep(0.5)
    asked.cancel()  # the process that asked stops before its job is done
    with pytest.raises(asyncio.CancelledError):
        await asked
    queue = await job_queue(settings).open()
    try:
        assert await told_later(queue, "slack") == []  # not ended yet
        await Worker(queue, job_runner(service, queue), name="elsewhere").work(batch=(await queue.jobs())[-1].batch)
        assert await told_later(queue, "discord") == []
        [(where, text)] = await told_later(queue, "slack")
        assert where == "C9:1700000000.000100"
        assert text.startswith("The indexing asked for here has ended:\n✅ indexed relay.pdf (1 pages")
        assert await told_later(queue, "slack") == []  # once
    finally:
        await queue.close()


async def test_an_interrupted_command_ends_its_jobs_and_a_chats_request_outlives_its_process(service, tmp_path):
    manual = text_pdf(tmp_path / "manual.pdf", [f"Gear G{n} torque {n} Nm." for n in range(1, 41)])
    relay = text_pdf(tmp_path / "relay.pdf", ["Relay R200 switches 16 A."])
    command = IndexRequests(service, work_here=True, lease_s=4, ends_with_asker=True)
    asked = asyncio.create_task(command.index([str(manual), str(relay)]))
    for _ in range(300):  # interrupted while it works on the first
        await asyncio.sleep(0.02)
        if any(j.state == "running" for j in await queued(service.settings)):
            break
    asked.cancel()
    with pytest.raises(asyncio.CancelledError):
        await asked
    ended = await queued(service.settings)
    assert [(j.state, j.outcome) for j in ended] == [
        ("failed", "cancelled: the command that asked for it was interrupted")
    ] * 2
    assert await service.all_documents() == []  # no worker takes them up later

    chat = asyncio.create_task(requests(service, work_here=False).index([str(relay)], scope="slack:T1"))
    await asyncio.sleep(0.3)
    chat.cancel()  # the chat process stops: its request stays queued for the workers
    with pytest.raises(asyncio.CancelledError):
        await chat
    assert (await queued(service.settings))[-1].state == "queued"


async def test_the_same_pdf_asked_twice_at_once_is_indexed_once_and_a_stale_job_blocks_nothing(service, tmp_path):
    from core import Busy

    manual = text_pdf(tmp_path / "manual.pdf", [f"Gear G{n} torque {n} Nm." for n in range(1, 21)])
    asking = requests(service)
    under_way = asyncio.Event()
    first = asyncio.create_task(asking.index([str(manual)], progress=lambda p: under_way.set()))
    await asyncio.wait_for(under_way.wait(), 60)  # the first is being indexed
    with pytest.raises(Busy, match="manual.pdf is already being indexed"):
        await asking.index([str(manual)])
    assert [d.title for d in (await first).documents] == ["manual.pdf"]
    assert len(await queued(service.settings)) == 1  # the second was not queued

    # A job queued by a command killed with SIGKILL (never taken) blocks nothing: the PDF is up to date.
    queue = await job_queue(service.settings).open()
    try:
        await queue.add(new_jobs([str(manual)], "shared")[1])
    finally:
        await queue.close()
    again = await requests(service).index([str(manual)])
    assert [d.title for d in again.unchanged] == ["manual.pdf"]
