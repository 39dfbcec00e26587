"""A loopback fake of the Slack Web API for offline tests, driven by the real slack_sdk client.

It runs aiohttp.web on 127.0.0.1 (port 0) in its own thread and event loop, so code under test
that blocks (a synchronous download in a worker thread, for instance) can never deadlock it.
Every call is recorded as a `Call(method, params, headers)`; tests assert on those records.

Served paths:
  /api/{method}      Web API methods (parameters merged from query string, form and JSON body)
  /upload/{file_id}  upload_url returned by files.getUploadURLExternal (stores the POSTed bytes)
  /webhook/{name}    response_url for slash commands (records the JSON body)
  /files/{name}      url_private: the bytes with the right Bearer token, else an HTML login page
  /public/{name}     plain downloads (a PDF to index by URL)
"""
from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web

BOT_TOKEN = "xoxb-test-token"
BOT_USER_ID = "UBOT"
BOT_ID = "BBOT"
LOGIN_PAGE = b"<!DOCTYPE html><html><head><title>Slack</title></head><body>Sign in to Slack</body></html>"


@dataclass
class Call:
    method: str
    params: dict[str, Any]
    headers: dict[str, str] = field(default_factory=dict)


class FakeSlack:
    def __init__(self, team_id: str = "T1"):
        self.team_id = team_id
        self.calls: list[Call] = []
        self.uploads: dict[str, bytes] = {}  # file_id -> bytes POSTed to its upload_url
        self.upload_meta: dict[str, dict] = {}  # file_id -> filename/length
        self.private_files: dict[str, tuple[bytes, str]] = {}  # name -> (bytes, content type)
        self.public_files: dict[str, tuple[bytes, str]] = {}
        self.admins: set[str] = set()
        self.fail: dict[str, str] = {}  # method -> Slack error code to answer with
        self.http_errors: dict[str, list[int]] = {}  # method -> HTTP statuses to answer first, one per call
        self.messages: dict[str, list[dict]] = {}  # channel -> posted messages
        self._ts = itertools.count(1)
        self._ids = itertools.count(1)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._runner: web.AppRunner | None = None
        self.base_url = ""

    # ----- lifecycle -------------------------------------------------------------------------
    def start(self) -> "FakeSlack":
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
        app.router.add_get("/files/{name}", self._private_file)
        app.router.add_get("/public/{name}", self._public_file)
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

    # ----- queries for tests -----------------------------------------------------------------
    def calls_to(self, method: str) -> list[Call]:
        return [c for c in list(self.calls) if c.method == method]

    def posts(self, thread_ts: str | None = None) -> list[Call]:
        posts = self.calls_to("chat.postMessage")
        return posts if thread_ts is None else [c for c in posts if c.params.get("thread_ts") == thread_ts]

    def thread_text(self, thread_ts: str) -> str:
        """Everything posted in a thread (text and block text), as one string."""
        parts = []
        for call in self.posts(thread_ts):
            parts.append(str(call.params.get("text", "")))
            parts.extend(block_text(call.params.get("blocks")))
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
        for key in ("blocks", "files", "attachments"):
            if isinstance(params.get(key), str):
                try:
                    params[key] = json.loads(params[key])
                except ValueError:
                    pass
        return params

    def _authorized(self, request: web.Request) -> bool:
        return request.headers.get("Authorization") == f"Bearer {BOT_TOKEN}"

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = await self._params(request)
        self.calls.append(Call(method, params, dict(request.headers)))
        if not self._authorized(request):
            return web.json_response({"ok": False, "error": "invalid_auth"})
        if self.http_errors.get(method):
            return web.json_response({"ok": False, "error": "fatal_error"}, status=self.http_errors[method].pop(0))
        if method in self.fail:
            return web.json_response({"ok": False, "error": self.fail[method]})
        handler = getattr(self, "_m_" + method.replace(".", "_"), None)
        result = handler(params) if handler else {}
        return web.json_response({"ok": True, **result})

    def _new_ts(self) -> str:
        return f"1800000000.{next(self._ts):06d}"

    def _m_auth_test(self, params: dict) -> dict:
        return {"user_id": BOT_USER_ID, "bot_id": BOT_ID, "team_id": self.team_id, "user": "pixelrag",
                "team": "Test", "url": "https://test.slack.com/"}

    def _m_chat_postMessage(self, params: dict) -> dict:
        ts = self._new_ts()
        message = {"ts": ts, "text": params.get("text", ""), "bot_id": BOT_ID, "user": BOT_USER_ID,
                   "thread_ts": params.get("thread_ts")}
        self.messages.setdefault(params.get("channel", ""), []).append(message)
        return {"channel": params.get("channel"), "ts": ts, "message": message}

    def _m_chat_update(self, params: dict) -> dict:
        return {"channel": params.get("channel"), "ts": params.get("ts"), "text": params.get("text", "")}

    def _m_conversations_replies(self, params: dict) -> dict:
        channel, ts = params.get("channel", ""), params.get("ts")
        found = [m for m in self.messages.get(channel, []) if ts in (m.get("ts"), m.get("thread_ts"))]
        return {"messages": found, "has_more": False}

    def _m_files_getUploadURLExternal(self, params: dict) -> dict:
        file_id = f"F{next(self._ids):05d}"
        self.upload_meta[file_id] = {"filename": params.get("filename"), "length": params.get("length")}
        return {"upload_url": f"{self.base_url}/upload/{file_id}", "file_id": file_id}

    def _m_files_completeUploadExternal(self, params: dict) -> dict:
        files = params.get("files") or []
        return {"files": [{"id": f.get("id"), "title": f.get("title")} for f in files]}

    def _m_users_info(self, params: dict) -> dict:
        user = params.get("user", "")
        return {"user": {"id": user, "name": user.lower(), "is_admin": user in self.admins, "is_owner": False}}

    async def _upload(self, request: web.Request) -> web.Response:
        file_id = request.match_info["file_id"]
        data = await request.read()
        self.calls.append(Call("upload", {"file_id": file_id, "size": len(data)}, dict(request.headers)))
        self.uploads[file_id] = data
        return web.Response(text="OK - %d" % len(data))

    async def _webhook(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.calls.append(Call("response_url", body, dict(request.headers)))
        return web.Response(text="ok")

    async def _private_file(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self.calls.append(Call("download", {"name": name}, dict(request.headers)))
        if not self._authorized(request) or name not in self.private_files:
            # What Slack does when the token lacks files:read: 200 with its sign-in page.
            return web.Response(body=LOGIN_PAGE, content_type="text/html")
        data, ctype = self.private_files[name]
        return web.Response(body=data, content_type=ctype)

    async def _public_file(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        self.calls.append(Call("public_download", {"name": name}, dict(request.headers)))
        if name not in self.public_files:
            return web.Response(status=404, text="not found")
        data, ctype = self.public_files[name]
        return web.Response(body=data, content_type=ctype)


def block_text(blocks: Any) -> list[str]:
    """The visible text of section/context/header blocks."""
    out: list[str] = []
    for block in blocks or []:
        if not isinstance(block, dict):
            continue
        if isinstance(block.get("text"), dict):
            out.append(block["text"].get("text", ""))
        for element in block.get("elements", []) or []:
            if isinstance(element, dict) and "text" in element:
                out.append(element["text"] if isinstance(element["text"], str) else element["text"].get("text", ""))
        for f in block.get("fields", []) or []:
            out.append(f.get("text", ""))
    return out
