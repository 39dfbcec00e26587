"""👍 / 👎 under an answer: each click is kept as that user's latest rating of the turn (Slack sends
every toggle and no "unselected"), for `pixelrag feedback export`."""

from __future__ import annotations

import logging

from core import RATINGS, ThreadMemory, rate_answer

log = logging.getLogger("pixelrag.slack")


class SlackFeedback:
    def __init__(self, threads: ThreadMemory):
        self.threads = threads

    async def __call__(self, ack, body: dict, action: dict) -> None:
        await ack()
        rating, _, turn = (action.get("value") or "").partition(":")
        user = (body.get("user") or {}).get("id", "")
        team = (body.get("team") or {}).get("id", "")
        if rating not in RATINGS or not turn.isdigit() or not user:
            log.warning("feedback with an unexpected value %r ignored", action.get("value"))
            return
        if not await rate_answer(self.threads, int(turn), f"{team}:{user}", rating):
            log.warning("feedback for turn %s, which is not stored (any more), ignored", turn)
