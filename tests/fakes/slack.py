"""A loopback fake of the Slack Web API for offline tests, driven by the real slack_sdk client.

It runs aiohttp.web on 127.0.0.1 (port 0) in its own thread and event loop, so code under test
that blocks (a synchronous download in a worker thread, for instance) can never deadlock it.
Every call is recorded as a `Call(method, params, headers)`; tests assert on those records.

Served paths:
  /api/{method}          Web API methods (parameters merged from query string, form and JSON body)
  /upload/{file_id}      upload_url returned by files.getUploadURLExternal (stores the POSTed bytes)
  /webhook/{name}        response_url for slash commands (records the JSON body)
  /files/{name}          url_private: redirects to /files-origin/{name}
  /files-origin/{name}   the bytes, streamed in small chunks, with the right Bearer token; else
                         Slack's HTML sign-in page (what a token without files:read gets)
  /public/{name}         plain downloads (a PDF to index by URL)

It refuses what Slack refuses (see `block_error` and `_api`): methods whose scope the app's
manifest.yml does not grant (missing_scope), Block Kit beyond its limits (invalid_blocks,
msg_blocks_too_long), text over 40,000 characters, messages with neither text nor blocks, edits of
unknown messages, duplicate reactions, uploads completed for files never uploaded or with a
markdown block, more than 10 files per message, a response_url used more than 5 times or after
30 minutes, chat.postEphemeral without a user or in a channel the bot is not in (`outside`:
not_in_channel), and chat.postMessage bursts beyond its per-channel rate limit (429 with Retry-After).

Streaming (chat.startStream / appendStream / stopStream, see `_stream_error`): a stream needs
thread_ts, recipient_user_id and recipient_team_id (missing_recipient_user_id / _team_id: the docs
require them in channels, and apps have seen them required in DMs too, so the fake always does);
markdown_text or chunks, not both; chunks of the four documented types with their fields
(invalid_chunks); at most 12,000 characters of markdown_text per call and, assumed here as for
markdown blocks, per streamed message (msg_too_long); an unknown ts is message_not_found, a stopped
or expired stream (about five minutes) message_not_in_streaming_state; stop's blocks pass
`block_error`; appendStream bursts beyond its Tier 4 budget get 429 with Retry-After, and
startStream and stopStream share a Tier 2 budget (20 a minute). A task's details hold at most 256
characters. A stream written in chunks takes no markdown_text, and the other way round
(streaming_mode_mismatch). The recipient team must be the recipient's own (`user_teams`: a Slack
Connect user's team is not the app's; refused as invalid_arguments, the code assumed).
`stop_by_user(ts)` is the person pressing Stop: every later call on that stream is stopped_by_user.
`streaming_error` makes chat.startStream refuse, as a surface without streaming does.

The agent view and App Home (see `_view_error` and `_assistant_error`; docs.slack.dev method and
Home tab view references): views.publish takes a view of `type: home` (invalid_arguments otherwise)
for a user the workspace has (invalid_arguments, Slack's "invalid `user_id`"), only when
manifest.yml enables the Home tab (not_enabled), with at most 100 blocks of the kinds a view may
hold and the per-block limits of messages (invalid_blocks), at most 250 kB of JSON
(view_too_large), private_metadata and callback_id within 3,000 and 255 characters.
assistant.threads.setTitle and setStatus need channel_id and thread_ts (invalid_arguments), a
thread_ts that is a message of that channel (invalid_thread_ts), a non-blank title (titles: a DM
channel, channel_not_found otherwise) or a status and at most 10 loading messages.
setSuggestedPrompts takes 1-4 prompts, each with a title and a message, in a DM channel, and no
thread_ts when the manifest declares agent_view (Slack's docs: the call then fails silently; the
fake refuses it so a test sees it). Titles and prompts need assistant:write; setStatus takes
chat:write too (accepted since March 2026).

Text that Slack would act on is recorded in `acted` (tests/fakes/markup.py): a control sequence
(`<!channel>`, `<@U…>`, `<#C…>`, `<https://…|label>`) in any string of any request, strictly (in
mrkdwn, in a markdown block, a stream's text joined across its appends, and plain-text fields too),
and a CommonMark link or image whose label hides its target in markdown blocks and streamed text.

Socket Mode, the default of `pixelrag slack`, is `socket` (tests/fakes/slack_socket.py):
apps.connections.open with the app-level token, a WebSocket with hello, envelopes acknowledged
within 3 s or delivered again, and a refresh_requested disconnect.

One module on purpose (longer than most): the rules Slack enforces are read best side by side.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from aiohttp import web

from bot.slack import manifest
from bot.slack.manifest import MANIFEST

from .markup import hidden_links, slack_tokens
from .slack_socket import SocketMode

BOT_TOKEN = "xoxb-test-token"
BOT_USER_ID = "UBOT"
BOT_ID = "BBOT"
LOGIN_PAGE = b"<!DOCTYPE html><html><head><title>Slack</title></head><body>Sign in to Slack</body></html>"

# Slack's documented (and, for msg_blocks_too_long, observed) limits.
MAX_BLOCKS = 50
MAX_VIEW_BLOCKS = 100  # modals and Home tabs (Block Kit reference)
MAX_VIEW_BYTES = 250_000  # views.publish: view_too_large "greater than 250kb"
# Blocks a view may hold; markdown and context_actions blocks are for messages only.
VIEW_BLOCKS = {
    "section",
    "context",
    "header",
    "divider",
    "image",
    "rich_text",
    "actions",
    "input",
    "file",
    "video",
    "table",
}
MAX_PROMPTS = 4  # setSuggestedPrompts: "up to four suggested prompts"
MAX_PROMPT_TITLE, MAX_PROMPT_MESSAGE = 75, 2000  # not documented: assumed (button text and value limits)
MAX_THREAD_TITLE = 255  # not documented: assumed
MAX_LOADING_MESSAGES = 10
MAX_SECTION_TEXT = 3000
MAX_FIELD_TEXT = 2000
MAX_HEADER_TEXT = 150
MAX_CONTEXT_ELEMENTS = 10
MAX_MARKDOWN_TEXT = 12_000  # per markdown block, and for all markdown blocks of a message together
MAX_BLOCK_CHARS = 13_000  # msg_blocks_too_long is reported from about 13.2k characters of blocks
MAX_TEXT = 40_000
MAX_FILES_PER_MESSAGE = 10
RESPONSE_URL_USES = 5
RESPONSE_URL_LIFETIME_S = 30 * 60
POST_BURST = 6  # chat.postMessage: about one message per second per channel, short bursts allowed
APPEND_BURST, APPEND_PER_S = 20, 100 / 60  # chat.appendStream: Tier 4 (100+ a minute), bursts allowed
ENDS_BURST, ENDS_PER_S = 20, 20 / 60  # chat.startStream and chat.stopStream: Tier 2 (20+ a minute)
MAX_TASK_DETAILS = 256  # a task_update's details
STREAM_LIFETIME_S = 300  # a streamed message stops taking appends about five minutes after it started
MAX_STREAM_TEXT = 12_000  # markdown_text per call (documented) and per streamed message (assumed)
MAX_TASK_TITLE = 256
TASK_STATUSES = {"pending", "in_progress", "complete", "error"}
DOWNLOAD_CHUNK = 16 * 1024
KNOWN_BLOCKS = {
    "section",
    "context",
    "header",
    "divider",
    "image",
    "markdown",
    "rich_text",
    "actions",
    "context_actions",
    "file",
    "video",
    "input",
    "table",
}
# The scope each method needs (conversations.replies: by channel type, see _needed_scope).
SCOPES = {
    "chat.postMessage": "chat:write",
    "chat.update": "chat:write",
    "chat.postEphemeral": "chat:write",
    "reactions.add": "reactions:write",
    "reactions.remove": "reactions:write",
    "files.getUploadURLExternal": "files:write",
    "files.completeUploadExternal": "files:write",
    "files.info": "files:read",
    "users.info": "users:read",
    # assistant:write since 2024; setStatus also takes chat:write since 2026-03-05 (any of the tuple).
    "assistant.threads.setStatus": ("chat:write", "assistant:write"),
    "assistant.threads.setTitle": "assistant:write",
    "assistant.threads.setSuggestedPrompts": "assistant:write",
    # views.publish needs no scope (its reference: "No scopes required").
    "chat.startStream": "chat:write",
    "chat.appendStream": "chat:write",
    "chat.stopStream": "chat:write",
}
STREAM_METHODS = ("chat.startStream", "chat.appendStream", "chat.stopStream")


def manifest_scopes(path: Path = MANIFEST) -> set[str]:
    """The bot scopes manifest.yml asks for: what an installed app's token is granted."""
    return manifest.bot_scopes(manifest.load(path))


