"""Slack adapter: Bolt listeners that turn Slack events into Service calls and post the results.

No retrieval or model logic lives here. The flow for a question:
event -> (dedupe, trigger rules) -> attachments -> Turn(history from ThreadStore) ->
service.answer -> rendered messages in the thread -> one message with page previews/crops.
Every failure is posted in the thread as a short message; details go to the log.
"""
from __future__ import annotations

import asyncio
import contextlib
import logging
import re
from pathlib import Path
from typing import Any, Awaitable, Callable
from urllib.parse import urlparse

import aiohttp
from slack_bolt.async_app import AsyncApp
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler, AsyncServerErrorRetryHandler
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient
from yarl import URL

from core.config import Settings, flag, number
from core.documents import looks_like_pdf
from core.errors import BadInput, Busy, PixelragError, failure_reason, megabytes
from core.query_images import ACCEPTED, validate_query_image
from core.records import Exchange, IndexReport, Progress, QueryImage, Turn
from core.threads import ThreadStore

from . import slack_render as render
from .progress import ThrottledProgress

log = logging.getLogger("pixelrag.slack")

IMAGE_MIME = set(ACCEPTED.values())
PDF_MIME = {"application/pdf"}
# Message subtypes that are people writing; edits, joins and deletions are not questions.
HUMAN_SUBTYPES = {None, "file_share", "thread_broadcast"}
WORKING_REACTION = "eyes"
INDEX_THIS = re.compile(r"^\s*(re)?index(\s+(this|these|it|them|the attached))?\s*[.!]?\s*$", re.I)
INDEX_URL = re.compile(r"^\s*index\s+<?(https?://[^\s>|]+)(\|[^>]*)?>?\s*$", re.I)


class AttachmentError(BadInput):
    """An attached file that cannot be used; the message names it."""


