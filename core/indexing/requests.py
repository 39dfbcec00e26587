"""Indexing someone asked for (`pixelrag index`, a chat's index command, a PDF shared in a chat) as jobs
in the store's queue: one per PDF, queued together as one batch. The process that asked works on its
batch itself when it may (other workers can take some of it meanwhile), else it waits for the workers;
either way it follows the batch to its end, passing on the progress the jobs record, and gives back one
IndexReport of them all, as a build in this process would."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ..errors import BadInput, Busy, IndexProblem, PixelragError
from ..ports import JobQueue
from ..records import SHARED_SCOPE, IndexReport, Job, Progress
from ..storage import job_queue
from .indexer import ProgressFn, check_titles
from .worker import POLL_S, Worker, job_runner, new_jobs, report_of, shown_source

if TYPE_CHECKING:
    from ..service import Service

ERRORS: dict[str, type[PixelragError]] = {e.__name__: e for e in (BadInput, Busy, IndexProblem)}


class IndexRequests:
    """Each request opens the queue and lets go of it when it ends: a bot holds no connection between."""

    def __init__(self, service: Service, *, work_here: bool, lease_s: float, ends_with_asker: bool = False):
        """`ends_with_asker`: a command line's request, whose jobs not yet done end when the command is
        interrupted (Ctrl-C). A chat's request outlives its process: another worker finishes it."""
        self.service = service
        self.work_here, self.lease_s = work_here, lease_s
        self.ends_with_asker = ends_with_asker
        self._queuing = asyncio.Lock()
        self._following: set[tuple[str, str, str]] = set()  # (kind, scope, source) of requests under way here

    async def index(
        self,
        sources: Sequence[str],
        *,
        titles: Sequence[str | None] = (),
        scope: str = SHARED_SCOPE,
        progress: ProgressFn | None = None,
        notify: str = "",
    ) -> IndexReport:
        """PDFs by path (the shared collection only) or http(s) address."""
        check_titles(sources, titles)
        return await self.asked(new_jobs(sources, scope, titles, notify=notify)[1], progress)

    async def index_bytes(
        self,
        data: bytes,
        name: str,
        *,
        scope: str,
        title: str | None = None,
        progress: ProgressFn | None = None,
        notify: str = "",
    ) -> IndexReport:
        """A PDF received in a chat: its bytes are kept with the job until the job ends."""
        limit = self.service.settings.max_pdf_bytes
        if len(data) > limit:
            raise BadInput(f"{name}: {len(data) / 1e6:.0f} MB is over the {limit / 1e6:.0f} MB limit.")
        _, jobs = new_jobs([name], scope, [title], kind="upload", notify=notify)
        return await self.asked(jobs, progress, {jobs[0].id: data})

    async def reindex(
        self, scope: str, document: str | None = None, progress: ProgressFn | None = None, notify: str = ""
    ) -> IndexReport:
        """A collection's documents (or one) fetched again from where they came from."""
        return await self.asked(new_jobs([document or ""], scope, kind="reindex", notify=notify)[1], progress)

    async def asked(
        self, jobs: Sequence[Job], progress: ProgressFn | None, uploads: Mapping[str, bytes] | None = None
    ) -> IndexReport:
        """The jobs queued, then followed to their end. A PDF that another request of this process is
        following, or that a live worker is indexing, is not queued again: it is said to be under way
        (Busy when nothing is left). A queued or abandoned job for it does not count: it may wait for a
        worker that never comes, and a second build of the same PDF finds it up to date."""
        queue = await job_queue(self.service.settings).open()
        mine: set[tuple[str, str, str]] = set()
        try:
            async with self._queuing:  # two requests at once for the same PDF: the second sees the first's
                now = time.time()
                running = {_key(j) for j in await queue.jobs(since=now) if not _lapsed(j) and j.state == "running"}
                busy = [j for j in jobs if _key(j) in running | self._following]
                jobs = [j for j in jobs if j not in busy]
                if not jobs:
                    raise Busy(_busy_message(busy))
                await queue.add(jobs, {k: v for k, v in (uploads or {}).items() if any(j.id == k for j in jobs)})
                mine = {_key(j) for j in jobs} - self._following
                self._following |= mine
            try:
                report = await self.follow(queue, jobs[0].batch, progress)
                if busy:
                    report = dataclasses.replace(report, skipped=report.skipped + (_busy_message(busy),))
            except PixelragError:
                await _told(queue, jobs[0])
                raise
            except (asyncio.CancelledError, KeyboardInterrupt):
                if self.ends_with_asker:
                    await queue.cancel(jobs[0].batch, "cancelled: the command that asked for it was interrupted")
                raise
            await _told(queue, jobs[0])
            return report
        finally:
            self._following -= mine
            await queue.close()

    async def follow(self, queue: JobQueue, batch: str, progress: ProgressFn | None) -> IndexReport:
        """Work on the batch (when this process may), then wait for what others hold; its report."""
        worker = Worker(queue, job_runner(self.service, queue), lease_s=self.lease_s, progress=progress)
        if self.work_here:
            await worker.work(batch=batch)
        shown: dict = {}
        while True:
            jobs = await queue.jobs(batch)
            if all(j.state in ("done", "failed") for j in jobs):
                return merged(jobs)
            if self.work_here and any(j.state == "queued" or _lapsed(j) for j in jobs):
                await worker.work(batch=batch)  # a job another worker dropped (it died): taken again here
                continue
            for job in jobs:  # what the workers holding them last recorded
                step = job.progress
                if progress is not None and job.state == "running" and step.get("total") and step != shown:
                    shown = step
                    progress(Progress(step["stage"], step["done"], step["total"]))
            await asyncio.sleep(POLL_S)