def manifest_text(path: Path = MANIFEST) -> str:
    return path.read_text(encoding="utf-8")


def manifest_events(path: Path = MANIFEST) -> set[str]:
    """settings.event_subscriptions.bot_events: the events an installed app is sent."""
    return manifest.bot_events(manifest.load(path))


def manifest_flag(name: str, path: Path = MANIFEST) -> bool:
    """A boolean setting of manifest.yml (home_tab_enabled, …), false when absent."""
    found = re.search(rf"^\s+{re.escape(name)}:\s*(true|false)\b", manifest_text(path), re.M)
    return bool(found) and found.group(1) == "true"


def manifest_has(feature: str, path: Path = MANIFEST) -> bool:
    """Whether features.<feature> (agent_view, assistant_view, …) is declared."""
    return re.search(rf"^  {re.escape(feature)}:\s*$", manifest_text(path), re.M) is not None


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)
    at: float = field(default_factory=time.perf_counter)  # when it arrived (benchmarks measure from it)


def _text_of(obj: Any) -> str:
    return obj.get("text", "") if isinstance(obj, dict) and isinstance(obj.get("text"), str) else ""


def block_error(blocks: Any, view: bool = False, link_base: str | None = None) -> str | None:
    """Slack's error code for a blocks payload it would refuse, or None. `view`: the blocks of a
    Home tab (100 of them, no markdown blocks, no per-message character total). `link_base`: where
    every button's URL must point (the page viewer a test configured); a URL elsewhere fails the call."""
    if not isinstance(blocks, list) or len(blocks) > (MAX_VIEW_BLOCKS if view else MAX_BLOCKS):
        return "invalid_blocks"
    markdown_total = chars = 0
    ids = set()
    action_ids: set[str] = set()
    for block in blocks:
        if not isinstance(block, dict) or block.get("type") not in (VIEW_BLOCKS if view else KNOWN_BLOCKS):
            return "invalid_blocks"
        kind = block["type"]
        if "block_id" in block:
            if not isinstance(block["block_id"], str) or len(block["block_id"]) > 255 or block["block_id"] in ids:
                return "invalid_blocks"
            ids.add(block["block_id"])
        if kind == "section":
            text, fields = block.get("text"), block.get("fields") or []
            if text is None and not fields:
                return "invalid_blocks"
            if text is not None and not (
                isinstance(text, dict)
                and text.get("type") in ("mrkdwn", "plain_text")
                and 0 < len(_text_of(text)) <= MAX_SECTION_TEXT
            ):
                return "invalid_blocks"
            if len(fields) > 10 or any(not 0 < len(_text_of(f)) <= MAX_FIELD_TEXT for f in fields):
                return "invalid_blocks"
            chars += len(_text_of(text)) + sum(len(_text_of(f)) for f in fields)
        elif kind == "context":
            elements = block.get("elements") or []
            if not 0 < len(elements) <= MAX_CONTEXT_ELEMENTS:
                return "invalid_blocks"
            for element in elements:
                if element.get("type") in ("mrkdwn", "plain_text"):
                    if not 0 < len(_text_of(element)) <= MAX_SECTION_TEXT:
                        return "invalid_blocks"
                    chars += len(_text_of(element))
                elif element.get("type") == "image":
                    if not element.get("alt_text") or not (element.get("image_url") or element.get("slack_file")):
                        return "invalid_blocks"
                else:
                    return "invalid_blocks"
        elif kind == "header":
            text = block.get("text")
            if not (
                isinstance(text, dict)
                and text.get("type") == "plain_text"
                and 0 < len(_text_of(text)) <= MAX_HEADER_TEXT
            ):
                return "invalid_blocks"
            chars += len(_text_of(text))
        elif kind == "markdown":
            text = block.get("text")
            if not isinstance(text, str) or not 0 < len(text) <= MAX_MARKDOWN_TEXT:
                return "invalid_blocks"
            markdown_total += len(text)
            chars += len(text)
        elif kind == "image":
            if not block.get("alt_text") or not (block.get("image_url") or block.get("slack_file")):
                return "invalid_blocks"
        elif kind == "actions":
            elements = block.get("elements")
            if not isinstance(elements, list) or not 0 < len(elements) <= 25:
                return "invalid_blocks"
            for element in elements:
                if button_error(element, link_base) or element["action_id"] in action_ids:
                    return "invalid_blocks"  # action_ids are unique within a message
                action_ids.add(element["action_id"])
        elif kind == "context_actions":
            elements = block.get("elements")
            if not isinstance(elements, list) or not 0 < len(elements) <= 5:
                return "invalid_blocks"
            if any(feedback_buttons_error(e) for e in elements):
                return "invalid_blocks"
    if markdown_total > MAX_MARKDOWN_TEXT:
        return "invalid_blocks"
    if chars > MAX_BLOCK_CHARS and not view:
        return "msg_blocks_too_long"
    return None