class SlackBot:
    """State shared by the listeners: the service, thread memory, permissions, in-flight work."""

    def __init__(self, settings: Settings, service: Any, store: ThreadStore):
        self.settings = settings
        self.service = service
        self.store = store
        extra = settings.extra
        self.token = extra.get("SLACK_BOT_TOKEN", "")
        self.index_users = {u.strip() for u in extra.get("SLACK_INDEX_USERS", "").split(",") if u.strip()}
        self.index_anyone = flag(extra, "SLACK_INDEX_ANYONE")
        self.progress_interval = number(extra, "SLACK_PROGRESS_INTERVAL", 2.0, 0.01, 60, float)
        self.command = extra.get("SLACK_COMMAND", "/pixelrag")
        self._tasks: set[asyncio.Task] = set()
        self._active = 0

    # ----- in-flight work (tests and shutdown wait on it) -------------------------------------
    @contextlib.asynccontextmanager
    async def working(self):
        self._active += 1
        try:
            yield
        finally:
            self._active -= 1

    def spawn(self, coro: Awaitable, what: str) -> asyncio.Task:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)

        def done(t: asyncio.Task) -> None:
            self._tasks.discard(t)
            if not t.cancelled() and t.exception() is not None:
                log.error("%s failed", what, exc_info=t.exception())

        task.add_done_callback(done)
        return task

    async def idle(self, settle: float = 0.15, timeout: float = 120.0) -> None:
        """Wait until no listener or background task has been running for `settle` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        quiet_since = None
        while loop.time() < deadline:
            if self._active or self._tasks:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = loop.time()
            elif loop.time() - quiet_since >= settle:
                return
            await asyncio.sleep(0.01)
        raise TimeoutError("Slack bot still busy")

    # ----- events ----------------------------------------------------------------------------
    async def on_app_mention(self, event: dict, body: dict, client: AsyncWebClient, context) -> None:
        async with self.working():
            if is_from_bot(event, context.bot_user_id):
                return
            if "files" not in event:
                # app_mention payloads sometimes omit files; the message itself carries them.
                event = await self.refetch_files(client, event)
            await self.handle(event, body, client, context)

    async def on_message(self, event: dict, body: dict, client: AsyncWebClient, context) -> None:
        async with self.working():
            if event.get("subtype") not in HUMAN_SUBTYPES or is_from_bot(event, context.bot_user_id):
                return
            team = team_of(body, event, context)
            is_dm = event.get("channel_type") == "im"
            mentioned = mentions(event.get("text", ""), context.bot_user_id)
            if not (is_dm or mentioned):
                # A follow-up without a mention counts only in a thread the bot already answered.
                thread_ts = event.get("thread_ts")
                if not thread_ts or not await self.store.knows_thread(("slack", team, event["channel"], thread_ts)):
                    return
            await self.handle(event, body, client, context)

    async def handle(self, event: dict, body: dict, client: AsyncWebClient, context) -> None:
        # Retried deliveries repeat the event id; a mention also arrives as a message event with
        # another id, so the message itself is claimed too.
        team = team_of(body, event, context)
        channel, ts = event["channel"], event["ts"]
        claims = [c for c in (body.get("event_id"), f"slack-message:{team}:{channel}:{ts}") if c]
        for n, claim in enumerate(claims):
            if not await self.store.claim(claim):
                await self.store.finish(*claims[:n])  # a duplicate of work claimed elsewhere
                return
        # Finished once handled (failures included, they were shown); a process killed on the way
        # leaves the claims open, so Slack's redelivery is answered after a restart.
        try:
            await self.respond_to(event, client, context, team, channel, ts)
        except Exception:
            log.exception("handling message %s failed", ts)
        await self.store.finish(*claims)

    async def respond_to(self, event: dict, client: AsyncWebClient, context, team: str, channel: str, ts: str) -> None:
        thread_ts = event.get("thread_ts") or ts
        text = strip_mentions(event.get("text", ""), context.bot_user_id)
        files = event.get("files") or []
        pdfs = [f for f in files if is_pdf(f)]
        url_request = INDEX_URL.match(text)
        # A PDF shared in a followed thread is not an index request unless the bot is asked to.
        addressed = event.get("channel_type") == "im" or mentions(event.get("text", ""), context.bot_user_id)
        asked = INDEX_THIS.match(text) if text else addressed
        if (pdfs and asked) or url_request:
            await self.index_from_message(client, team, channel, thread_ts, event.get("user", ""), pdfs,
                                          url_request.group(1) if url_request else None)
            return
        await self.answer(client, team, channel, ts, thread_ts, text, files)

    async def refetch_files(self, client: AsyncWebClient, event: dict) -> dict:
        thread_ts = event.get("thread_ts") or event["ts"]
        try:
            reply = await client.conversations_replies(channel=event["channel"], ts=thread_ts, latest=event["ts"],
                                                       oldest=event["ts"], inclusive=True, limit=2)
        except Exception:
            log.warning("could not re-read message %s for attachments", event["ts"], exc_info=True)
            return event
        for message in reply.get("messages", []):
            if message.get("ts") == event["ts"] and message.get("files"):
                return {**event, "files": message["files"]}
        return event

    # ----- answering -------------------------------------------------------------------------
    async def answer(self, client: AsyncWebClient, team: str, channel: str, ts: str, thread_ts: str,
                     question: str, files: list[dict]) -> None:
        key = ("slack", team, channel, thread_ts)
        status = await self.show_working(client, channel, ts, thread_ts)
        try:
            images, problems = await self.read_attachments(files)
            if not question.strip() and not images:
                text = "\n".join(f":warning: {render.escape(p)}" for p in problems) or render.HELP
                await self.post(client, channel, thread_ts, text)
                return
            if problems:
                await self.post(client, channel, thread_ts,
                                "\n".join(f":warning: {render.escape(p)}" for p in problems))
            if (pending := await self.store.pending_reply(key, question.strip())) and not images:
                # The same question again after its answer could not be posted: post that answer.
                turn_id, messages = pending
                if await self.post_answer(client, channel, thread_ts, messages):
                    await self.store.delivered(turn_id)
                return
            history = await self.store.history(key, limit=self.settings.history_exchanges)
            turn = Turn(question=question.strip(), images=tuple(images),
                        scope=f"slack:{team}", thread=f"slack:{team}:{channel}:{thread_ts}", history=history)
            answer = await self.service.answer(turn)
            messages = render.render_answer(answer)
            # Stored before posting: a reply Slack refuses is kept for the question's retry, and a
            # failed upload cannot lose the turn.
            turn_id = await self.store.add(key, Exchange.of(turn.question, answer), pending_reply=messages)
            if await self.post_answer(client, channel, thread_ts, messages):
                await self.store.delivered(turn_id)
            if not answer.clarifying_question:
                await self.upload_previews(client, channel, thread_ts, answer)
        except PixelragError as exc:
            # The message is for the user; the traceback (a Gemini outage, say) is for the log.
            log.warning("answer in %s/%s failed: %s", channel, thread_ts, exc, exc_info=True)
            await self.post(client, channel, thread_ts, f":warning: {render.escape(str(exc))}")
        except Exception:
            log.exception("answering in %s/%s failed", channel, thread_ts)
            await self.post(client, channel, thread_ts,
                            ":warning: Sorry, something went wrong while answering. The details are in the bot's log.")
        finally:
            await self.clear_working(client, channel, ts, thread_ts, status)

    async def post_answer(self, client: AsyncWebClient, channel: str, thread_ts: str, messages: list[dict]) -> bool:
        """Post the answer's messages (the client retries 429 and 5xx with backoff). A message still
        refused is posted again as plain text, without blocks; False when even that failed."""
        for message in messages:
            try:
                await client.chat_postMessage(channel=channel, thread_ts=thread_ts, unfurl_links=False,
                                              unfurl_media=False, **message)
                continue
            except Exception:
                log.warning("posting an answer to %s/%s failed; trying plain text", channel, thread_ts, exc_info=True)
            try:
                for piece in render.plain_pieces(message):
                    await client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=piece,
                                                  unfurl_links=False, unfurl_media=False)
            except Exception:
                log.exception("posting the plain answer to %s/%s failed too", channel, thread_ts)
                await self.post(client, channel, thread_ts, ":warning: The answer could not be posted (Slack "
                                "refused it). Ask the same question again to get it without searching again.")
                return False
        return True

    async def upload_previews(self, client: AsyncWebClient, channel: str, thread_ts: str, answer) -> None:
        items = render.upload_items(answer)
        if not items:
            return
        try:
            await client.files_upload_v2(
                channel=channel, thread_ts=thread_ts, file_uploads=items,
                initial_comment="Pages cited: " + ", ".join(it["title"] for it in items),
            )
        except Exception:
            log.exception("preview upload to %s/%s failed", channel, thread_ts)
            await self.post(client, channel, thread_ts,
                            ":warning: The page previews could not be uploaded; the sources above still name the pages.")

    async def read_attachments(self, files: list[dict]) -> tuple[list[QueryImage], list[str]]:
        """Usable screenshots, and one message per attachment that could not be used."""
        images: list[QueryImage] = []
        problems: list[str] = []
        for f in files:
            name = f.get("name") or f.get("title") or f.get("id") or "attachment"
            mime = (f.get("mimetype") or "").lower()
            try:
                if is_pdf(f):
                    raise AttachmentError(f"{name}: a PDF is not read as a question. "
                                          "To add it, mention me with “index this” on the message with the PDF.")
                if mime not in IMAGE_MIME:
                    raise AttachmentError(f"{name}: {mime or 'this file type'} can't be used; "
                                          "attach a PNG, JPEG or WebP screenshot.")
                data = await self.download(f, self.settings.max_image_bytes)
                images.append(validate_query_image(QueryImage(data, mime, name), self.settings.max_image_bytes))
            except PixelragError as exc:
                problems.append(str(exc))
            except Exception:
                log.exception("reading attachment %s failed", name)
                problems.append(f"{name}: the attachment could not be downloaded from Slack.")
        return images, problems

    async def download(self, file: dict, max_bytes: int) -> bytes:
        """A Slack-hosted file, fetched with the bot token (redirects followed by hand so the
        token goes only to the host it was meant for). The whole body is read, in chunks, and the
        size cap is enforced while reading: the file's metadata may omit or misstate its size."""
        name = file.get("name") or file.get("id") or "attachment"
        if file.get("file_access") == "check_file_info" or not (file.get("url_private_download") or file.get("url_private")):
            raise AttachmentError(f"{name}: Slack did not share a download link for this file (a Slack Connect file?).")
        limit = f"the {megabytes(max_bytes)} limit"
        if (file.get("size") or 0) > max_bytes:
            raise AttachmentError(f"{name}: {megabytes(file['size'])} is over {limit}.")
        url = file.get("url_private_download") or file["url_private"]
        origin = urlparse(url).hostname
        timeout = aiohttp.ClientTimeout(total=self.settings.request_timeout_s)
        try:
            async with aiohttp.ClientSession(timeout=timeout) as session:
                for _ in range(5):
                    host = urlparse(url).hostname or ""
                    headers = {"Authorization": f"Bearer {self.token}"} if host == origin or host.endswith(".slack.com") else {}
                    async with session.get(url, headers=headers, allow_redirects=False) as response:
                        if response.status in (301, 302, 303, 307, 308) and response.headers.get("Location"):
                            url = str(response.url.join(URL(response.headers["Location"])))
                            continue
                        if response.status != 200:
                            raise AttachmentError(f"{name}: Slack answered HTTP {response.status} when downloading it.")
                        ctype = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
                        if ctype == "text/html":
                            # Slack's answer to a token without files:read: a 200 with its sign-in page.
                            raise AttachmentError(
                                f"{name}: Slack sent its sign-in page instead of the file, so I can't read attachments. "
                                "The app needs the files:read scope: an admin should add it and reinstall the app.")
                        if (response.content_length or 0) > max_bytes:
                            raise AttachmentError(f"{name}: {megabytes(response.content_length)} is over {limit}.")
                        data = bytearray()
                        async for chunk in response.content.iter_chunked(1 << 16):
                            data += chunk
                            if len(data) > max_bytes:
                                raise AttachmentError(f"{name}: it is over {limit}.")
                        return bytes(data)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise AttachmentError(f"{name}: the download from Slack failed ({failure_reason(exc)}); "
                                  "try attaching it again.") from exc
        raise AttachmentError(f"{name}: too many redirects while downloading it.")

    # ----- status indicator --------------------------------------------------------------------
    async def show_working(self, client: AsyncWebClient, channel: str, ts: str, thread_ts: str) -> dict:
        shown = {"reaction": False, "status": False}
        try:
            await client.reactions_add(channel=channel, timestamp=ts, name=WORKING_REACTION)
            shown["reaction"] = True
        except SlackApiError as exc:
            # Already there (a redelivery after a restart): ours to take away when the answer is out.
            shown["reaction"] = exc.response.get("error") == "already_reacted"
        except Exception as exc:
            log.debug("reaction not added: %s", exc)
        try:
            await client.assistant_threads_setStatus(channel_id=channel, thread_ts=thread_ts,
                                                     status="is reading the documents…")
            shown["status"] = True
        except Exception as exc:
            log.debug("thread status not set: %s", exc)
        return shown

    async def clear_working(self, client: AsyncWebClient, channel: str, ts: str, thread_ts: str, shown: dict) -> None:
        if shown.get("status"):
            with contextlib.suppress(Exception):
                await client.assistant_threads_setStatus(channel_id=channel, thread_ts=thread_ts, status="")
        if shown.get("reaction"):
            with contextlib.suppress(Exception):
                await client.reactions_remove(channel=channel, timestamp=ts, name=WORKING_REACTION)

    async def post(self, client: AsyncWebClient, channel: str, thread_ts: str | None, text: str) -> str | None:
        """A plain message; never raises (it is the last resort for showing a failure)."""
        try:
            response = await client.chat_postMessage(channel=channel, thread_ts=thread_ts, text=text,
                                                     blocks=[render.section(text[: render.SECTION_LIMIT])])
            return response.get("ts")
        except Exception:
            log.exception("could not post to %s", channel)
            return None

    # ----- indexing ----------------------------------------------------------------------------
    async def may_index(self, client: AsyncWebClient, user: str) -> bool:
        if self.index_anyone or user in self.index_users:
            return True
        try:
            info = (await client.users_info(user=user)).get("user") or {}
        except Exception:
            log.exception("users.info for %s failed", user)
            return False
        return bool(info.get("is_admin") or info.get("is_owner") or info.get("is_primary_owner"))

    async def index_from_message(self, client: AsyncWebClient, team: str, channel: str, thread_ts: str, user: str,
                                 pdfs: list[dict], url: str | None) -> None:
        if not await self.may_index(client, user):
            await self.post(client, channel, thread_ts, refusal())
            return
        scope = f"slack:{team}"
        if url:
            await self.run_indexing(client, channel, thread_ts, url, lambda p: self.service.index([url], scope=scope, progress=p), "Indexed")
            return
        for f in pdfs:
            name = f.get("name") or "document.pdf"
            try:
                data = await self.download(f, self.settings.max_pdf_bytes)
                if not looks_like_pdf(data):
                    raise AttachmentError(f"{name}: the file is not a PDF.")
            except PixelragError as exc:
                await self.post(client, channel, thread_ts, f":warning: {render.escape(str(exc))}")
                continue
            await self.run_indexing(client, channel, thread_ts, name,
                                    lambda p, d=data, n=name: self.service.index_bytes(d, n, scope=scope, progress=p),
                                    "Indexed")

    async def run_indexing(self, client: AsyncWebClient, channel: str, thread_ts: str | None, name: str,
                           work: Callable[[Callable[[Progress], None]], Awaitable[IndexReport]], verb: str,
                           respond: Callable[[str], Awaitable[None]] | None = None) -> None:
        """Run one indexing job, editing one progress message (throttled) and ending with a summary."""
        ts = await self.post(client, channel, thread_ts, render.progress_text(name, None))
        if ts is None and respond is not None:
            # Not in the channel: the response_url is the only way back to the user.
            await respond(render.progress_text(name, None))

        async def edit(text: str) -> None:
            if ts is not None:
                await client.chat_update(channel=channel, ts=ts, text=text, blocks=[render.section(text)])

        async with ThrottledProgress(edit, lambda p: render.progress_text(name, p), self.progress_interval) as progress:
            try:
                report = await work(progress)
                final = render.report_text(verb, report)
            except Busy as exc:
                final = f":hourglass: {render.escape(str(exc))}"
            except PixelragError as exc:
                final = f":warning: {render.escape(str(exc))}"
            except Exception:
                log.exception("indexing %s failed", name)
                final = f":warning: Indexing {render.escape(name)} failed. The details are in the bot's log."
        if ts is not None:
            try:
                await client.chat_update(channel=channel, ts=ts, text=final, blocks=[render.section(final)])
            except Exception:
                log.exception("could not update progress message")
                await self.post(client, channel, thread_ts, final)
        elif respond is not None:
            await respond(final)

    # ----- /pixelrag -----------------------------------------------------------------------------
    async def on_command(self, ack, command: dict, client: AsyncWebClient, respond, context) -> None:
        async with self.working():
            text = (command.get("text") or "").strip()
            sub, _, arg = text.partition(" ")
            sub, arg = sub.lower(), arg.strip()
            team = command.get("team_id") or context.team_id or ""
            scope = f"slack:{team}"
            if sub == "list":
                await ack(text=render.documents_text(self.service.documents(scope), scope))
            elif sub == "status":
                await ack(text=render.status_text(self.service.status()))
            elif sub in ("index", "reindex", "remove") and (arg or sub == "reindex"):
                await ack(text=f"Working on `{render.escape(text)}`…")
                self.spawn(self.command_job(client, private_reply(respond), command, sub, arg, scope),
                           f"{self.command} {sub}")
            else:
                # Unknown subcommands, `help` and missing arguments all get the help text.
                await ack(text=render.HELP)

    async def command_job(self, client: AsyncWebClient, respond, command: dict, sub: str, arg: str, scope: str) -> None:
        channel = command.get("channel_id", "")
        try:
            if not await self.may_index(client, command.get("user_id", "")):
                await respond(refusal())
                return
            if sub == "remove":
                document = await self.service.remove(scope, arg)
                await respond(f":wastebasket: Removed {render.escape(document.title)}.")
            elif sub == "index":
                url = arg.strip("<>").split("|")[0]
                if not url.startswith(("http://", "https://")):
                    raise BadInput(f"`{arg}` is not a URL. Use `{self.command} index https://…/file.pdf`.")
                await self.run_indexing(client, channel, None, url,
                                        lambda p: self.service.index([url], scope=scope, progress=p), "Indexed", respond)
            else:
                await self.run_indexing(client, channel, None, arg or "this workspace's documents",
                                        lambda p: self.service.reindex(scope, arg or None, progress=p), "Reindexed", respond)
        except PixelragError as exc:
            await respond(f":warning: {render.escape(str(exc))}")
        except Exception:
            log.exception("%s %s failed", self.command, sub)
            await respond(f":warning: `{self.command} {sub}` failed. The details are in the bot's log.")


