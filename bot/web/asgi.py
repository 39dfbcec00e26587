"""An ASGI application answering one aiohttp request: the MCP SDK's streamable HTTP transport is ASGI
(Starlette), `pixelrag web` is aiohttp (mcp.py serves the one through the other).

The request's body is read whole (aiohttp's size limit applies) and handed over as one message; the
application's response is written as it is sent, so a stream of server-sent events reaches the client
event by event. The application hears of a disconnect from receive(), as ASGI servers tell it: once its
response is sent, or once a write finds the client gone (an SSE client may close as soon as it has its
answer, before the stream's last chunk); what it sends after that is dropped, not an error."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from aiohttp import web

log = logging.getLogger("pixelrag.web")

Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[MutableMapping[str, Any], Receive, Send], Awaitable[None]]

# Headers about one connection, not the response: aiohttp writes its own.
HOP_BY_HOP = frozenset({b"connection", b"keep-alive", b"transfer-encoding", b"upgrade"})


async def serve_asgi(request: web.Request, app: AsgiApp, scope_extra: dict[str, Any]) -> web.StreamResponse:
    """`app`'s response to `request`; `scope_extra` joins the ASGI scope (what the caller already knows of
    the request, such as who sent it)."""
    body = await request.read()
    peer = request.transport.get_extra_info("peername") if request.transport else None
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": f"{request.version.major}.{request.version.minor}",
        "method": request.method,
        "scheme": request.scheme,
        "path": request.path,
        "query_string": request.query_string.encode(),
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in request.raw_headers],
        "client": tuple(peer[:2]) if isinstance(peer, tuple) else None,
        **scope_extra,
    }
    unread = [{"type": "http.request", "body": body, "more_body": False}]
    over = asyncio.Event()  # the response is sent, or the client left: nothing more to say
    response: web.StreamResponse | None = None

    async def receive() -> Message:
        if unread:
            return unread.pop()
        await over.wait()
        return {"type": "http.disconnect"}

    async def send(message: Message) -> None:
        nonlocal response
        if over.is_set():
            return
        try:
            if message["type"] == "http.response.start":
                response = web.StreamResponse(status=message["status"])
                for name, value in message.get("headers", ()):
                    if name.lower() not in HOP_BY_HOP:
                        response.headers.add(name.decode("latin-1"), value.decode("latin-1"))
                await response.prepare(request)
            elif message["type"] == "http.response.body" and response is not None:
                await response.write(message.get("body", b""))
                if not message.get("more_body", False):
                    await response.write_eof()
                    over.set()
        except ConnectionResetError:
            log.debug("a client of %s went away before its response was sent", request.path)
            over.set()

    try:
        await app(scope, receive, send)
    finally:
        over.set()
    if response is None:
        log.error("%s %s: the application sent no response", request.method, request.path)
        return web.json_response({"error": "The server sent no response; it was logged."}, status=500)
    return response
