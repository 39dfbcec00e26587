"""Working on indexing jobs (core/ports.JobQueue): take one, hold it under a lease renewed while it runs
(with its progress, so that any process can show it), index its document, and say how it ended.

A worker killed mid-job stops renewing: its lease runs out and another worker takes the job again. That
is safe: a build publishes a whole snapshot or nothing, and a document already published by the killed
worker is "up to date" for the next one (found by its content), so nothing is lost or indexed twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BadInput, PixelragError
from ..metrics import JOB_SECONDS, JOBS, JOBS_WAITING
from ..ports import JobQueue
from ..records import Document, IndexReport, Job, Progress
from .sources import hide_credentials, readable_path

if TYPE_CHECKING:
    from ..service import Service

log = logging.getLogger("pixelrag.worker")

POLL_S = 1.0  # how often an idle worker looks for work
PROGRESS_S = 1.0  # how often a job's progress is recorded, at most, for other processes to show

# A job done: its outcome line and its result (an index job's IndexReport as JSON)
RunJob = Callable[[Job, Callable[[Progress], None]], Awaitable[tuple[str, dict]]]


def new_jobs(
    sources: Sequence[str], scope: str, titles: Sequence[str | None] = (), kind: str = "index", notify: str = ""
) -> tuple[str, list[Job]]:
    """(batch id, one job per source) for one request; ids numbered so that they sort in order."""
    batch = uuid.uuid4().hex[:12]
    now = time.time()
    width = len(str(len(sources)))
    jobs = [
        Job(
            id=f"{batch}-{i + 1:0{width}d}",
            source=storable(source),
            scope=scope,
            title=titles[i] if i < len(titles) else None,
            kind=kind,
            batch=batch,
            created=now,
            notify=notify,
        )
        for i, source in enumerate(sources)
    ]
    return batch, jobs


FS_BYTES = "fs-bytes:"  # a path whose name is not UTF-8, kept as its bytes in hex


def storable(source: str) -> str:
    """A job's source as text both stores accept: a name that is not UTF-8 (Python keeps its bytes as
    lone surrogates) is kept as its bytes."""
    try:
        source.encode("utf-8")
        return source
    except UnicodeEncodeError:
        return FS_BYTES + os.fsencode(source).hex()


def source_of(job: Job) -> str:
    """The path or address the job names (storable's inverse)."""
    if job.source.startswith(FS_BYTES):
        return os.fsdecode(bytes.fromhex(job.source.removeprefix(FS_BYTES)))
    return job.source


def shown_source(job: Job) -> str:
    """What the job names, as text to show: a name that is not UTF-8 with U+FFFD for its odd bytes, an
    address without its credentials."""
    return hide_credentials(readable_path(Path(source_of(job))) if job.source.startswith(FS_BYTES) else job.source)


def worker_name() -> str:
    """host:pid:random — unique, and saying where the worker runs."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"


class Worker:
    def __init__(
        self,
        queue: JobQueue,
        run: RunJob,
        name: str | None = None,
        lease_s: float = 60.0,
        progress: Callable[[Progress], None] | None = None,
    ):
        """`progress` hears each job's progress as it happens (the job records it at each renewal)."""
        self.queue, self.run = queue, run
        self.name = name or worker_name()
        self.lease_s = lease_s
        self.progress = progress

    async def work(self, stop: asyncio.Event | None = None, batch: str | None = None) -> int:
        """Take and do jobs until `stop` is set (with `batch`: only that batch's, and only while there
        are some to take); the number done."""
        done = 0
        while stop is None or not stop.is_set():
            await self.queue.beat(self.name, time.time())
            if batch is None:
                await self.schedule()
            job = await self.queue.take(self.name, self.lease_s, batch)
            if job is None:
                if batch is not None:
                    return done
                JOBS_WAITING.set(await self.queue.waiting())
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(stop.wait() if stop else asyncio.sleep(POLL_S), POLL_S)
                continue
            await self.do(job)
            done += 1
        return done

    async def schedule(self) -> None:
        """A check job for each watched source that is due (held until its check sets the next one)."""
        for source in await self.queue.due(time.time(), source_hold_s(self.lease_s)):
            _, jobs = new_jobs([source.id], source.scope, kind="check")
            await self.queue.add(jobs)

    async def do(self, job: Job) -> tuple[str, str]:
        """Index the job's document, renewing the lease meanwhile; (state, outcome) as recorded."""
        latest: dict = {}

        def heard(progress: Progress) -> None:
            if progress.stage != latest.get("stage"):  # each stage's rate counts from its start
                latest["since"] = time.time()
            latest.update(stage=progress.stage, done=progress.done, total=progress.total)
            if self.progress is not None:
                self.progress(progress)

        async def renewing() -> None:
            renewed, recorded = time.monotonic(), dict[str, object]()
            while True:
                await asyncio.sleep(min(self.lease_s / 4, PROGRESS_S))
                if latest == recorded and time.monotonic() - renewed < self.lease_s / 4:
                    continue  # nothing new to record, and the lease is not due
                renewed, recorded = time.monotonic(), dict(latest)
                try:
                    if not await self.queue.renew(job.id, self.name, self.lease_s, dict(latest)):
                        log.warning("job %s was taken by another worker (this one was too slow to renew)", job.id)
                    await self.queue.beat(self.name, time.time())
                except Exception as exc:  # the queue away for a moment: the next renewal may reach it
                    log.warning("job %s: its lease could not be renewed (%s)", job.id, exc)

        log.info("job %s: %s %s in %s (attempt %d)", job.id, job.kind, job.source, job.scope, job.attempts)
        started = time.monotonic()
        renewal = asyncio.create_task(renewing())
        try:
            outcome, result = await self.run(job, heard)
            state = "done"
        except PixelragError as exc:
            state, outcome, result = "failed", str(exc), {"error": type(exc).__name__}
        except Exception as exc:
            log.exception("job %s failed", job.id)
            state, outcome = "failed", f"Something went wrong ({type(exc).__name__}); it was logged."
            result = {"error": "PixelragError"}
        finally:
            renewal.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewal
        JOBS.labels(job.kind, state).inc()
        JOB_SECONDS.labels(job.kind).observe(time.monotonic() - started)
        if not await self.queue.finish(job.id, self.name, state, outcome, result):
            log.warning("job %s ended (%s) after another worker took it over", job.id, state)
        log.info("job %s %s: %s", job.id, state, outcome)
        return state, outcome


def source_hold_s(lease_s: float) -> float:
    """How long a due source waits for its queued check before it is due again: long enough for the
    check to be taken and done (its job's lease included), so that a lost one is not waited on forever."""
    return 4 * lease_s + 600


def job_runner(service: Service, queue: JobQueue) -> RunJob:
    """What a worker does with each kind of job (JOB_KINDS), with `service`'s index."""
    from .watching import check

    async def run(job: Job, heard: Callable[[Progress], None]) -> tuple[str, dict]:
        if job.kind == "check":
            return await check(service, queue, job.source, heard), {}
        if job.kind == "upload":
            data = await queue.upload(job.id)
            if data is None:
                raise BadInput(f"{job.source}: the uploaded PDF is no longer kept; send it again.")
            report = await service.index_bytes(data, job.source, scope=job.scope, title=job.title, progress=heard)
        elif job.kind == "reindex":
            report = await service.reindex(job.scope, job.source or None, progress=heard)
        else:
            titles = [job.title] if job.title else []
            report = await service.index([source_of(job)], titles=titles, scope=job.scope, progress=heard)
        return summary(report), report_json(report)

    return run


def summary(report: IndexReport) -> str:
    """What a done job made, in a line."""
    if report.skipped and not report.documents:
        return "; ".join(report.skipped)
    if report.unchanged and not report.documents:
        return "up to date: " + ", ".join(d.title for d in report.unchanged)
    made = ", ".join(f"{d.title} ({d.page_count} pages, id {d.doc_id})" for d in report.documents)
    return f"indexed {made}: {report.pages_embedded} pages embedded, {report.pages_reused} reused"


def report_json(report: IndexReport) -> dict:
    return dataclasses.asdict(report)


def report_of(result: dict) -> IndexReport:
    """An IndexReport from its JSON (a job's result)."""
    fields = dict(result)
    for name in ("documents", "unchanged"):
        fields[name] = tuple(Document(**d) for d in fields.get(name, ()))
    for name in ("skipped", "warnings"):
        fields[name] = tuple(fields.get(name, ()))
    return IndexReport(**fields)