def private_reply(respond) -> Callable[[str], Awaitable[None]]:
    """Bolt's respond() as a one-argument ephemeral reply. The response_url takes 5 messages within
    30 minutes and then refuses them with a non-200 status that respond() does not raise: log it."""
    async def reply(text: str) -> None:
        response = await respond(text=text, response_type="ephemeral")
        if getattr(response, "status_code", 200) != 200:
            log.warning("response_url refused a reply (HTTP %s): %s", response.status_code, text[:200])
    return reply


def refusal() -> str:
    return (":no_entry: Only workspace admins and the users listed in SLACK_INDEX_USERS can add or remove "
            "documents. Ask an admin to do it for you.")


def team_of(body: dict, event: dict, context) -> str:
    return body.get("team_id") or event.get("team") or getattr(context, "team_id", None) or ""


def mentions(text: str, bot_user_id: str | None) -> bool:
    return bool(bot_user_id) and f"<@{bot_user_id}" in (text or "")


def strip_mentions(text: str, bot_user_id: str | None) -> str:
    if bot_user_id:
        text = re.sub(rf"<@{re.escape(bot_user_id)}(\|[^>]*)?>", " ", text or "")
    return " ".join((text or "").split())


def is_from_bot(event: dict, bot_user_id: str | None) -> bool:
    return bool(event.get("bot_id") or event.get("subtype") == "bot_message"
                or (bot_user_id and event.get("user") == bot_user_id))


