"""One answer streamed into a Slack thread: chat.startStream at the first stage, task updates and
the answer's Markdown appended as they come, chat.stopStream with the evidence and feedback blocks.

The core calls `event()` from its own work and must never wait on Slack, so events only queue;
one writer task sends them, one call at a time, at most one append per `interval` (appendStream is
Tier 4): what arrives meanwhile goes out together in the next call. Where streaming is refused (a
workspace or surface without it) or breaks, the stream goes quiet and says so in the log; the
caller then posts the answer when it is done, as before streaming existed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeGuard

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.text_split import clip
from core import PagesFound, Step, TextDelta, literal

from .render import plain, slack_markdown

log = logging.getLogger("pixelrag.slack")

TEXT_LIMIT = 11_000  # of one streamed message's Markdown (Slack: 12,000); the rest follows in messages
SOFT_LIMIT = 8_000  # beyond this, only whole paragraphs are streamed, so the message ends where one does
MAX_INTERVAL = 5.0  # the slowest appends get when Slack keeps rate limiting them
STOP_ATTEMPTS = 4  # of chat.stopStream (Tier 2) after the client's own retries, each after Slack's Retry-After
# Waits before each further try to close a stream that broke, once its answer is posted below it: a
# message left open shows "in progress" for good.
CLOSE_RETRY_DELAYS = (1.0, 2.0, 4.0, 8.0, 16.0)
NOTHING_TO_CLOSE = ("message_not_in_streaming_state", "message_not_found", "stopped_by_user")
DETAILS_LIMIT = 256  # of a task update's details


class AnswerStream:
    def __init__(
        self,
        client: AsyncWebClient,
        channel: str,
        thread_ts: str,
        team: str,
        user: str,
        interval: float = 0.6,
        on_start: Callable[[str], Awaitable[object]] | None = None,
    ):
        self.client, self.channel, self.thread_ts = client, channel, thread_ts
        self.on_start = on_start  # told the streamed message's ts once Slack has made it
        self.recipient = {"recipient_team_id": team, "recipient_user_id": user}
        self.interval = interval
        self.ts: str | None = None  # the streamed message, once started
        self.broken = False  # refused or failed: nothing more is sent; the caller posts instead
        self.stopped_by_user = False  # the person pressed Stop: nothing more is sent, nor posted
        self.streamed = ""  # the Markdown Slack has
        self._text = ""  # Markdown waiting to be sent (beyond the limits: for the messages after the stream)
        self._tasks: dict[str, dict] = {}  # step key -> its latest task_update chunk
        self._changed: list[str] = []  # step keys with an update not yet sent
        self._wake = asyncio.Event()
        self._writer: asyncio.Task | None = None
        self._last_call = 0.0
        self._limited = 0  # appends refused in a row for the rate limit
        self._ending = asyncio.Event()  # finish() or fail() is waiting: a rate-limit pause ends now

    @property
    def live(self) -> bool:
        """Started and still taking appends."""
        return self.ts is not None and not self.broken

    # ----- what the core reports (sync, on the loop) -------------------------------------------
    def event(self, event: Step | TextDelta | PagesFound) -> None:
        if isinstance(event, PagesFound):  # the thread shows the cited pages with the answer
            return
        if isinstance(event, Step):
            # Titles and details name documents and echo the question: shown as they are, never acting.
            chunk = {"type": "task_update", "id": event.key, "title": plain(event.title)[:250], "status": event.status}
            if event.detail:
                chunk["details"] = clip(plain(event.detail), DETAILS_LIMIT)
            self._tasks[event.key] = chunk  # kept when broken too: close_broken() shows how each step ended
            if self.broken:
                return
            if event.key not in self._changed:
                self._changed.append(event.key)
        elif self.broken:
            return
        elif event.text:
            self._text += slack_markdown(event.text)  # what is kept and counted is what Slack is sent
        if self._writer is None or self._writer.done():
            self._writer = asyncio.ensure_future(self._write())
        self._wake.set()

    # ----- the end of the answer -----------------------------------------------------------------
    async def finish(self, markdown: str, ending: Callable[[str], tuple[list[dict], list[dict]]]) -> list[dict] | None:
        """Stop the stream with the answer's last text. `ending(overflow)`, given the Markdown that did
        not fit in the streamed message, says which blocks chat.stopStream adds under it and which
        messages follow; those messages are returned for the caller to post. None when the stream is
        not live (never started, refused, broken): then the caller posts the whole answer. [] when the
        person stopped it: nothing more is to be posted."""
        await self._drain()
        if self.stopped_by_user:
            return []
        if not self.live:
            return None
        rest = remainder(self.streamed + self._text, slack_markdown(markdown))
        tail, overflow = fit(self.streamed, self._text + rest, final=True)
        self._text = ""
        blocks, after = ending(overflow)
        chunks = self._pending_chunks() + ([{"type": "markdown_text", "text": tail}] if tail else [])
        try:
            await self._stop(chunks=chunks or None, blocks=blocks or None)
        except Exception:
            if self.stopped_by_user:
                return []
            log.warning(
                "stopping the answer stream in %s/%s failed; posting the answer instead",
                self.channel,
                self.thread_ts,
                exc_info=True,
            )
            self.broken = True
            return None
        self.streamed += tail
        return after

    async def _stop(self, **content) -> None:
        """chat.stopStream, tried again while Slack rate limits it (Tier 2: many answers ending at once):
        a stream left open would show for ever as being written, and posting the answer instead
        would show it twice."""
        if self.ts is None:  # finish() and fail() stop only a live stream; they catch this as a failed stop
            raise RuntimeError("the answer stream was never started")
        for attempt in range(STOP_ATTEMPTS + 1):
            try:
                await self.client.chat_stopStream(channel=self.channel, ts=self.ts, **content)
                return
            except Exception as exc:
                if error_code(exc) == "stopped_by_user":
                    self.stopped_by_user = True
                if not _rate_limited(exc) or attempt == STOP_ATTEMPTS:
                    raise
                await asyncio.sleep(min(float(exc.response.headers.get("Retry-After") or 1), 30.0))

    async def fail(self, message: str) -> bool:
        """End the stream with `message` under what was written, the step in progress marked as failed.
        False when the stream is not live (the caller shows the message another way)."""
        await self._drain()
        if self.stopped_by_user:
            return True  # the person stopped the answer: its error is not theirs to read
        if not self.live:
            return False
        for key, chunk in self._tasks.items():
            if chunk["status"] == "in_progress":
                self._tasks[key] = {**chunk, "status": "error"}
                self._changed.append(key)
        text = fit(self.streamed, self._text, final=True)[0] + f"\n\n:warning: {slack_markdown(literal(message))}"
        chunks = self._pending_chunks() + [{"type": "markdown_text", "text": fit(self.streamed, text, final=True)[0]}]
        try:
            await self._stop(chunks=chunks)
            return True
        except Exception:
            if self.stopped_by_user:
                return True
            log.warning(
                "could not end the answer stream in %s/%s with its error", self.channel, self.thread_ts, exc_info=True
            )
            self.broken = True
            return False

    # ----- the writer ----------------------------------------------------------------------------
    async def _write(self) -> None:
        while not self.broken:
            await self._wake.wait()
            self._wake.clear()
            wait = self.interval - (time.monotonic() - self._last_call)
            if self.ts is not None and wait > 0:
                # Appends are rate limited: let more arrive and send it together.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._ending.wait(), wait)
                if self._ending.is_set() and self._limited:
                    return  # Slack is refusing appends: what is left goes with chat.stopStream
            await self._send()
            if not self._wake.is_set():
                return  # nothing new came meanwhile: event() starts a new writer when there is more

    async def _send(self) -> None:
        keys = list(self._changed)
        chunks = self._pending_chunks()
        piece, self._text = fit(self.streamed, self._text)
        if piece:
            chunks.append({"type": "markdown_text", "text": piece})
        if not chunks:
            return
        self._last_call = time.monotonic()
        try:
            if self.ts is None:
                response = await self.client.chat_startStream(
                    channel=self.channel, thread_ts=self.thread_ts, chunks=chunks, **self.recipient
                )
                self.ts = response["ts"]
                if self.on_start is not None:
                    await self.on_start(self.ts)
            else:
                await self.client.chat_appendStream(channel=self.channel, ts=self.ts, chunks=chunks)
        except Exception as exc:
            if self.ts is not None and _rate_limited(exc):
                # The app's append budget is spent (many answers at once, on every replica): keep what
                # was not sent and send it later, less often, or with chat.stopStream. Nothing is lost.
                self._limited += 1
                self._text = piece + self._text
                self._changed = [k for k in keys if k not in self._changed] + self._changed
                self.interval = min(self.interval * 2, MAX_INTERVAL)
                self._wake.set()
                return
            self.broken = True
            reason = error_code(exc) or type(exc).__name__
            if reason == "stopped_by_user":
                self.stopped_by_user = True
                log.info("the answer in %s/%s was stopped by the person asking", self.channel, self.thread_ts)
                return
            if self.ts is None:
                log.warning(
                    "Slack refused to stream the answer in %s/%s (%s); it is posted when it is done",
                    self.channel,
                    self.thread_ts,
                    reason,
                )
            else:
                log.warning(
                    "streaming the answer in %s/%s broke off (%s); it is posted when it is done",
                    self.channel,
                    self.thread_ts,
                    reason,
                )
            return
        self.streamed += "".join(c["text"] for c in chunks if c["type"] == "markdown_text")
        self._limited = 0

    def _pending_chunks(self) -> list[dict]:
        chunks = [self._tasks[key] for key in self._changed]
        self._changed = []
        return chunks

    async def _drain(self) -> None:
        """Everything reported so far sent (or given up on, or left for chat.stopStream when Slack is
        rate limiting the appends)."""
        self._ending.set()
        while self._writer is not None and not self._writer.done():
            self._wake.set()
            await asyncio.wait({self._writer})
        self._writer = None
        if not self.broken and not self._limited and (self._changed or fit(self.streamed, self._text)[0]):
            await self._send()

    @contextlib.asynccontextmanager
    async def closed_after(self):
        """The block that posts the answer, then close_broken()."""
        try:
            yield
        finally:
            await self.close_broken()

    async def close_broken(self) -> None:
        """A stream that broke after it started, once the answer (or its error) is posted below it:
        ended with a pointer there, its unfinished steps marked failed, tried again with backoff while
        Slack fails (the caller has posted already, so nobody waits for this)."""
        if self.ts is None or not self.broken or self.stopped_by_user:
            return
        steps = [{**c, "status": "error"} if c["status"] == "in_progress" else c for c in self._tasks.values()]
        note = {"type": "markdown_text", "text": "\n\n_(The answer could not be streamed; it follows below.)_"}
        for delay in (0.0, *CLOSE_RETRY_DELAYS):
            await asyncio.sleep(delay)
            try:
                await self.client.chat_stopStream(channel=self.channel, ts=self.ts, chunks=[*steps, note])
                return
            except Exception as exc:
                if error_code(exc) in NOTHING_TO_CLOSE:
                    return  # Slack ended it itself, or the person did
                log.info("closing the broken stream %s in %s failed: %s", self.ts, self.channel, error_code(exc) or exc)
        log.warning(
            "the broken answer stream %s in %s could not be closed; Slack ends it itself", self.ts, self.channel
        )


async def close_interrupted(client: AsyncWebClient, channel: str, ts: str) -> None:
    """End a stream a process that died left open (Slack would show it as still being written)."""
    try:
        await client.chat_stopStream(
            channel=channel,
            ts=ts,
            chunks=[
                {
                    "type": "markdown_text",
                    "text": (
                        "\n\n_(Interrupted: the bot restarted while writing this answer. It is answered again below.)_"
                    ),
                }
            ],
        )
    except Exception as exc:  # stopped already, or expired: nothing is left to close
        log.info("the interrupted stream %s in %s could not be stopped: %s", ts, channel, error_code(exc) or exc)


def error_code(exc: BaseException) -> str | None:
    """Slack's error code for a refused call ("ratelimited", "already_reacted"); None for anything else,
    a proxy's HTML error page in front of Slack included (slack_sdk then holds a string, not JSON)."""
    data = exc.response.data if isinstance(exc, SlackApiError) else None
    return str(data.get("error")) if isinstance(data, dict) and data.get("error") else None


