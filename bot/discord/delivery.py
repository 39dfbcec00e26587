"""Getting rendered messages to Discord: sending with a text fallback when uploads are refused,
and answering a deferred interaction, where a failure becomes a short visible message."""
from __future__ import annotations

import asyncio
import logging
import time
from typing import Awaitable, Callable

import discord

from core import PixelragError

from .render import Outgoing, text_messages

log = logging.getLogger("pixelrag.discord")

INTERACTION_BUDGET_S = 14 * 60  # interaction tokens expire after 15 minutes
GENERIC_FAILURE = "⚠️ Something went wrong on my side; the details are in the bot's log."

Send = Callable[..., Awaitable[object]]


async def deliver(send: Send, messages: list[Outgoing]) -> None:
    """Send each message; if one with files or embeds is refused, send its text with a visible note."""
    for out in messages:
        try:
            await send(**out.kwargs())
        except discord.HTTPException:
            if not (out.files or out.embeds):
                raise
            log.warning("sending citations failed; falling back to text", exc_info=True)
            note = "-# ⚠️ The page previews could not be uploaded."
            await send(content=f"{out.content}\n\n{note}" if out.content else note)


async def say(place, text: str) -> None:
    """Last-resort visible message; a failure here can only be logged."""
    try:
        await deliver(place.send, text_messages(text))
    except Exception:
        log.exception("could not post a message to %s", getattr(place, "id", place))


class Replier:
    """Answers a deferred interaction; turns failures into a short visible message.

    Past the interaction token's lifetime (long indexing), results go to the channel instead.
    """

    def __init__(self, interaction: discord.Interaction):
        self.interaction = interaction
        self.started = time.monotonic()

    def _send(self) -> Send:
        if time.monotonic() - self.started < INTERACTION_BUDGET_S or self.interaction.channel is None:
            return self.interaction.followup.send
        return self.interaction.channel.send

    async def send_all(self, messages: list[Outgoing]) -> None:
        await deliver(self._send(), messages)

    async def __aenter__(self) -> "Replier":
        return self

    async def __aexit__(self, exc_type, exc, tb) -> bool:
        if exc is None or isinstance(exc, asyncio.CancelledError):
            return False
        if isinstance(exc, PixelragError):
            text = f"⚠️ {exc}"
        else:
            log.error("app command %s failed", getattr(self.interaction.command, "name", "?"),
                      exc_info=(exc_type, exc, tb))
            text = GENERIC_FAILURE
        try:
            await deliver(self._send(), text_messages(text))
        except Exception:
            log.exception("could not report a failure to the user")
        return True
