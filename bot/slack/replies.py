"""Posting in a Slack thread: plain messages, answers (with a plain-text fallback when Slack refuses
their blocks), the evidence upload, and the working indicator while a question is answered.

Nothing here raises: these are the last step of every flow, where a failure can only be shown (if
Slack takes any message at all) and logged.
"""

from __future__ import annotations

import contextlib
import logging

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from core import Answer, PixelragError

from . import render
from .stream import AnswerStream, error_code

log = logging.getLogger("pixelrag.slack")

WORKING_REACTION = "eyes"
UNDELIVERED_REACTION = "warning"  # left on a question when Slack took no message about it at all


class Thread:
    """One thread of one channel, as the place replies go."""

    def __init__(self, client: AsyncWebClient, channel: str, thread_ts: str | None):
        self.client, self.channel, self.thread_ts = client, channel, thread_ts
        self.unheard = False  # Slack refused every message about the question: its 👀 becomes ⚠️

    async def post(self, text: str) -> str | None:
        """A plain message; its ts, or None when Slack refused it."""
        try:
            response = await self.client.chat_postMessage(
                channel=self.channel,
                thread_ts=self.thread_ts,
                text=text,
                blocks=[render.section(text[: render.SECTION_LIMIT])],
            )
            return response.get("ts")
        except Exception:
            log.exception("could not post to %s", self.channel)
            return None

    async def warn(self, text: str) -> bool:
        return await self.post(f":warning: {render.escape(text)}") is not None

    async def post_answer(self, messages: list[dict]) -> bool:
        """Post the answer's messages (the client retries 429 and 5xx with backoff). A message still
        refused is posted again as plain text, without blocks; False when even that failed."""
        for message in messages:
            try:
                await self.client.chat_postMessage(
                    channel=self.channel, thread_ts=self.thread_ts, unfurl_links=False, unfurl_media=False, **message
                )
                continue
            except Exception:
                log.warning(
                    "posting an answer to %s/%s failed; trying plain text", self.channel, self.thread_ts, exc_info=True
                )
            try:
                for piece in render.plain_pieces(message):
                    await self.client.chat_postMessage(
                        channel=self.channel,
                        thread_ts=self.thread_ts,
                        text=piece,
                        unfurl_links=False,
                        unfurl_media=False,
                    )
            except Exception:
                log.exception("posting the plain answer to %s/%s failed too", self.channel, self.thread_ts)
                if (
                    await self.post(
                        ":warning: The answer could not be posted (Slack refused it). Ask the same "
                        "question again to get it without searching again."
                    )
                    is None
                ):
                    self.unheard = True
                return False
        return True

    async def upload_previews(self, answer: Answer) -> None:
        """The cited pages and their highlights, in one message right under the answer, each image
        titled with its sources line. (Not images inside the answer's blocks: files the bot uploads
        without sharing them are private to it, and Slack refuses them in blocks as invalid_blocks.)"""
        items = render.upload_items(answer)
        if not items:
            return
        try:
            pages = len({(c.doc_id, c.page) for c in answer.citations})
            await self.client.files_upload_v2(
                channel=self.channel,
                thread_ts=self.thread_ts,
                file_uploads=items,
                initial_comment=f"Evidence for the answer above: {pages} cited page{'s' if pages != 1 else ''}, "
                "each with its quote highlighted.",
            )
        except Exception:
            log.exception("preview upload to %s/%s failed", self.channel, self.thread_ts)
            await self.post(
                ":warning: The page previews could not be uploaded; the sources above still name the pages."
            )

    @contextlib.asynccontextmanager
    async def working(self, ts: str):
        """👀 on the question and the assistant thread status while the block runs; both taken away after.
        When Slack took no message about the question (`unheard`), ⚠️ takes the 👀's place: the asker
        must not read the missing answer as one still being written, nor as one given."""
        reaction = status = False
        try:
            await self.client.reactions_add(channel=self.channel, timestamp=ts, name=WORKING_REACTION)
            reaction = True
        except SlackApiError as exc:
            # Already there (a redelivery after a restart): ours to take away when the answer is out.
            reaction = error_code(exc) == "already_reacted"
        except Exception as exc:
            log.debug("reaction not added: %s", exc)
        thread_ts = self.thread_ts
        if thread_ts is not None:  # a status is a thread's (a question is always answered in one)
            try:
                await self.client.assistant_threads_setStatus(
                    channel_id=self.channel, thread_ts=thread_ts, status="is reading the documents…"
                )
                status = True
            except Exception as exc:
                log.debug("thread status not set: %s", exc)
        try:
            yield
        finally:
            if status and thread_ts is not None:
                with contextlib.suppress(Exception):
                    await self.client.assistant_threads_setStatus(
                        channel_id=self.channel, thread_ts=thread_ts, status=""
                    )
            if self.unheard:
                with contextlib.suppress(Exception):
                    await self.client.reactions_add(channel=self.channel, timestamp=ts, name=UNDELIVERED_REACTION)
            if reaction:
                with contextlib.suppress(Exception):
                    await self.client.reactions_remove(channel=self.channel, timestamp=ts, name=WORKING_REACTION)

    @contextlib.asynccontextmanager
    async def failures_shown(self, what: str, stream: AnswerStream | None = None):
        """A failure inside the block becomes a short message in the thread (at the end of the
        streamed answer when one is live); details go to the log."""
        try:
            yield
        except Exception as exc:
            if isinstance(exc, PixelragError):
                # The message is for the user; the traceback (a Gemini outage, say) is for the log.
                log.warning("%s in %s/%s failed: %s", what, self.channel, self.thread_ts, exc, exc_info=True)
                message = str(exc)
            else:
                log.exception("%s in %s/%s failed", what, self.channel, self.thread_ts)
                message = f"Sorry, something went wrong while {what}. The details are in the bot's log."
            if (stream is None or not await stream.fail(message)) and not await self.warn(message):
                self.unheard = True