def button_error(element: Any, link_base: str | None = None) -> bool:
    """A button Slack would refuse: plain_text of 1-75 characters, an action_id of at most 255, a URL
    (if any) of at most 3,000 characters, absolute http(s); and here, one that points elsewhere than
    the page viewer the test set up."""
    if not isinstance(element, dict) or element.get("type") != "button":
        return True
    text = element.get("text")
    if not (isinstance(text, dict) and text.get("type") == "plain_text" and 0 < len(_text_of(text)) <= 75):
        return True
    if not isinstance(element.get("action_id"), str) or not 0 < len(element["action_id"]) <= 255:
        return True
    url = element.get("url")
    if url is not None:
        if not isinstance(url, str) or len(url) > 3000:
            return True
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc or any(c.isspace() for c in url):
            return True
        if link_base is not None and not url.startswith(f"{link_base}/view/"):
            return True
    return False


def feedback_buttons_error(element: Any) -> bool:
    """A context_actions element Slack would refuse: only feedback_buttons (icon buttons are not used
    here) with an action_id of at most 255 characters and both buttons, each with plain_text of at
    most 75 characters and a value of at most 2,000."""
    if not isinstance(element, dict) or element.get("type") != "feedback_buttons":
        return True
    if not isinstance(element.get("action_id"), str) or not 0 < len(element["action_id"]) <= 255:
        return True
    for side in ("positive_button", "negative_button"):
        button = element.get(side)
        if not isinstance(button, dict):
            return True
        text, value = button.get("text"), button.get("value")
        if not (isinstance(text, dict) and text.get("type") == "plain_text" and 0 < len(_text_of(text)) <= 75):
            return True
        if not isinstance(value, str) or not 0 < len(value) <= 2000:
            return True
    return False


