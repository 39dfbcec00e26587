"""One delivery of a chat message, owned from its claim to its finish: the same for every adapter.

A platform may deliver a message more than once (Slack retries an event it thinks was not handled; a
mention also arrives as a message event; a Discord gateway resume repeats one). `Conversation.claim`
claims every id a delivery carries in the thread memory; only one process, once, gets it. The work is
done inside `async with delivery:`, which finishes the claims at its end, failures included (they were
shown). What a process got done is noted on the way (`note`, `posted`), so that one taking the
delivery over after a crash (`earlier()`) finishes the work instead of starting it again.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ..errors import PixelragError
from ..ports import ThreadMemory

if TYPE_CHECKING:
    from .conversation import Reply

log = logging.getLogger(__name__)


class Delivery:
    def __init__(self, threads: ThreadMemory, claims: list[str]):
        self.threads = threads
        self.claims = claims
        self.key = claims[-1]  # the message's own id: the same whichever of its deliveries is handled

    @classmethod
    async def claim(cls, threads: ThreadMemory, claims: list[str]) -> Delivery | None:
        """The delivery, or None when another one (here or in another process) has it already: the claims
        taken on the way are finished again. DatabaseUnavailable when the memory cannot be asked."""
        for n, claim in enumerate(claims):
            if not await threads.claim(claim):
                await threads.finish(*claims[:n])
                return None
        return cls(threads, claims)

    async def __aenter__(self) -> Delivery:
        return self

    async def __aexit__(self, *exc) -> None:
        try:
            await self.threads.finish(*self.claims)
        except PixelragError as error:  # the work is done; an open claim only means a redelivery is not skipped
            log.warning("delivery %s not recorded as finished: %s", self.key, error)

    async def earlier(self) -> dict:
        """What a process that died on this delivery noted ({} for a first delivery)."""
        return await self.threads.progress(self.key)

    async def note(self, **progress: object) -> None:
        """How far the work got (JSON-ready values); a failure to note it costs only that."""
        try:
            await self.threads.note(self.key, **progress)
        except PixelragError as error:
            log.warning("progress of %s not noted: %s", self.key, error)

    async def posted(self, reply: Reply) -> None:
        """The reply is out: a redelivery does not post it again, nor does asking again re-send it."""
        await self.note(posted=True)
        if reply.pending and reply.turn_id is not None:  # a pending reply always has its turn
            await self.threads.delivered(reply.turn_id)
