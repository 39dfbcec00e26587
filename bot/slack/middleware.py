"""Bolt middleware: which events are questions for the bot, and each delivery claimed once.

`ignore_bots_and_edits` runs for every request (other bots, edits, joins are never questions);
`Claims.addressed` and `Claims.claim` run before the question listener, as Bolt's own
middleware does: the first decides the message is for the bot, the second claims its delivery
(core's `Delivery`) and hands it to the listener in `context["delivery"]`.
"""

from __future__ import annotations

import logging
import re

from slack_bolt.response import BoltResponse
from slack_sdk.web.async_client import AsyncWebClient

from core import Conversation, DatabaseUnavailable, ThreadMemory

from .files import is_pdf
from .replies import Thread

log = logging.getLogger("pixelrag.slack")

AUTOINDEX = "autoindex"  # a channel's choice (ThreadMemory.choice), per workspace

# Message subtypes that are people writing; edits, joins and deletions are not questions.
HUMAN_SUBTYPES = {None, "file_share", "thread_broadcast"}
UNAVAILABLE_NOTICE = (
    ":warning: The document index is unavailable right now: its database does not answer. Slack "
    "sends your message again within minutes, and I answer it once the index is back; if no "
    "answer comes, please ask again later."
)


async def ignore_bots_and_edits(body: dict, context, ack, next) -> None:
    event = body.get("event") or {}
    if body.get("type") == "event_callback" and event.get("type") in ("message", "app_mention"):
        if is_from_bot(event, context.bot_user_id) or (
            event["type"] == "message" and event.get("subtype") not in HUMAN_SUBTYPES
        ):
            return await ack()
    await next()


def is_from_bot(event: dict, bot_user_id: str | None) -> bool:
    return bool(
        event.get("bot_id")
        or event.get("subtype") == "bot_message"
        or (bot_user_id and event.get("user") == bot_user_id)
    )


class Claims:
    """The listener middleware of questions: addressed to the bot? claimed by no one yet?"""

    def __init__(self, conversation: Conversation, threads: ThreadMemory):
        self.conversation = conversation
        self.threads = threads
        self._told_unavailable: set[tuple[str, str]] = set()  # (channel, ts) told once, whatever the retries

    async def addressed(self, event: dict, body: dict, context, ack, next) -> BoltResponse | None:
        """A message event counts in a DM, with a mention, in a thread the bot already answered, or when it
        shares a PDF in a channel with autoindex on."""
        if event.get("channel_type") == "im" or mentions(event.get("text", ""), context.bot_user_id):
            return await next()
        thread_ts = event.get("thread_ts")
        team = team_of(body, event, context)
        try:
            if thread_ts and await self.threads.knows_thread(("slack", team, event["channel"], thread_ts)):
                return await next()
            if any(is_pdf(f) for f in event.get("files") or []) and await autoindexed(
                self.threads, team, event["channel"]
            ):
                return await next()
        except DatabaseUnavailable as exc:  # whose thread it is is unknown: asked again when Slack redelivers
            log.warning("message %s in thread %s not taken: %s", event.get("ts"), thread_ts, exc)
            return BoltResponse(status=503, body="the index database is unavailable")
        return await ack()

    async def claim(self, event: dict, body: dict, context, ack, next) -> BoltResponse | None:
        """Retried deliveries repeat the event id; a mention also arrives as a message event with
        another id, so the message itself is claimed too (core/chat/delivery.py). A process killed on the way
        leaves the claims open, so Slack's redelivery is answered after a restart."""
        team = team_of(body, event, context)
        ids = [c for c in (body.get("event_id"), f"slack-message:{team}:{event['channel']}:{event['ts']}") if c]
        try:
            delivery = await self.conversation.claim(*ids)
        except DatabaseUnavailable as exc:
            # Not acknowledged: Slack delivers it again (HTTP retries, an unacknowledged Socket Mode
            # envelope), and it is answered then. Meanwhile the asker is told, once.
            log.warning("message %s not taken: %s", event.get("ts"), exc)
            await self._tell_unavailable(context.client, event)
            return BoltResponse(status=503, body="the index database is unavailable")
        if delivery is None:
            return await ack()  # a duplicate of work claimed already
        context["delivery"] = delivery
        await next()
        return None

    async def _tell_unavailable(self, client: AsyncWebClient, event: dict) -> None:
        where = (event["channel"], event["ts"])
        if where in self._told_unavailable:
            return
        if len(self._told_unavailable) > 1000:
            self._told_unavailable.clear()
        self._told_unavailable.add(where)
        await Thread(client, event["channel"], event.get("thread_ts") or event["ts"]).post(UNAVAILABLE_NOTICE)


async def autoindexed(threads: ThreadMemory, team: str, channel: str) -> bool:
    """Whether `/pixelrag autoindex on` was said in this channel: every PDF shared there is indexed."""
    return await threads.choice("slack", team, f"{AUTOINDEX}:{channel}") == "on"


def team_of(body: dict, event: dict, context) -> str:
    """The workspace whose documents, thread memory, limits and usage a message belongs to: the one the
    app is installed in, as Bolt reads it (an event from a channel shared with another workspace names
    that workspace as its team_id, and the installation in its authorizations); what slash commands
    and the Home tab use too, so the limit, the usage shown and the refusal agree."""
    return getattr(context, "team_id", None) or body.get("team_id") or event.get("team") or ""


def mentions(text: str, bot_user_id: str | None) -> bool:
    return bool(bot_user_id) and f"<@{bot_user_id}" in (text or "")


def strip_mentions(text: str, bot_user_id: str | None) -> str:
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(\|[^>]*)?>", " ", text or "")
    return " ".join((text or "").split())