class FakeSlack:
    def __init__(self, team_id: str = "T1", scopes: set[str] | None = None):
        self.team_id = team_id
        self.scopes = manifest_scopes() if scopes is None else scopes
        self.calls: list[Call] = []
        self.uploads: dict[str, bytes] = {}  # file_id -> bytes POSTed to its upload_url
        self.upload_meta: dict[str, dict] = {}  # file_id -> filename/length
        self.private_files: dict[str, tuple[bytes, str]] = {}  # name -> (bytes, content type)
        self.public_files: dict[str, tuple[bytes, str]] = {}
        self.admins: set[str] = set()
        self.users: set[str] = set()  # the workspace's people (with admins and anyone who wrote a message)
        self.link_base: str | None = None  # PIXELRAG_PUBLIC_URL of the bot under test: buttons link there
        self.home_tab_enabled = manifest_flag("home_tab_enabled")
        self.agent_view = manifest_has("agent_view")
        self.home_views: dict[str, dict] = {}  # user -> the Home tab last published for them
        self.thread_titles: dict[tuple[str, str], str] = {}  # (channel, thread_ts) -> title
        self.suggested_prompts: dict[str, dict] = {}  # channel -> {"title", "prompts"} last set
        self.fail: dict[str, str] = {}  # method -> Slack error code to answer with
        self.outside: set[str] = set()  # channels the bot is not in (chat.postEphemeral: not_in_channel)
        self.ephemeral: list[dict] = []  # ephemeral messages shown: channel, user, text
        self.http_errors: dict[str, list[int]] = {}  # method -> HTTP statuses to answer first, one per call
        self.proxy_errors: dict[str, list[int]] = {}  # the same, answered with a load balancer's HTML page
        self.messages: dict[str, list[dict]] = {}  # channel -> messages (the bot's and seeded ones)
        self.reactions: set[tuple[str, str, str]] = set()  # (channel, ts, name)
        self.refused: list[tuple[str, str]] = []  # (method, error) of calls Slack would refuse
        self.socket = SocketMode(self)  # Socket Mode: envelopes over a WebSocket (tests/fakes/slack_socket.py)
        # (method, what) for text Slack would act on: a mention or broadcast, a link hidden behind its label
        self.acted: list[tuple[str, str]] = []
        self.expected_refusals: list[tuple[str, str]] = []  # what a test provokes on purpose
        self.rate_limited = 0  # 429s answered
        self.appends_limited = 0  # the next n chat.appendStream calls are rate limited, whatever the budget
        self.limit_next: dict[str, int] = {}  # method -> its next n calls rate limited, whatever the budget
        self.user_teams: dict[str, str] = {}  # user -> their workspace, where not this one (Slack Connect)
        self.retry_after = "1"  # the Retry-After of a 429, in seconds
        self.streaming_error: str | None = None  # what chat.startStream answers where streaming is unavailable
        self.stream_lifetime_s = STREAM_LIFETIME_S
        self._buckets: dict[str, tuple[float, float]] = {}  # rate-limit budgets: (tokens, when counted)
        self.download_chunked = False  # stream downloads with chunked encoding instead of a Content-Length
        self.download_drop_after: int | None = None  # close the connection after this many bytes
        self._response_urls: dict[str, list[float]] = {}  # name -> times used
        self._ts = itertools.count(1)
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    # ----- lifecycle -------------------------------------------------------------------------
    def start(self) -> FakeSlack:
        ready = threading.Event()

        def run() -> None:
            self._loop = asyncio.new_event_loop()
            self._loop.run_until_complete(self._start_server())
            ready.set()
            self._loop.run_forever()

        self._thread = threading.Thread(target=run, name="fake-slack", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("fake Slack server did not start")
        return self

    def stop(self) -> None:
        if self._loop is None:
            return
        asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)

    async def _start_server(self) -> None:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/api/{method}", self._api)
        app.router.add_post("/upload/{file_id}", self._upload)
        app.router.add_post("/webhook/{name}", self._webhook)
        app.router.add_get("/files/{name}", self._private_file_redirect)
        app.router.add_get("/files-origin/{name}", self._private_file)
        app.router.add_get("/public/{name}", self._public_file)
        self.socket.routes(app)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}"

    @property
    def api_url(self) -> str:
        return self.base_url + "/api/"

    def response_url(self, name: str = "cmd") -> str:
        return f"{self.base_url}/webhook/{name}"

    def add_private_file(self, name: str, data: bytes, content_type: str) -> str:
        self.private_files[name] = (data, content_type)
        return f"{self.base_url}/files/{name}"

    def add_public_file(self, name: str, data: bytes, content_type: str = "application/pdf") -> str:
        self.public_files[name] = (data, content_type)
        return f"{self.base_url}/public/{name}"

    def add_message(self, channel: str, message: dict) -> None:
        """A message someone else wrote (a mention, a file share), so that reactions and
        conversations.replies find it as they would in Slack."""
        self.messages.setdefault(channel, []).append(dict(message))
        if message.get("user"):
            self.users.add(message["user"])

    # ----- queries for tests -----------------------------------------------------------------
    def calls_to(self, method: str) -> list[Call]:
        return [c for c in list(self.calls) if c.method == method]

    def posts(self, thread_ts: str | None = None) -> list[Call]:
        posts = self.calls_to("chat.postMessage")
        return posts if thread_ts is None else [c for c in posts if c.params.get("thread_ts") == thread_ts]

    def streams(self, thread_ts: str | None = None) -> list[dict]:
        """Streamed messages (their "stream" record: state, markdown, tasks, chunks), oldest first."""
        return [
            m
            for ms in self.messages.values()
            for m in ms
            if "stream" in m and (thread_ts is None or m.get("thread_ts") == thread_ts)
        ]

    def replies(self, thread_ts: str) -> list[dict]:
        """The bot's finished messages in a thread that carry blocks: posted ones and stopped streams
        ({"ts", "blocks", "text"}), in the order they were made."""
        out = []
        for call in self.calls:
            if (
                call.method == "chat.postMessage"
                and call.params.get("thread_ts") == thread_ts
                and call.params.get("blocks")
                and call.params.get("_ts")
            ):
                out.append(
                    {"ts": call.params["_ts"], "blocks": call.params["blocks"], "text": call.params.get("text", "")}
                )
            elif call.method == "chat.stopStream" and call.params.get("_stopped"):
                message = self._find(str(call.params.get("channel", "")), call.params.get("ts"))
                if message and message.get("thread_ts") == thread_ts:
                    out.append(
                        {
                            "ts": message["ts"],
                            "blocks": message["stream"]["blocks"],
                            "text": message["stream"]["markdown"],
                        }
                    )
        return out

    def thread_text(self, thread_ts: str) -> str:
        """Everything posted in a thread (text and block text, streamed text and task updates), as one string."""
        parts = []
        for call in self.posts(thread_ts):
            parts.append(str(call.params.get("text", "")))
            parts.extend(block_text(call.params.get("blocks")))
        for message in self.streams(thread_ts):
            stream = message["stream"]
            parts.append(stream["markdown"])
            parts.extend(f"{t['title']} {t.get('details', '')} {t.get('output', '')}" for t in stream["tasks"].values())
            parts.extend(block_text(stream["blocks"]))
        for call in self.calls_to("files.completeUploadExternal"):
            if call.params.get("thread_ts") == thread_ts:
                parts.append(str(call.params.get("initial_comment", "")))
        return "\n".join(parts)

    async def wait_for(self, predicate: Callable[[], Any], timeout: float = 60.0) -> Any:
        """Poll until predicate() is truthy; the value is returned."""
        deadline = time.monotonic() + timeout
        while True:
            value = predicate()
            if value:
                return value
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting; calls so far: {[c.method for c in self.calls]}")
            await asyncio.sleep(0.02)

    # ----- handlers --------------------------------------------------------------------------
    async def _params(self, request: web.Request) -> dict[str, Any]:
        params: dict[str, Any] = dict(request.query)
        if request.method == "POST" and request.can_read_body:
            ctype = request.content_type
            if ctype == "application/json":
                body = await request.json()
                if isinstance(body, dict):
                    params.update(body)
            else:
                form = await request.post()
                params.update({k: v for k, v in form.items() if isinstance(v, str)})
        for key in ("blocks", "files", "attachments", "view", "prompts", "loading_messages"):
            if isinstance(params.get(key), str):
                try:
                    params[key] = json.loads(params[key])
                except ValueError:
                    pass
        return params

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bearer {BOT_TOKEN}"

    def _needed_scope(self, method: str, params: dict) -> str | tuple[str, ...] | None:
        if method == "conversations.replies":
            channel = str(params.get("channel", ""))
            return {"D": "im:history", "G": "groups:history"}.get(channel[:1], "channels:history")
        return SCOPES.get(method)

    def _refuse(self, method: str, error: str, status: int = 200, **extra) -> web.Response:
        self.refused.append((method, error))
        return web.json_response({"ok": False, "error": error, **extra}, status=status)

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await self._params(request)
        self.calls.append(Call(method, params, dict(request.headers)))
        self._note_acting(method, params)
        if method == "apps.connections.open":  # the app-level token's one method (Socket Mode)
            if self._authorized(request):
                return self._refuse(method, "not_allowed_token_type")
            result = self.socket.open_connection(dict(request.headers))
            return (
                self._refuse(method, result) if isinstance(result, str) else web.json_response({"ok": True, **result})
            )
        if not self._authorized(request):
            return self._refuse(method, "invalid_auth")
        response = await self._answer(method, params)
        response.headers["x-oauth-scopes"] = ",".join(sorted(self.scopes))  # Slack's: the token's scopes
        return response

    async def _answer(self, method: str, params: dict) -> web.Response:
        needed = self._needed_scope(method, params)
        options = (needed,) if isinstance(needed, str) else needed or ()
        if options and not self.scopes & set(options):
            return self._refuse(
                method, "missing_scope", needed=",".join(options), provided=",".join(sorted(self.scopes))
            )
        # Failures a test asked for are answered, not counted in `refused`.
        if self.proxy_errors.get(method):
            status = self.proxy_errors[method].pop(0)
            return web.Response(
                status=status,
                content_type="text/html",
                text=f"<html><body><h1>{status} Service Unavailable</h1></body></html>",
            )
        if self.http_errors.get(method):
            return web.json_response({"ok": False, "error": "fatal_error"}, status=self.http_errors[method].pop(0))
        if method in self.fail:
            return web.json_response({"ok": False, "error": self.fail[method]})
        # chat.postMessage: about one a second per channel, in short bursts; appendStream: Tier 4;
        # startStream and stopStream: one Tier 2 budget.
        if (
            (method == "chat.postMessage" and self._spend(f"post {params.get('channel', '')}", POST_BURST, 1.0))
            or (
                method == "chat.appendStream"
                and (self._spend("append", APPEND_BURST, APPEND_PER_S) or self.appends_limited > 0)
            )
            or (method in ("chat.startStream", "chat.stopStream") and self._spend("ends", ENDS_BURST, ENDS_PER_S))
            or self.limit_next.get(method, 0) > 0
        ):
            self.rate_limited += 1  # not a refusal: the client is told when to retry
            if method == "chat.appendStream" and self.appends_limited > 0:
                self.appends_limited -= 1
            if self.limit_next.get(method, 0) > 0:
                self.limit_next[method] -= 1
            return web.json_response(
                {"ok": False, "error": "ratelimited"}, status=429, headers={"Retry-After": self.retry_after}
            )
        if method == "chat.startStream" and self.streaming_error:
            return web.json_response({"ok": False, "error": self.streaming_error})  # asked for: not a refusal
        if method in STREAM_METHODS:
            if error := self._stream_error(method, params):
                return self._refuse(method, error)
        if method in ("chat.postMessage", "chat.update", "chat.postEphemeral"):
            if error := self._message_error(params):
                return self._refuse(method, error)
        if method == "views.publish" and (error := self._view_error(params)):
            return self._refuse(method, error)
        if method.startswith("assistant.threads.") and (error := self._assistant_error(method, params)):
            return self._refuse(method, error)
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        result = handler(params) if handler else {}
        if isinstance(result, str):  # an error code
            return self._refuse(method, result)
        return web.json_response({"ok": True, **result})

    def _note_acting(self, method: str, params: Any) -> None:
        """Every string a request carries, checked for what Slack would act on (markdown ones also for
        hidden links); a stream's whole text is checked again as it grows (_stream_content)."""
        for text, is_markdown in _strings(params):
            self.acted += [(method, token) for token in slack_tokens(text)]
            if is_markdown:
                self.acted += [(method, f"link to {href}") for href in hidden_links(text)]

    def _spend(self, bucket: str, burst: int, per_s: float) -> bool:
        """True (rate limited) when `bucket` is empty; else one token is spent. A bucket holds `burst`
        tokens and gains `per_s` a second (Slack's tiers count per app and workspace)."""
        now = time.monotonic()
        tokens, last = self._buckets.get(bucket, (float(burst), now))
        tokens = min(float(burst), tokens + (now - last) * per_s)
        limited = tokens < 1
        self._buckets[bucket] = (tokens if limited else tokens - 1, now)
        return limited

    def refill(self) -> None:
        """Every rate-limit budget full again, as after a quiet minute."""
        self._buckets.clear()

    def stop_by_user(self, ts: str) -> None:
        """The person pressed Stop on a streamed message: Slack takes nothing more for it."""
        for messages in self.messages.values():
            for message in messages:
                if message.get("ts") == ts and "stream" in message:
                    message["stream"]["state"] = "stopped_by_user"

    def _stream_error(self, method: str, params: dict) -> str | None:
        """What Slack answers a streaming call it refuses, or None."""
        if not params.get("channel"):
            return "channel_not_found"
        markdown, chunks = params.get("markdown_text"), params.get("chunks")
        if markdown is not None and chunks is not None:
            return "invalid_arguments"
        if markdown is not None and (not isinstance(markdown, str) or len(markdown) > MAX_STREAM_TEXT):
            return "msg_too_long"
        if chunks is not None and (error := chunks_error(chunks, self.link_base)):
            return error
        if method == "chat.startStream":
            if not params.get("thread_ts"):
                return "invalid_arguments"
            for field in ("recipient_user_id", "recipient_team_id"):
                if not params.get(field):
                    return f"missing_{field}"
            if params.get("task_display_mode") not in (None, "timeline", "plan"):
                return "invalid_arguments"
            if params["recipient_team_id"] != self.user_teams.get(
                str(params["recipient_user_id"]), params["recipient_team_id"]
            ):
                return "invalid_arguments"  # assumed code: the recipient's own team, not the app's (Slack Connect)
            return None
        message = self._find(str(params["channel"]), params.get("ts"))
        if message is None or "stream" not in message:
            return "message_not_found"
        stream = message["stream"]
        if stream["state"] == "stopped_by_user":
            return "stopped_by_user"
        if stream["state"] != "streaming" or time.monotonic() - stream["started"] > self.stream_lifetime_s:
            return "message_not_in_streaming_state"
        # A stream written in chunks takes chunks, one written as markdown_text takes markdown_text.
        if (markdown is not None and stream["mode"] == "chunks") or (chunks is not None and stream["mode"] == "text"):
            return "streaming_mode_mismatch"
        if method == "chat.appendStream" and markdown is None and not chunks:
            return "invalid_arguments"  # nothing to append
        added = len(markdown or "") + sum(
            len(c.get("text", "")) for c in chunks or [] if c.get("type") == "markdown_text"
        )
        if len(stream["markdown"]) + added > MAX_STREAM_TEXT:
            return "msg_too_long"
        if method == "chat.stopStream" and params.get("blocks") is not None:
            blocks = params["blocks"]
            if not isinstance(blocks, list) or len(blocks) > MAX_BLOCKS:
                return "invalid_blocks"
            return block_error(blocks, link_base=self.link_base)
        return None

    def _stream_content(self, message: dict, params: dict) -> None:
        stream = message["stream"]
        if stream["mode"] is None and (params.get("chunks") is not None or params.get("markdown_text") is not None):
            stream["mode"] = "chunks" if params.get("chunks") is not None else "text"
        chunks = list(params.get("chunks") or [])
        if params.get("markdown_text"):
            chunks.insert(0, {"type": "markdown_text", "text": params["markdown_text"]})
        for chunk in chunks:
            stream["chunks"].append(chunk)
            if chunk["type"] == "markdown_text":
                stream["markdown"] += chunk["text"]
            elif chunk["type"] == "task_update":
                task = stream["tasks"].setdefault(chunk["id"], {})
                details = task.get("details", "") + chunk.get("details", "")  # title and status replace, details append
                task.update({k: v for k, v in chunk.items() if k != "type"}, details=details)
        message["text"] = stream["markdown"]
        # Appends join into one message: a token cut in two by the bot's chunks is whole in Slack.
        whole = slack_tokens(stream["markdown"]) + [f"link to {h}" for h in hidden_links(stream["markdown"])]
        new = [t for t in whole if t not in stream["acted"]]
        stream["acted"] += new
        self.acted += [("chat stream", t) for t in new]

    def _m_chat_startStream(self, params: dict) -> dict:
        ts = self._new_ts()
        message = {
            "ts": ts,
            "text": "",
            "bot_id": BOT_ID,
            "user": BOT_USER_ID,
            "thread_ts": params.get("thread_ts"),
            "stream": {
                "state": "streaming",
                "started": time.monotonic(),
                "markdown": "",
                "chunks": [],
                "tasks": {},
                "blocks": None,
                "recipient": params.get("recipient_user_id"),
                "acted": [],
                "mode": None,
            },
        }
        self._stream_content(message, params)
        self.messages.setdefault(params["channel"], []).append(message)
        return {"channel": params["channel"], "ts": ts}

    def _m_chat_appendStream(self, params: dict) -> dict:
        message = self._find(params["channel"], params["ts"])
        self._stream_content(message, params)
        return {"channel": params["channel"], "ts": params["ts"]}

    def _m_chat_stopStream(self, params: dict) -> dict:
        message = self._find(params["channel"], params["ts"])
        self._stream_content(message, params)
        message["stream"].update(state="stopped", blocks=params.get("blocks"))
        params["_stopped"] = True  # for replies(): the call that finished the message
        return {
            "channel": params["channel"],
            "ts": params["ts"],
            "message": {"ts": params["ts"], "text": message["text"]},
        }

    def _message_error(self, params: dict) -> str | None:
        text, blocks = params.get("text"), params.get("blocks")
        if not params.get("channel"):
            return "channel_not_found"
        if not text and not blocks and not params.get("markdown_text"):
            return "no_text"
        if isinstance(text, str) and len(text) > MAX_TEXT:
            return "msg_too_long"
        if blocks is not None:
            return block_error(blocks, link_base=self.link_base)
        return None

    def _view_error(self, params: dict) -> str | None:
        """What views.publish answers a Home tab it refuses, or None."""
        if not self.home_tab_enabled:
            return "not_enabled"  # a home view published while the manifest leaves the Home tab off
        user, view = params.get("user_id"), params.get("view")
        if not isinstance(user, str) or not self.known_user(user):
            return "invalid_arguments"  # Slack: "invalid `user_id`"
        if not isinstance(view, dict) or view.get("type") != "home":
            return "invalid_arguments"
        if len(json.dumps(view).encode()) > MAX_VIEW_BYTES:
            return "view_too_large"
        if "blocks" not in view:
            return "invalid_arguments"
        # Home tab view fields: private_metadata up to 3,000 characters, callback_id up to 255.
        if len(str(view.get("private_metadata", ""))) > 3000 or len(str(view.get("callback_id", ""))) > 255:
            return "invalid_arguments"
        return block_error(view["blocks"], view=True)

    def known_user(self, user: str) -> bool:
        return user in self.users or user in self.admins

    def _assistant_error(self, method: str, params: dict) -> str | None:
        """What an assistant.threads.* call Slack refuses is answered with, or None."""
        channel, thread_ts = params.get("channel_id"), params.get("thread_ts")
        if not isinstance(channel, str) or not channel:
            return "channel_not_found"
        if method == "assistant.threads.setSuggestedPrompts":
            if thread_ts is not None and self.agent_view:
                return "invalid_arguments"  # Slack drops it silently under agent_view; a test must see it
            prompts = params.get("prompts")
            if not isinstance(prompts, list) or not 0 < len(prompts) <= MAX_PROMPTS:
                return "invalid_arguments"
            for prompt in prompts:
                if not isinstance(prompt, dict):
                    return "invalid_arguments"
                title, message = prompt.get("title"), prompt.get("message")
                if not (
                    isinstance(title, str)
                    and 0 < len(title) <= MAX_PROMPT_TITLE
                    and isinstance(message, str)
                    and 0 < len(message) <= MAX_PROMPT_MESSAGE
                ):
                    return "invalid_arguments"
            if params.get("title") is not None and not isinstance(params["title"], str):
                return "invalid_arguments"
            return None if channel.startswith("D") else "channel_not_found"
        if not isinstance(thread_ts, str) or not thread_ts:
            return "invalid_arguments"
        if method == "assistant.threads.setTitle":
            if not channel.startswith("D"):
                return "channel_not_found"  # titles belong to the app's DM threads
            title = params.get("title")
            if not isinstance(title, str) or not title.strip() or len(title) > MAX_THREAD_TITLE:
                return "invalid_arguments"
        if method == "assistant.threads.setStatus":
            if not isinstance(params.get("status"), str):
                return "invalid_arguments"
            loading = params.get("loading_messages")
            if loading is not None and (not isinstance(loading, list) or len(loading) > MAX_LOADING_MESSAGES):
                return "invalid_arguments"
        if self._find(channel, thread_ts) is None:
            return "invalid_thread_ts"
        return None

    def _m_views_publish(self, params: dict) -> dict:
        view = dict(params["view"], id=f"V{next(self._ids):05d}", team_id=self.team_id)
        self.home_views[params["user_id"]] = view
        return {"view": view}

    def _m_assistant_threads_setTitle(self, params: dict) -> dict:
        self.thread_titles[(params["channel_id"], params["thread_ts"])] = params["title"]
        return {}

    def _m_assistant_threads_setSuggestedPrompts(self, params: dict) -> dict:
        self.suggested_prompts[params["channel_id"]] = {"title": params.get("title"), "prompts": params["prompts"]}
        return {}

    def _new_ts(self) -> str:
        return f"1800000000.{next(self._ts):06d}"

    def _find(self, channel: str, ts: str | None) -> dict | None:
        return next((m for m in self.messages.get(channel, []) if m.get("ts") == ts), None)

    def _m_auth_test(self, params: dict) -> dict:
        return {
            "user_id": BOT_USER_ID,
            "bot_id": BOT_ID,
            "team_id": self.team_id,
            "user": "pixelrag",
            "team": "Test",
            "url": "https://test.slack.com/",
        }

    def _m_chat_postMessage(self, params: dict) -> dict:
        ts = self._new_ts()
        message = {
            "ts": ts,
            "text": params.get("text", ""),
            "bot_id": BOT_ID,
            "user": BOT_USER_ID,
            "thread_ts": params.get("thread_ts"),
        }
        self.messages.setdefault(params.get("channel", ""), []).append(message)
        params["_ts"] = ts  # for replies()
        return {"channel": params.get("channel"), "ts": ts, "message": message}

    def _m_chat_postEphemeral(self, params: dict) -> dict | str:
        """Shown to `user` alone, in a channel the bot is in (not_in_channel where it is not: `outside`)."""
        if not params.get("user") or not params.get("channel"):
            return "invalid_arguments"
        if params["channel"] in self.outside:
            return "not_in_channel"
        self.ephemeral.append({"channel": params["channel"], "user": params["user"], "text": params.get("text", "")})
        return {"message_ts": self._new_ts()}

    def _m_chat_update(self, params: dict) -> dict | str:
        message = self._find(params.get("channel", ""), params.get("ts"))
        if message is None:
            return "message_not_found"
        if message.get("bot_id") != BOT_ID:
            return "cant_update_message"
        message["text"] = params.get("text", "")
        return {"channel": params.get("channel"), "ts": params.get("ts"), "text": params.get("text", "")}

    def _m_reactions_add(self, params: dict) -> dict | str:
        key = (params.get("channel", ""), params.get("timestamp", ""), params.get("name", ""))
        if self._find(key[0], key[1]) is None:
            return "message_not_found"
        if key in self.reactions:
            return "already_reacted"
        self.reactions.add(key)
        return {}

    def _m_reactions_remove(self, params: dict) -> dict | str:
        key = (params.get("channel", ""), params.get("timestamp", ""), params.get("name", ""))
        if key not in self.reactions:
            return "no_reaction"
        self.reactions.discard(key)
        return {}

    def _m_conversations_replies(self, params: dict) -> dict | str:
        channel, ts = params.get("channel", ""), params.get("ts")
        if not channel or not ts:
            return "invalid_arguments"
        found = [m for m in self.messages.get(channel, []) if ts in (m.get("ts"), m.get("thread_ts"))]
        if not found:
            return "thread_not_found"
        if params.get("latest"):
            latest, oldest = float(params["latest"]), float(params.get("oldest") or 0)
            inclusive = str(params.get("inclusive", "")).lower() in ("1", "true")
            found = [
                m
                for m in found
                if (oldest <= float(m["ts"]) <= latest if inclusive else oldest < float(m["ts"]) < latest)
            ]
        return {"messages": found, "has_more": False}

    def _m_files_getUploadURLExternal(self, params: dict) -> dict | str:
        if not params.get("filename") or not str(params.get("length", "")).isdigit() or int(params["length"]) <= 0:
            return "invalid_arguments"
        file_id = f"F{next(self._ids):05d}"
        self.upload_meta[file_id] = {"filename": params.get("filename"), "length": int(params["length"])}
        return {"upload_url": f"{self.base_url}/upload/{file_id}", "file_id": file_id}

    def _m_files_completeUploadExternal(self, params: dict) -> dict | str:
        files = params.get("files")
        if not isinstance(files, list) or not files:
            return "invalid_arguments"
        if len(files) > MAX_FILES_PER_MESSAGE:
            return "internal_error"
        if any(f.get("id") not in self.uploads for f in files):
            return "file_not_found"  # completed without uploading the bytes first
        blocks = params.get("blocks")
        if blocks and not params.get("initial_comment"):
            if any(isinstance(b, dict) and b.get("type") == "markdown" for b in blocks):
                return "internal_error"  # python-slack-sdk #1756: markdown blocks are refused here
            if error := block_error(blocks, link_base=self.link_base):
                return error
        return {"files": [{"id": f.get("id"), "title": f.get("title")} for f in files]}

    def _m_users_info(self, params: dict) -> dict:
        user = params.get("user", "")
        return {"user": {"id": user, "name": user.lower(), "is_admin": user in self.admins, "is_owner": False}}

    async def _upload(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        data = await request.read()
        self.calls.append(Call("upload", {"file_id": file_id, "size": len(data)}, dict(request.headers)))
        meta = self.upload_meta.get(file_id)
        if meta is None or file_id in self.uploads:
            return web.Response(status=404, text="upload URL unknown or already used")
        if len(data) != meta["length"]:
            return web.Response(status=400, text=f"expected {meta['length']} bytes, got {len(data)}")
        self.uploads[file_id] = data
        return web.Response(text=f"OK - {len(data)}")

    async def _webhook(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        body = await request.json()
        self.calls.append(Call("response_url", body, dict(request.headers)))
        self._note_acting("response_url", body)
        uses = self._response_urls.setdefault(name, [])
        if len(uses) >= RESPONSE_URL_USES or (uses and time.time() - uses[0] > RESPONSE_URL_LIFETIME_S):
            self.refused.append(("response_url", "used_url"))
            return web.Response(status=404, text="used_url")
        if not body.get("text") and not body.get("blocks"):
            self.refused.append(("response_url", "no_text"))
            return web.Response(status=400, text="no_text")
        if body.get("blocks") is not None and (error := block_error(body["blocks"], link_base=self.link_base)):
            self.refused.append(("response_url", error))
            return web.Response(status=400, text=error)
        uses.append(time.time())
        return web.Response(text="ok")

    async def _private_file_redirect(self, request: web.Request) -> web.Response:
        """url_private answers with a redirect, as Slack's file links do."""
        name = request.match_info["name"]
        self.calls.append(Call("download_redirect", {"name": name}, dict(request.headers)))
        raise web.HTTPFound(f"/files-origin/{name}")

    async def _private_file(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["name"]
        self.calls.append(Call("download", {"name": name}, dict(request.headers)))
        if not self._authorized(request) or name not in self.private_files:
            # What Slack does when the token lacks files:read: 200 with its sign-in page.
            return web.Response(body=LOGIN_PAGE, content_type="text/html")
        data, ctype = self.private_files[name]
        response = web.StreamResponse(headers={"Content-Type": ctype})
        if self.download_chunked:
            response.enable_chunked_encoding()
        else:
            response.content_length = len(data)
        await response.prepare(request)
        end = len(data) if self.download_drop_after is None else min(len(data), self.download_drop_after)
        try:
            for start in range(0, end, DOWNLOAD_CHUNK):
                # Separate writes with a pause: the client sees the body arrive in pieces, as over a network.
                await response.write(data[start : min(end, start + DOWNLOAD_CHUNK)])
                await asyncio.sleep(0.002)
        except ConnectionError:  # the client stopped reading (a size cap): nothing more to send
            return response
        if end < len(data):
            request.transport.close()  # the connection drops mid-body
            return response
        await response.write_eof()
        return response

    async def _public_file(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self.calls.append(Call("public_download", {"name": name}, dict(request.headers)))
        if name not in self.public_files:
            return web.Response(status=404, text="not found")
        data, ctype = self.public_files[name]
        return web.Response(body=data, content_type=ctype)


def chunks_error(chunks: Any, link_base: str | None = None) -> str | None:
    """invalid_chunks for a chunk list Slack would refuse: each chunk one of the documented types
    with its fields (a task's title within about 256 characters, its status one of four)."""
    if not isinstance(chunks, list):
        return "invalid_chunks"
    for chunk in chunks:
        kind = chunk.get("type") if isinstance(chunk, dict) else None
        if kind == "markdown_text":
            text = chunk.get("text")
            if not isinstance(text, str) or not text:
                return "invalid_chunks"
            if len(text) > MAX_STREAM_TEXT:
                return "msg_too_long"
        elif kind == "task_update":
            if not isinstance(chunk.get("id"), str) or not chunk["id"] or chunk.get("status") not in TASK_STATUSES:
                return "invalid_chunks"
            if not isinstance(chunk.get("title"), str) or not 0 < len(chunk["title"]) <= MAX_TASK_TITLE:
                return "invalid_chunks"
            if any(k in chunk and not isinstance(chunk[k], str) for k in ("details", "output")):
                return "invalid_chunks"
            if len(chunk.get("details", "")) > MAX_TASK_DETAILS:
                return "invalid_chunks"
            sources = chunk.get("sources", [])
            if not isinstance(sources, list) or any(
                not isinstance(x, dict) or x.get("type") != "url" or not x.get("url") or not x.get("text")
                for x in sources
            ):
                return "invalid_chunks"
        elif kind == "plan_update":
            if not isinstance(chunk.get("title"), str) or not chunk["title"]:
                return "invalid_chunks"
        elif kind == "blocks":
            if block_error(chunk.get("blocks"), link_base=link_base):
                return "invalid_chunks"
        else:
            return "invalid_chunks"
    return None


def _strings(value: Any, markdown: bool = False):
    """(text, read as Markdown) for every string in a request's parameters: markdown blocks,
    markdown_text chunks and the markdown_text parameter are Markdown, the rest mrkdwn or plain text."""
    if isinstance(value, str):
        yield value, markdown
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        typed_markdown = value.get("type") in ("markdown", "markdown_text")
        for key, item in value.items():
            yield from _strings(item, key == "markdown_text" or (key == "text" and typed_markdown))


def block_text(blocks: Any) -> list[str]:
    """The visible text of section/context/header/markdown blocks."""
    out: list[str] = []
    for block in blocks or []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), dict):
            out.append(block["text"].get("text", ""))
        elif isinstance(block.get("text"), str):
            out.append(block["text"])
        for element in block.get("elements", []) or []:
            if isinstance(element, dict) and "text" in element:
                out.append(element["text"] if isinstance(element["text"], str) else element["text"].get("text", ""))
        for f in block.get("fields", []) or []:
            out.append(f.get("text", ""))
    return out
