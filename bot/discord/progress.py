"""Indexing progress on Discord: one message edited with the latest figures while a job runs, and
closed with a final word when it ends, so no stale "⏳ 3/10" is left behind."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

import discord

from bot.progress import ThrottledProgress, pace
from core import Progress

from .render import shown_text

log = logging.getLogger("pixelrag.discord")

PROGRESS_EVERY_S = 2.0  # Discord rate-limits message edits


def describe_progress(p: Progress) -> str:
    if p.stage == "wait":
        return "⏳ Waiting for another build of the index to finish…"
    what = f" **{shown_text(p.document)}**" if p.document else ""
    return f"⏳ Indexing{what}: {p.stage} {p.done}/{p.total}{pace(p)}…"


class ProgressNotice(ThrottledProgress):
    def __init__(
        self,
        edit: Callable[[str], Awaitable[object]],
        interval: float = PROGRESS_EVERY_S,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ):
        super().__init__(edit, describe_progress, interval, sleep)

    async def __aexit__(self, exc_type, exc, tb) -> None:
        await super().__aexit__(exc_type, exc, tb)
        if self.shown is not None:  # only a message that showed figures needs closing; the result follows
            try:
                await self._edit("✅ Indexing finished." if exc is None else "⚠️ Indexing stopped.")
            except discord.HTTPException:
                log.warning("could not edit the progress message", exc_info=True)
