"""The indexing worker a chat process runs beside its bot, so that queued jobs and the watched sources'
checks get done with nothing but the bot running (PIXELRAG_WORKERS=0 turns it off, for chat replicas
when dedicated `pixelrag worker`s do the indexing)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

from core import (
    JobQueue,
    PixelragError,
    Service,
    Settings,
    WatchedSource,
    Worker,
    existing_job_queue,
    failing_to_tell,
    failure_reason,
    hide_credentials,
    job_queue,
    job_runner,
    queue_status,
    told_later,
)

log = logging.getLogger("pixelrag.worker")

RETRY_S = 10.0  # after the queue itself failed (the database away): tried again, waiting twice as long each time
MAX_RETRY_S = 600.0
STOP_S = 30.0  # a job under way may finish within this when the process stops; else its lease lapses
TELL_EVERY_S = 60.0  # how often a chat process looks for what to tell (see _telling)

# (platform, post(target, text)): how a chat process tells a channel ("C9") or a thread in it ("C9:ts")
Telling = tuple[str, Callable[[str, str], Awaitable[None]]]


@contextlib.asynccontextmanager
async def background_worker(
    settings: Settings, service: Service, telling: Telling | None = None
) -> AsyncIterator[Worker | None]:
    """The worker (unless PIXELRAG_WORKERS=0) and, with `telling`, the watch on failing sources."""
    if telling is not None:
        async with _telling(settings, *telling), _working(settings, service) as worker:
            yield worker
    else:
        async with _working(settings, service) as worker:
            yield worker


@contextlib.asynccontextmanager
async def _working(settings: Settings, service: Service) -> AsyncIterator[Worker | None]:
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


@contextlib.asynccontextmanager
async def _telling(
    settings: Settings, platform: str, post: Callable[[str, str], Awaitable[None]]
) -> AsyncIterator[None]:
    stop = asyncio.Event()

    async def watching() -> None:
        """Watched sources failing for a day, and requests whose asking process died before they ended."""
        while not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), TELL_EVERY_S)
            if not stop.is_set():
                await tell_failing(settings, platform, post)
                await tell_ended(settings, platform, post)

    task = asyncio.create_task(watching(), name="pixelrag-tell-failing")
    try:
        yield
    finally:
        stop.set()
        await task


async def tell_failing(settings: Settings, platform: str, post: Callable[[str, str], Awaitable[None]]) -> int:
    """Tell each channel of `platform` whose watched source has failed for a day, once; how many were."""

    async def found(queue: JobQueue) -> list[tuple[str, str]]:
        return [(s.notify.split(":", 2)[2], failing_text(s)) for s in await failing_to_tell(queue, platform)]

    return await _tell(settings, found, post, "that its watched source keeps failing")


async def tell_ended(settings: Settings, platform: str, post: Callable[[str, str], Awaitable[None]]) -> int:
    """Tell each thread of `platform` whose indexing request ended untold (core.told_later); how many."""
    return await _tell(settings, lambda queue: told_later(queue, platform), post, "that its indexing ended")


async def _tell(
    settings: Settings,
    found: Callable[[JobQueue], Awaitable[list[tuple[str, str]]]],
    post: Callable[[str, str], Awaitable[None]],
    what: str,
) -> int:
    """Post each (where, text) `found` in the job queue (already marked told there); how many were."""
    queue = existing_job_queue(settings)
    if queue is None:
        return 0
    told = 0
    try:
        for where, text in await found(await queue.open()):
            try:
                await post(where, text)
                told += 1
            except Exception as exc:  # the channel gone, the bot removed from it: logged, not retried
                log.warning("could not tell %s %s: %s", where, what, exc)
    except PixelragError as exc:
        log.warning("nothing told %s: %s", what, exc)
    finally:
        await queue.close()
    return told


def failing_text(source: WatchedSource) -> str:
    """What a channel is told (plain text: each platform escapes it)."""
    return (
        f"⚠️ The watched address {hide_credentials(source.location)} has failed for a day: {source.result} "
        "Its last good version is still searched; `status` shows its checks, `unwatch` stops them."
    )


async def queue_summary(settings: Settings, scope: str) -> dict | None:
    """core.queue_status as `scope` sees it; None where no job was ever queued (nothing is created to
    say so) or the queue cannot be read."""
    queue = existing_job_queue(settings)
    if queue is None:
        return None
    try:
        return await queue_status(await queue.open(), scope)
    except PixelragError as exc:
        log.warning("the job queue could not be read for %s: %s", scope, exc)
        return None
    finally:
        await queue.close()
