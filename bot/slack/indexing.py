"""Indexing started from Slack ("index this" on a message with PDFs, a URL, /pixelrag index and
reindex), once the caller has checked permission: one progress message edited as the job runs,
ending in a summary; then `on_change` hears the scope whose documents may have changed (the App
Home tabs are refreshed)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from slack_sdk.web.async_client import AsyncWebClient

from core import Busy, IndexReport, PixelragError, Progress, Service, hide_credentials, workspace_of

from ..progress import ThrottledProgress
from . import render
from .files import SlackFiles
from .replies import Thread

log = logging.getLogger("pixelrag.slack")

Respond = Callable[[str], Awaitable[None]]
Work = Callable[[Callable[[Progress], None]], Awaitable[IndexReport]]
Changed = Callable[[AsyncWebClient, str], Awaitable[None]]


class SlackIndexing:
    def __init__(
        self, service: Service, files: SlackFiles, progress_interval_s: float, on_change: Changed | None = None
    ):
        self.service = service
        self.files = files
        self.progress_interval_s = progress_interval_s
        self.on_change = on_change

    async def changed(self, client: AsyncWebClient, scope: str) -> None:
        if self.on_change is not None:
            try:
                await self.on_change(client, scope)
            except Exception:
                log.exception("after a change in %s", scope)

    async def from_message(self, thread: Thread, scope: str, pdfs: list[dict], url: str | None) -> None:
        """The PDFs attached to a message (or the URL it names), one job each."""
        if url:
            await self.run(
                thread,
                hide_credentials(url),
                lambda p: self.service.requests.index([url], scope=scope, progress=p, notify=notify_of(thread, scope)),
                "Indexed",
                scope=scope,
            )
            return
        for f in pdfs:
            name = f.get("name") or "document.pdf"
            try:
                data = await self.files.pdf(f)
            except PixelragError as exc:
                await thread.warn(str(exc))
                continue
            work = _index_bytes(self.service, data, name, scope, notify_of(thread, scope))
            await self.run(thread, name, work, "Indexed", scope=scope)

    async def run(
        self,
        thread: Thread,
        name: str,
        work: Work,
        verb: str,
        respond: Respond | None = None,
        *,
        scope: str | None = None,
    ) -> None:
        """Run one job, editing one progress message (throttled) and ending with a summary. Without a
        thread (a slash command), the message goes to the channel, or by `respond` where the bot may
        not post. With `scope`, on_change hears it when the job is over (failed ones too: a failed
        job may have been the one the Home tab showed in progress)."""
        # failures end in its summary; only cancellation escapes
        await self._run(thread, name, work, verb, respond, render.place_note(scope))
        if scope is not None:
            await self.changed(thread.client, scope)

    async def _run(
        self, thread: Thread, name: str, work: Work, verb: str, respond: Respond | None, note: str = ""
    ) -> None:
        ts = await thread.post(render.progress_text(name, None))
        if ts is None and respond is not None:
            await respond(render.progress_text(name, None))  # not in the channel: the response_url is the way back

        async def edit(text: str) -> None:
            if ts is not None:
                await thread.client.chat_update(channel=thread.channel, ts=ts, text=text, blocks=[render.section(text)])

        async with ThrottledProgress(
            edit, lambda p: render.progress_text(name, p), self.progress_interval_s
        ) as progress:
            try:
                report = await work(progress)
                final = render.report_text(verb, report) + (note if report.documents else "")
            except Busy as exc:
                final = f":hourglass: {render.escape(str(exc))}"
            except PixelragError as exc:
                final = f":warning: {render.escape(str(exc))}"
            except Exception:
                log.exception("indexing %s failed", name)
                final = f":warning: Indexing {render.escape(name)} failed. The details are in the bot's log."
        if ts is not None:
            try:
                await thread.client.chat_update(
                    channel=thread.channel, ts=ts, text=final, blocks=[render.section(final)]
                )
            except Exception:
                log.exception("could not update progress message")
                await thread.post(final)
        elif respond is not None:
            await respond(final)


def _index_bytes(service: Service, data: bytes, name: str, scope: str, notify: str) -> Work:
    """The job indexing one attachment (its bytes and name bound now, not when the job runs)."""
    return lambda progress: service.requests.index_bytes(data, name, scope=scope, progress=progress, notify=notify)


def notify_of(thread: Thread, scope: str) -> str:
    """Where a request from `thread` is told its end, should this process die before it can
    (core.told_later): slack:TEAM:CHANNEL[:THREAD_TS]."""
    return ":".join([workspace_of(scope), thread.channel] + ([thread.thread_ts] if thread.thread_ts else []))
