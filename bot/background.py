"""Work a chat adapter runs after it has acknowledged an event: tracked, so that shutdown can let
it finish, and logged when it fails (nobody awaits it to see the exception)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable

log = logging.getLogger("pixelrag")


class BackgroundTasks:
    def __init__(self):
        self._tasks: set[asyncio.Task] = set()

    def spawn(self, work: Awaitable, what: str) -> asyncio.Task:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)

        def done(t: asyncio.Task) -> None:
            self._tasks.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("%s failed", what, exc_info=t.exception())

        task.add_done_callback(done)
        return task

    async def drain(self) -> None:
        """Return once every task, including those spawned meanwhile, has finished."""
        while self._tasks:
            await asyncio.wait(set(self._tasks))