def _rate_limited(exc: Exception) -> TypeGuard[SlackApiError]:
    """A 429 that outlasted the client's own retries (they honour Retry-After)."""
    return isinstance(exc, SlackApiError) and getattr(exc.response, "status_code", None) == 429


def remainder(streamed: str, final: str) -> str:
    """The part of the final answer not yet streamed: the reader streams the text the answer is made
    from, but the final Markdown is trimmed (and a reader that streams nothing gives it all here)."""
    if not streamed.strip():
        return final
    start = final.find(streamed.strip()[:200])
    if start == -1:
        return ""  # the streamed text is the answer's own; nothing sure to add
    covered = start + len(streamed.strip())
    return final[covered:]


def fit(
    streamed: str, text: str, final: bool = False, limit: int = TEXT_LIMIT, soft: int = SOFT_LIMIT
) -> tuple[str, str]:
    """What of `text` to stream now, after `streamed`, and what to keep. Up to `soft` everything goes;
    beyond it whole paragraphs only (a paragraph not yet ended waits for more text, unless this is
    the `final` text); nothing beyond `limit` (a paragraph longer than the room left is cut at a
    line, else a word). streamed + sent + kept is always the text as written."""
    room = limit - len(streamed)
    if len(text) <= room and (final or len(streamed) + len(text) <= soft):
        return text, ""
    if room <= 0:
        return "", text
    cut = text.rfind("\n\n", 0, room + 1)
    if cut > 0:
        return text[:cut], text[cut:]
    if len(text) <= room:
        return "", text  # wait for the paragraph's end
    if (cut == 0 or streamed.endswith("\n\n")) and len(streamed) > soft:
        return "", text  # full at a paragraph's end: the next paragraph goes in the messages below
    cut = max(text.rfind("\n", 0, room), text.rfind(" ", 0, room))
    return (text[:cut], text[cut:]) if cut > 0 else (text[:room], text[room:])
