"""One turn of a conversation, the same for every adapter: the thread's history -> a Turn -> the
service's answer -> the exchange stored for the next follow-up.

An adapter says where the thread is (a key), what was asked, and how it renders an answer (given the
stored turn's id, for feedback buttons). A reply rendered as JSON-ready data can be kept with the
exchange until the adapter reports it delivered, so that asking again after a failed post re-sends
it instead of searching again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .. import scopes
from ..cleaning import clean_text
from ..metrics import FEEDBACK
from ..ports import ThreadKey, ThreadMemory
from ..records import SHARED_SCOPE, Answer, EventSink, Exchange, QueryImage, Turn
from . import limits, usage
from .delivery import Delivery


@dataclass
class Reply:
    answer: Answer | None  # None when a stored, undelivered reply is being sent again
    rendered: Any  # what the adapter posts: render(answer, turn_id), or the stored rendering
    turn_id: int | None = None  # the stored exchange (None for a question without memory)
    pending: bool = False  # its rendering is kept until delivered(reply)


class Conversation:
    def __init__(self, service, threads: ThreadMemory, history_exchanges: int = 4):
        self.service = service
        self.threads = threads
        self.history_exchanges = history_exchanges

    async def ask(
        self,
        key: ThreadKey | None,
        question: str,
        images: Sequence[QueryImage] = (),
        *,
        scope: str = SHARED_SCOPE,
        render: Callable[[Answer, int | None], Any] = lambda answer, turn_id: answer,
        keep_reply: bool = False,
        events: EventSink | None = None,
        user: str = "",
        retrieve_only: bool = False,
        top: int | None = None,
    ) -> Reply:
        """Answer `question` in the thread `key` (None: a one-off question without memory).

        With `keep_reply`, the rendering is stored until `delivered(reply)`; the same question asked
        again in the thread before that gets the stored rendering back (and `events`, which hears the
        stages and the text of a new answer as they happen, hears nothing). `user` (the platform's id of
        the person asking) is counted against the question limits (core/chat/limits.py); a question over one
        raises LimitReached, whose message is for that person. `retrieve_only`: the ranked pages (`top` of
        them, top_k unless given), no reading (the HTTP API's search), counted as a question all the same."""
        question = clean_text(question).strip()  # as every Turn cleans it: the stored reply is found by it
        if key is not None and keep_reply and not images:
            if pending := await self.threads.pending_reply(key, question):
                kept_id, kept = pending
                return Reply(None, kept, kept_id, pending=True)
        # Limits and costs are the tenant's (a workspace, a server), in a thread or not.
        platform, workspace = scopes.tenant(scope)
        await limits.admit(self.threads, self.service.settings, platform, workspace, user)
        history = await self.threads.history(key, self.history_exchanges) if key is not None else ()
        turn = Turn(question, tuple(images), scope, "/".join(key) if key else "", history)
        async with usage.kept(self.threads, scope):
            usage.count(usage.QUESTIONS)
            # Only what is asked for is passed: the tests' stand-in services take no more than they need.
            options: dict[str, object] = {"events": events} if events else {}
            if retrieve_only:
                options |= {"retrieve_only": True, "top": top}
            answer = await self.service.answer(turn, **options)
        turn_id = await self.threads.add(key, Exchange.of(turn.question, answer, scope)) if key is not None else None
        rendered = render(answer, turn_id)
        keep = False
        if keep_reply and turn_id is not None:
            await self.threads.keep_reply(turn_id, rendered)
            keep = True
        return Reply(answer, rendered, turn_id, pending=keep)

    async def claim(self, *ids: str) -> Delivery | None:
        """One delivery of a message, claimed by every id it carries (the platform's delivery id, then the
        message's own); None when it is a duplicate of one handled already (core/chat/delivery.py)."""
        return await Delivery.claim(self.threads, list(ids))


async def rate_answer(threads: ThreadMemory, turn_id: int, user: str, rating: str) -> bool:
    """Record a person's rating of an answer (counted for the metrics); False for a turn not stored."""
    stored = await threads.rate(turn_id, user, rating)
    if stored:
        FEEDBACK.labels(rating).inc()
    return stored
