"""Questions in Slack: a message or mention becomes an answer in its thread.

Once middleware.py has found the message addressed to the bot and claimed its delivery, Bolt calls
`on_question`, which acknowledges at once and leaves the work to a background task: screenshots are
read, the conversation flow (core.Conversation) answers with the thread's memory while its stages and
text stream into the thread (stream.py), and the answer's evidence, then its page previews, follow it.
"""

from __future__ import annotations

import contextlib
import logging
import re

from slack_sdk.web.async_client import AsyncWebClient

from core import Conversation, Delivery, PixelragError, ThreadMemory, channel_scope, indexing_scope

from ..background import BackgroundTasks
from ..triggers import asks_to_index
from . import render
from .agent import AgentView
from .files import SlackFiles, is_pdf
from .indexing import SlackIndexing
from .middleware import autoindexed, mentions, strip_mentions, team_of
from .permissions import REFUSAL, may_index
from .replies import Thread
from .settings import SlackSettings
from .stream import AnswerStream, close_interrupted

log = logging.getLogger("pixelrag.slack")

AUTOINDEX_REACTION = "inbox_tray"  # on a PDF that autoindex took
INDEX_URL = re.compile(r"^\s*index\s+<?(https?://[^\s>|]+)(\|[^>]*)?>?\s*$", re.I)  # Slack writes links as <url|label>


