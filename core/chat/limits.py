"""Question limits per person and per workspace (PIXELRAG_USER_QUESTIONS_PER_HOUR,
PIXELRAG_WORKSPACE_QUESTIONS_PER_DAY; off by default). The questions are counted in the thread memory,
so every process that shares it counts the same ones; a refused question is not counted."""

from __future__ import annotations

import math
import time

from ..config import Settings
from ..errors import BadInput, plural
from ..ports import ThreadMemory

HOUR, DAY = 3600.0, 86400.0
KEEP_QUESTIONS_S = 2 * DAY  # what the stores keep: the longest window is a day


class LimitReached(BadInput):
    """A question over a limit: the message says which, and when the next one can be asked (in
    `retry_after` seconds, for an HTTP client's Retry-After)."""

    def __init__(self, message: str, retry_after: float):
        super().__init__(message)
        self.retry_after = retry_after


async def admit(
    threads: ThreadMemory, settings: Settings, platform: str, workspace: str, user: str, now: float | None = None
) -> None:
    """Count a question, or raise LimitReached without counting it."""
    now = time.time() if now is None else now
    per_user, per_workspace = settings.user_questions_per_hour, settings.workspace_questions_per_day
    if per_user and user:
        asked = await threads.asked(platform, workspace, user, now - HOUR)
        if len(asked) >= per_user:
            wait = asked[-per_user] + HOUR - now
            raise LimitReached(
                f"You have asked {plural(len(asked), 'question')} in the past hour, the most one person may ask here "
                f"(PIXELRAG_USER_QUESTIONS_PER_HOUR). You can ask again {_in(wait)}.",
                wait,
            )
    if per_workspace:
        asked = await threads.asked(platform, workspace, None, now - DAY)
        if len(asked) >= per_workspace:
            wait = asked[-per_workspace] + DAY - now
            raise LimitReached(
                f"This workspace has asked {plural(len(asked), 'question')} in the past 24 hours, its limit "
                f"(PIXELRAG_WORKSPACE_QUESTIONS_PER_DAY). Questions can be asked again {_in(wait)}.",
                wait,
            )
    if per_user or per_workspace:
        await threads.record_question(platform, workspace, user, now)


def _in(seconds: float) -> str:
    minutes = max(1, math.ceil(seconds / 60))
    if minutes < 120:
        return f"in {plural(minutes, 'minute')}"
    return f"in {math.ceil(minutes / 60)} hours"
