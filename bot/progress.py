"""Indexing progress: one chat message edited with the latest figures, throttled, and the pace
(pages per second, time left) every display words alike.

Shared by the Slack and Discord adapters and the terminal; each supplies how to edit its message and
how to word a Progress record.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from core import Progress

log = logging.getLogger(__name__)


def pace(p: Progress) -> str:
    """ ", 1.3 pages/s, about 2 min left" once the indexer can tell the pace; else nothing."""
    if not p.per_second:
        return ""
    left = f", about {duration(p.seconds_left)} left" if p.seconds_left else ""
    return f", {p.per_second:.1f} pages/s{left}"


def duration(seconds: float) -> str:
    """25 s, 3 min, 1 h 5 min: as precise as a wait needs to be told."""
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    minutes = round(seconds / 60)
    return f"{minutes} min" if minutes < 60 else f"{minutes // 60} h {minutes % 60} min"


class ThrottledProgress:
    """A progress callback (safe to call from any thread: it only stores the latest record) whose
    latest value is shown through `edit(describe(progress))` at most every `interval` seconds
    while the context is open. `sleep` is how it waits between edits (tests tick it by hand)."""

    def __init__(
        self,
        edit: Callable[[str], Awaitable[object]],
        describe: Callable[[Progress], str],
        interval: float,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ):
        self._edit, self._describe, self._interval, self._sleep = edit, describe, interval, sleep
        self._latest: Progress | None = None
        self.shown: Progress | None = None
        self._task: asyncio.Task | None = None

    def __call__(self, progress: Progress) -> None:
        self._latest = progress

    async def _run(self) -> None:
        while True:
            await self._sleep(self._interval)
            latest = self._latest
            if latest is not None and latest != self.shown:
                self.shown = latest
                try:
                    await self._edit(self._describe(latest))
                except Exception as exc:  # a missed progress edit is not worth failing the job
                    log.warning("could not edit the progress message: %s", exc)

    async def __aenter__(self) -> ThrottledProgress:
        self._task = asyncio.create_task(self._run())
        return self

    async def __aexit__(self, exc_type, exc, tb) -> None:
        # Stopped before the caller writes its final message, so no late edit can overwrite it.
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
