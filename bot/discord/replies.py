"""Getting rendered messages to Discord: sending with a text fallback when uploads are refused,
and answering a deferred interaction, where a failure becomes a short visible message."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

import discord

from core import PixelragError

from .render import NO_PINGS, Outgoing, shown_text, split_text, text_messages

if TYPE_CHECKING:
    from .render import Rendered

log = logging.getLogger("pixelrag.discord")

INTERACTION_BUDGET_S = 14 * 60  # interaction tokens expire after 15 minutes
GENERIC_FAILURE = "⚠️ Something went wrong on my side; the details are in the bot's log."

Send = Callable[..., Awaitable[object]]
SendMessage = Callable[..., Awaitable[discord.Message]]  # a Send returning the message sent, to edit it


def layout_refused(exc: discord.HTTPException) -> bool:
    """Discord's answer to a message it will not take as sent (Invalid Form Body): for a Components V2
    layout, where V2 is not accepted or the layout breaks a limit; embeds are then sent instead."""
    return exc.status == 400 and exc.code == 50035


async def deliver(send: Send, messages: list[Outgoing]) -> None:
    """Send each message; if one with files, embeds or a layout is refused, send its text with a visible note."""
    for out in messages:
        try:
            await send(**out.kwargs())
        except discord.HTTPException:
            if not (out.files or out.embeds or out.layout):
                raise
            await _as_text(send, out)


async def _as_text(send: Send, out: Outgoing) -> None:
    log.warning("sending citations failed; falling back to text", exc_info=True)
    note = "-# ⚠️ The page previews could not be uploaded."
    text = out.text
    for piece in split_text(f"{text}\n\n{note}" if text else note):
        await send(content=piece, allowed_mentions=NO_PINGS)


async def deliver_answer(send: Send, rendered: Rendered, v2: bool = True) -> None:
    """The answer as Components V2 messages, or its embed messages where Discord refuses the layout."""
    if not v2 or not rendered.v2:
        await deliver(send, rendered.classic or rendered.v2)
        return
    first, rest = rendered.v2[0], rendered.v2[1:]
    try:
        await send(**first.kwargs())
    except discord.HTTPException as exc:
        if not (layout_refused(exc) and rendered.classic):
            await _as_text(send, first)  # too large an upload, say: the words still arrive
            await deliver(send, rest)
            return
        log.warning("Discord refused the Components V2 layout (%s); sending the answer with embeds", exc.text)
        await deliver(send, rendered.classic)
        return
    await deliver(send, rest)


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

    def _channel(self) -> discord.abc.Messageable | None:
        """Where results go once the interaction token is about to expire; None while it lasts (or
        without a channel one can post in: discord.py's type of it includes forums and categories)."""
        channel = self.interaction.channel
        if time.monotonic() - self.started < INTERACTION_BUDGET_S or not isinstance(channel, discord.abc.Messageable):
            return None
        return channel

    def _send(self) -> Send:
        channel = self._channel()
        return self.interaction.followup.send if channel is None else channel.send

    def sender(self) -> SendMessage:
        """Sends one message and returns it, so that it can be edited (a streamed answer)."""
        channel = self._channel()
        if channel is None:
            send = self.interaction.followup.send
            return lambda **kwargs: send(wait=True, **kwargs)
        return channel.send

    async def send_all(self, messages: list[Outgoing]) -> None:
        await deliver(self._send(), messages)

    async def __aenter__(self) -> Replier:
        return self

    async def __aexit__(self, exc_type, exc, tb) -> bool:
        if exc is None or isinstance(exc, asyncio.CancelledError):
            return False
        if isinstance(exc, PixelragError):
            text = f"⚠️ {shown_text(str(exc))}"
        else:
            log.error(
                "app command %s failed", getattr(self.interaction.command, "name", "?"), exc_info=(exc_type, exc, tb)
            )
            text = GENERIC_FAILURE
        try:
            await deliver(self._send(), text_messages(text))
        except Exception:
            log.exception("could not report a failure to the user")
        return True