def is_pdf(file: dict) -> bool:
    return (file.get("mimetype") or "").lower() in PDF_MIME or (file.get("filetype") or "").lower() == "pdf"


def make_client(settings: Settings) -> AsyncWebClient:
    base = settings.extra.get("SLACK_API_URL") or AsyncWebClient.BASE_URL
    client = AsyncWebClient(token=settings.extra.get("SLACK_BOT_TOKEN"), base_url=base.rstrip("/") + "/",
                            timeout=int(settings.request_timeout_s))
    # Rate limits (429, honouring Retry-After) and 5xx are retried; connection errors already are.
    client.retry_handlers.extend([AsyncRateLimitErrorRetryHandler(max_retry_count=2),
                                  AsyncServerErrorRetryHandler(max_retry_count=2)])
    return client


def build_app(settings: Settings, service: Any, store: ThreadStore, client: AsyncWebClient | None = None) -> AsyncApp:
    """The Bolt app with every listener registered; `app.pixelrag` is the SlackBot behind it."""
    client = client or make_client(settings)
    bot = SlackBot(settings, service, store)
    bot.token = client.token or bot.token
    secret = settings.extra.get("SLACK_SIGNING_SECRET", "")
    app = AsyncApp(client=client, signing_secret=secret, request_verification_enabled=bool(secret),
                   logger=logging.getLogger("pixelrag.slack.bolt"))

    app.event("app_mention")(bot.on_app_mention)
    app.event("message")(bot.on_message)
    app.command(bot.command)(bot.on_command)

    # Subscribed but not acted on: unhandled events get a 404, which Slack retries.
    @app.event("file_shared")
    async def ignore(ack) -> None:
        await ack()

    app.pixelrag = bot  # type: ignore[attr-defined]
    return app


