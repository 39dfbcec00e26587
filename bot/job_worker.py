"""The indexing worker a chat process runs beside its bot, so that queued jobs and the watched sources'
checks get done with nothing but the bot running (PIXELRAG_WORKERS=0 turns it off, for chat replicas
when dedicated `pixelrag worker`s do the indexing)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

from core import PixelragError, Service, Settings, Worker, failure_reason, job_queue, job_runner, queue_status

log = logging.getLogger("pixelrag.worker")

RETRY_S = 10.0  # after the queue itself failed (the database away): tried again, waiting twice as long each time
MAX_RETRY_S = 600.0
STOP_S = 30.0  # a job under way may finish within this when the process stops; else its lease lapses


@contextlib.asynccontextmanager
async def background_worker(settings: Settings, service: Service) -> AsyncIterator[Worker | None]:
    if not settings.workers:
        yield None
        return
    queue = job_queue(settings)
    worker = Worker(queue, job_runner(service, queue), lease_s=settings.job_lease_s)
    stop = asyncio.Event()

    async def working() -> None:
        wait = RETRY_S
        while not stop.is_set():
            try:
                await worker.work(stop)
            except Exception as exc:  # the queue cannot be used (a read-only folder or database user, or away)
                log.warning(
                    "the indexing worker cannot use its job queue (%s); trying again in %.0f s",
                    failure_reason(exc),
                    wait,
                )
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), wait)
                wait = min(wait * 2, MAX_RETRY_S)

    task = asyncio.create_task(working(), name="pixelrag-worker")
    try:
        yield worker
    finally:
        stop.set()
        try:
            await asyncio.wait_for(asyncio.shield(task), STOP_S)
        except (TimeoutError, asyncio.CancelledError):
            task.cancel()
            log.warning("stopped during an indexing job; another worker takes it once its lease lapses")
        await queue.close()


async def queue_summary(settings: Settings, scope: str) -> dict | None:
    """core.queue_status as `scope` sees it; None where no job was ever queued (nothing is created to
    say so) or the queue cannot be read."""
    if not settings.database_url and not (settings.index_dir / "jobs.sqlite").exists():
        return None
    queue = job_queue(settings)
    try:
        return await queue_status(await queue.open(), scope)
    except PixelragError as exc:
        log.warning("the job queue could not be read for %s: %s", scope, exc)
        return None
    finally:
        await queue.close()