class SlackQuestions:
    def __init__(
        self,
        settings: SlackSettings,
        conversation: Conversation,
        threads: ThreadMemory,
        files: SlackFiles,
        indexing: SlackIndexing,
        tasks: BackgroundTasks,
        agent: AgentView,
    ):
        self.settings = settings
        self.agent = agent
        self.conversation = conversation
        self.threads = threads
        self.files = files
        self.indexing = indexing
        self.tasks = tasks

    async def on_question(self, event: dict, body: dict, client: AsyncWebClient, context) -> None:
        self.tasks.spawn(
            self.handle(event, team_of(body, event, context), client, context.bot_user_id, context["delivery"]),
            f"message {event.get('ts')}",
        )

    async def handle(
        self, event: dict, team: str, client: AsyncWebClient, bot_user_id: str | None, delivery: Delivery
    ) -> None:
        async with delivery:  # finished at the end, failures included: they were shown
            try:
                if event.get("type") == "app_mention" and "files" not in event:
                    # app_mention payloads sometimes omit files; the message itself carries them.
                    event = await refetch_files(client, event)
                await self.respond_to(event, team, client, bot_user_id, delivery)
            except Exception:
                log.exception("handling message %s failed", event.get("ts"))

    async def respond_to(
        self, event: dict, team: str, client: AsyncWebClient, bot_user_id: str | None, delivery: Delivery
    ) -> None:
        ts = event["ts"]
        thread = Thread(client, event["channel"], event.get("thread_ts") or ts)
        text = strip_mentions(event.get("text", ""), bot_user_id)
        files = event.get("files") or []
        if event.get("channel_type") == "im" and not event.get("thread_ts"):
            # In the agent view every top-level message starts a thread: it is named after its question.
            await self.agent.title(client, event["channel"], ts, text, files)
        pdfs = [f for f in files if is_pdf(f)]
        url_request = INDEX_URL.match(text)
        # A PDF shared in a followed thread is not an index request unless the bot is asked to.
        addressed = event.get("channel_type") == "im" or mentions(event.get("text", ""), bot_user_id)
        asked = asks_to_index(text) if text else addressed
        if pdfs and not addressed and not url_request and await autoindexed(self.threads, team, thread.channel):
            await self.autoindex(client, event, thread, channel_scope(f"slack:{team}", thread.channel), pdfs)
            return
        if (pdfs and asked) or url_request:
            try:
                allowed = await may_index(client, self.settings, event.get("user", ""))
            except PixelragError as exc:
                await thread.warn(str(exc))
                return
            if not allowed:
                await thread.post(REFUSAL)
                return
            into = await indexing_scope(self.threads, channel_scope(f"slack:{team}", thread.channel))
            await self.indexing.from_message(thread, into, pdfs, url_request.group(1) if url_request else None)
            return
        # The stream goes to the asker's own team: a Slack Connect user's is not the app's workspace,
        # whose documents (scope) and threads it still is.
        await self.answer(
            thread, team, ts, text, files, event.get("user", ""), delivery, event.get("user_team") or team
        )

    async def autoindex(
        self, client: AsyncWebClient, event: dict, thread: Thread, scope: str, pdfs: list[dict]
    ) -> None:
        """A PDF shared in a channel with autoindex on: indexed into that channel's collection, said with a
        reaction on the message and the indexing's one message in its thread (with how to remove it)."""
        try:
            await client.reactions_add(channel=event["channel"], timestamp=event["ts"], name=AUTOINDEX_REACTION)
        except Exception as exc:  # the reply in the thread says it all the same
            log.info("autoindex reaction not added: %s", exc)
        await self.indexing.from_message(thread, scope, pdfs, None)
        await thread.post(
            f"_Indexed because this channel has autoindex on. `{self.settings.command} remove <document>` removes a "
            f"document; `{self.settings.command} autoindex off` stops it._"
        )

    async def answer(
        self,
        thread: Thread,
        team: str,
        ts: str,
        question: str,
        files: list[dict],
        user: str,
        delivery: Delivery,
        user_team: str,
    ) -> None:
        """The answer streamed into the thread (stream -> ask -> finish -> post), its delivery noted so
        that a process taking it over after a crash finishes it instead of answering twice."""
        thread_ts = thread.thread_ts or ts  # as respond_to made the thread: the question's, or one at it
        stream = self._stream(thread, thread_ts, user_team, user, delivery)
        # Left last: a stream that broke is closed once the answer, or its error, is posted below it.
        closing = stream.closed_after() if stream else contextlib.nullcontext()
        async with closing, thread.working(ts), thread.failures_shown("answering", stream):
            if await self._resumed(thread, delivery):
                return
            images, problems = await self.files.screenshots(files)
            warnings = "\n".join(f":warning: {render.escape(p)}" for p in problems)
            if not question.strip() and not images:
                await thread.post(warnings or render.HELP)
                return
            if warnings:
                await thread.post(warnings)
            # The rendering is kept with the exchange until it is posted: a reply Slack refuses is
            # posted again when the question is asked again, without searching again.
            reply = await self.conversation.ask(
                ("slack", team, thread.channel, thread_ts),
                question,
                images,
                scope=channel_scope(f"slack:{team}", thread.channel),
                render=render.render_answer,
                keep_reply=True,
                events=stream.event if stream else None,
                user=user,
            )
            answer = reply.answer
            # The streamed message ends with the evidence and the buttons; without a live stream (refused,
            # broken, or a stored reply sent again) the whole rendering is posted, as before streaming.
            after = (
                None
                if stream is None or answer is None
                else await stream.finish(
                    answer.markdown, lambda overflow: render.stream_end(answer, reply.turn_id, overflow)
                )
            )
            if stream is not None and stream.stopped_by_user:  # pressed Stop: nothing more is posted
                await delivery.posted(reply)
                return
            if not await thread.post_answer(reply.rendered if after is None else after):
                return  # no evidence "for the answer above" under no answer
            await delivery.posted(reply)
            if answer is not None and not answer.clarifying_question:
                await thread.upload_previews(answer)

    def _stream(
        self, thread: Thread, thread_ts: str, user_team: str, user: str, delivery: Delivery
    ) -> AnswerStream | None:
        if not self.settings.streaming:
            return None

        async def started(stream_ts: str) -> None:
            await delivery.note(stream=stream_ts)

        return AnswerStream(
            thread.client,
            thread.channel,
            thread_ts,
            user_team,
            user,
            self.settings.stream_interval_s,
            on_start=started,
        )

    async def _resumed(self, thread: Thread, delivery: Delivery) -> bool:
        """A redelivery of a question whose process died: what it left is finished; True when nothing
        more is to be done (its answer was posted)."""
        earlier = await delivery.earlier()
        if earlier.get("posted"):
            await thread.post(
                ":warning: The page previews of the answer above were not uploaded: the bot restarted before it could."
            )
            return True
        if earlier.get("stream"):
            await close_interrupted(thread.client, thread.channel, earlier["stream"])
        return False


async def refetch_files(client: AsyncWebClient, event: dict) -> dict:
    thread_ts = event.get("thread_ts") or event["ts"]
    try:
        reply = await client.conversations_replies(
            channel=event["channel"], ts=thread_ts, latest=event["ts"], oldest=event["ts"], inclusive=True, limit=2
        )
    except Exception:
        log.warning("could not re-read message %s for attachments", event["ts"], exc_info=True)
        return event
    messages: list[dict] = reply.get("messages", [])
    for message in messages:
        if message.get("ts") == event["ts"] and message.get("files"):
            return {**event, "files": message["files"]}
    return event
