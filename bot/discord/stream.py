"""One answer streamed into a Discord message: sent at the first stage, edited as the stages pass and
the answer's text arrives, and edited a last time into the final layout (or an error).

The core calls `event()` from its own work and must never wait on Discord, so events only update
what the message should show; one writer task edits it, at most once per `interval` (Discord rate
limits message edits: about five per five seconds), so what arrives meanwhile goes out together.
`clock` and `sleep` are injectable so tests pass time by hand. Where Discord refuses the
Components V2 layout, the message streams as plain text and ends with the embed rendering (logged);
a V2 message cannot become a plain one again, so the choice is made at the first send.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable

import discord

from core import PagesFound, Step, TextDelta

from .layout import status_layout, status_text
from .render import MAX_CONTENT, NO_PINGS, Rendered
from .replies import SendMessage, deliver, deliver_answer, layout_refused

log = logging.getLogger("pixelrag.discord")


class AnswerStream:
    def __init__(
        self,
        send: SendMessage,
        *,
        interval: float = 1.0,
        v2: bool = True,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ):
        self.send, self.interval, self.v2 = send, interval, v2
        self.clock, self.sleep = clock, sleep
        self.message: discord.Message | None = None  # the streamed message, once sent
        self.broken = False  # the first send failed: the caller's reply is posted as new messages
        self.edits = 0
        self._steps: dict[str, Step] = {}
        self._text = ""
        self._wake = asyncio.Event()
        self._writer: asyncio.Task | None = None
        self._last = -math.inf  # when the message was last sent or edited (self.clock)
        self._closing = False  # the answer (or its error) is next: the writer shows no more stages

    # ----- what the core reports (sync, on the loop) -------------------------------------------
    def event(self, event: Step | TextDelta | PagesFound) -> None:
        if isinstance(event, PagesFound):  # the answer's gallery shows the cited pages
            return
        if isinstance(event, Step):
            self._steps[event.key] = event
        elif event.text:
            self._text += event.text
        else:
            return
        if self._writer is None or self._writer.done():
            self._writer = asyncio.ensure_future(self._write())
        self._wake.set()

    # ----- the end ---------------------------------------------------------------------------------
    async def finish(self, rendered: Rendered) -> None:
        """The streamed message becomes the answer's first message; the others follow it."""
        await self._drain()
        if self.message is None:  # nothing was streamed (or could not be): post as usual
            await deliver_answer(self.send, rendered, v2=self.v2)
            return
        messages = rendered.v2 if self.v2 else rendered.classic
        await self._turn()
        try:
            await self._edit(**messages[0].edit_kwargs())
        except (discord.HTTPException, discord.RateLimited) as exc:
            refused = False
            if self.v2 and isinstance(exc, discord.HTTPException) and layout_refused(exc):
                refused = True
                log.warning("Discord refused the answer's Components V2 layout (%s); posting it with embeds", exc.text)
            else:
                log.warning("could not edit the streamed message into the answer (%s); posting it below", exc)
            # The streamed message points at the answer posted under it (a V2 message stays V2).
            await self._pointer()
            await deliver_answer(self.send, rendered, v2=self.v2 and not refused)
            return
        await deliver(self.send, messages[1:])

    async def _pointer(self) -> None:
        try:
            await self._turn()
            await self._edit(**self._status("The answer follows below.", keep_text=False))
        except (discord.HTTPException, discord.RateLimited):
            log.warning("could not point the streamed message at the answer below", exc_info=True)

    async def fail(self, message: str) -> bool:
        """End the streamed message with `message`, the stage in progress marked failed. False when
        nothing was streamed (the caller shows the message another way)."""
        await self._drain()
        if self.message is None:
            return False
        for key, step in self._steps.items():
            if step.status == "in_progress":
                self._steps[key] = Step(step.key, step.title, "error", step.detail)
        try:
            await self._turn()
            await self._edit(**self._status(message))
            return True
        except (discord.HTTPException, discord.RateLimited):
            log.warning("could not end the streamed answer with its error", exc_info=True)
            return False

    # ----- the writer ------------------------------------------------------------------------------
    async def _write(self) -> None:
        while not self.broken:
            await self._wake.wait()
            self._wake.clear()
            await self._turn()  # edits are rate limited: let more arrive and show it together
            if self._closing:
                return  # the final edit follows at once: an interim one would only spend the rate limit
            await self._show()
            if not self._wake.is_set():
                return  # nothing new came meanwhile: event() starts a new writer when there is more

    async def _turn(self) -> None:
        wait = self._last + self.interval - self.clock()
        if self.message is not None and wait > 0:
            await self.sleep(wait)

    async def _show(self) -> None:
        try:
            if self.message is None:
                await self._first()
            else:
                await self._edit(**self._status())
        except (discord.HTTPException, discord.RateLimited) as exc:
            # A missed edit is not worth failing the answer: the next one shows the latest state.
            log.warning("could not update the streamed answer: %s", exc)
            if self.message is None:
                self.broken = True

    async def _first(self) -> None:
        try:
            self.message = await self.send(**self._status())
        except discord.HTTPException as exc:
            if not (self.v2 and layout_refused(exc)):
                raise
            log.warning(
                "Discord refused the Components V2 layout (%s); streaming as text, answering with embeds", exc.text
            )
            self.v2 = False
            self.message = await self.send(**self._status())
        finally:
            self._last = self.clock()

    async def _edit(self, **kwargs) -> None:
        # Spaced from the previous call's end: Discord counts edits as it receives them.
        assert self.message is not None  # edits follow the first send (their callers check it)
        self.edits += 1
        try:
            await self.message.edit(**kwargs)
        finally:
            self._last = self.clock()

    def _status(self, error: str | None = None, keep_text: bool = True) -> dict:
        steps, text = list(self._steps.values()), self._text if keep_text else ""
        if self.v2:
            return {"view": status_layout(steps, text, error), "allowed_mentions": NO_PINGS}
        return {"content": status_text(steps, text, error, MAX_CONTENT), "allowed_mentions": NO_PINGS}

    async def _drain(self) -> None:
        """The writer stopped: an edit in flight finished, a waiting one dropped (the final one follows)."""
        self._closing = True
        while self._writer is not None and not self._writer.done():
            self._wake.set()
            await asyncio.wait({self._writer})
        self._writer = None