async def serve(settings: Settings, *, http: bool = False, port: int = 3000) -> None:
    """Run the bot until cancelled: Socket Mode by default, or the Events API over HTTP."""
    from core.service import Service  # imported here: the service pulls in the whole pipeline

    extra = settings.extra
    if not extra.get("SLACK_BOT_TOKEN"):
        raise BadInput("SLACK_BOT_TOKEN is not set (the xoxb- token from OAuth & Permissions).")
    if http and not extra.get("SLACK_SIGNING_SECRET"):
        raise BadInput("SLACK_SIGNING_SECRET is required with --http (Basic Information → Signing Secret).")
    if not http and not extra.get("SLACK_APP_TOKEN"):
        raise BadInput("SLACK_APP_TOKEN is not set (an xapp- token with connections:write) — or use --http.")
    store = await ThreadStore(Path(extra.get("SLACK_THREADS_DB") or settings.index_dir / "slack-threads.sqlite")).open()
    service = Service(settings)
    await service.warm_up()
    app = build_app(settings, service, store)
    try:
        if http:
            from aiohttp import web

            runner = web.AppRunner(app.web_app(path="/slack/events", port=port))
            await runner.setup()
            await web.TCPSite(runner, "0.0.0.0", port).start()
            log.info("Slack Events API on :%d/slack/events", port)
            try:
                await asyncio.Event().wait()
            finally:
                await runner.cleanup()
        else:
            from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

            handler = AsyncSocketModeHandler(app, extra["SLACK_APP_TOKEN"])
            log.info("Slack Socket Mode connecting")
            try:
                await handler.start_async()
            finally:
                await handler.close_async()
    finally:
        await store.close()