def _busy_message(jobs: Sequence[Job]) -> str:
    names = ", ".join(shown_source(j) for j in jobs)
    return f"{names} is already being indexed; you will see its summary when it is done."


async def _told(queue: JobQueue, job: Job) -> None:
    """The caller tells the thread how its request ended: no other process is to (told_later). A process
    stopped while following its request gets here not at all."""
    if job.notify:
        await queue.claim_telling(job.batch, time.time())


def _key(job: Job) -> tuple[str, str, str]:
    return (job.kind, job.scope, job.source)


def _lapsed(job: Job) -> bool:
    return job.state == "running" and job.lease_until < time.time()


def merged(jobs: Sequence[Job]) -> IndexReport:
    """One report for a batch's jobs: their documents and counts together; a failed job's reason among
    the skipped. When nothing was done at all, the first failure is raised as what it was."""
    reports = [report_of(j.result) for j in jobs if j.state == "done" and j.result]
    failed = [j for j in jobs if j.state == "failed"]
    if not reports:
        if not failed:
            raise BadInput("Nothing to index.")
        kind = ERRORS.get(failed[0].result.get("error", ""), PixelragError)
        if kind is BadInput:  # every PDF refused: all their reasons, as one build gave them
            raise BadInput("\n".join(j.outcome for j in failed if j.result.get("error") == "BadInput"))
        raise kind(failed[0].outcome)
    documents = [d for r in reports for d in r.documents]
    made = {d.doc_id for d in documents}
    unchanged = {d.doc_id: d for r in reports for d in r.unchanged if d.doc_id not in made}
    last = reports[-1]
    return IndexReport(
        tuple(documents),
        last.pages_total,
        sum(r.pages_embedded for r in reports),
        sum(r.pages_reused for r in reports),
        last.snapshot,
        tuple(m for r in reports for m in r.skipped) + tuple(j.outcome for j in failed),
        tuple(unchanged.values()),
        tuple(dict.fromkeys(w for r in reports for w in r.warnings)),
    )


TELL_AFTER_S = 60.0  # a request its own process has not told within this after it ended: that process died


async def told_later(queue: JobQueue, platform: str) -> list[tuple[str, str]]:
    """(where, what) for each request from `platform`'s threads that ended untold, now claimed: where is
    the channel, and the thread in it if any ("C9:1700000000.000100"); what, a line per job."""
    batches: dict[str, list[Job]] = {}
    for job in await queue.untold(platform, time.time() - TELL_AFTER_S):
        batches.setdefault(job.batch, []).append(job)
    told = []
    for batch, jobs in batches.items():
        if await queue.claim_telling(batch, time.time()):
            lines = [("✅ " if j.state == "done" else "⚠️ ") + j.outcome for j in jobs]
            told.append(
                (jobs[0].notify.split(":", 2)[2], "The indexing asked for here has ended:\n" + "\n".join(lines))
            )
    return told
