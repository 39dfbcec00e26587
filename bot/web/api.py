"""The HTTP API for agents and scripts, under /api/ on `pixelrag web`'s server (docs/api.md):

- GET  /api/documents  what the key's collection sees;
- POST /api/search     a query and/or an image -> the top pages, scores, viewer links (images on request);
- POST /api/ask        the answer record as `pixelrag ask --json` gives it, streamed as server-sent events
                       (step, pages, text, then answer; or error).

Every request carries `Authorization: Bearer <key>` (`pixelrag keys add`); a key sees exactly its
collection, as a channel does, and every search or question counts against the usage limits as the
key's questions. Bodies are JSON: {"query": "...", "image": "<base64 PNG/JPEG/WebP>", "images": true,
"conversation": "<32 hex>"} (image, images and conversation optional).
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import math

from aiohttp import web

from core import (
    BadInput,
    LimitReached,
    PixelragError,
    QueryImage,
    Service,
    ThreadMemory,
    key_scope,
    validate_query_image,
)

from .chat import ID, MAX_QUESTION
from .for_agents import ForAgents

log = logging.getLogger("pixelrag.web")


class Api:
    def __init__(self, service: Service, threads: ThreadMemory):
        self.service, self.threads = service, threads
        self.agents = ForAgents(service, threads)

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/api/documents", self._keyed(self.documents))
        app.router.add_post("/api/search", self._keyed(self.search))
        app.router.add_post("/api/ask", self._keyed(self.ask))

    def _keyed(self, handler):
        """The handler, given the key's (name, scope); 401 without a valid key, 400 for a bad body, 429
        over a limit, 503 for an unavailable index; each with the words a chat would show."""

        async def keyed(request: web.Request) -> web.StreamResponse:
            try:
                key = await key_scope(self.threads, request.headers.get("Authorization"))
            except PixelragError as exc:
                return _error(str(exc), 503)
            if key is None:
                return _error(
                    "Send a pixelrag API key: Authorization: Bearer prk_… (pixelrag keys add NAME).",
                    401,
                    {"WWW-Authenticate": 'Bearer realm="pixelrag"'},
                )
            try:
                return await handler(request, *key)
            except LimitReached as exc:
                return _error(str(exc), 429, {"Retry-After": str(max(1, math.ceil(exc.retry_after)))})
            except BadInput as exc:
                return _error(str(exc), 400)
            except PixelragError as exc:
                return _error(str(exc), 503)

        return keyed

    async def documents(self, request: web.Request, name: str, scope: str) -> web.Response:
        return web.json_response(await self.agents.documents(scope))

    async def search(self, request: web.Request, name: str, scope: str) -> web.Response:
        query, images, with_images, _ = await _body(request, self.service.settings.max_image_bytes)
        results = await self.agents.search(name, scope, query, images, with_images)
        for item in results:
            if with_images:
                jpeg = item.pop("jpeg")
                item["image"] = "data:image/jpeg;base64," + base64.b64encode(jpeg).decode() if jpeg else None
        return web.json_response({"query": query, "results": results})

    async def ask(self, request: web.Request, name: str, scope: str) -> web.StreamResponse:
        query, images, _, conversation = await _body(request, self.service.settings.max_image_bytes)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
        events: asyncio.Queue[tuple[str, dict] | None] = asyncio.Queue()
        writer = asyncio.create_task(_send(request, response, events))
        try:
            record, _ = await self.agents.ask(
                name, scope, query, images, conversation, heard=lambda *event: events.put_nowait(event)
            )
            events.put_nowait(("answer", record))
        except LimitReached:
            raise  # checked before any event, so nothing is sent yet: a 429 as /api/search gives
        except PixelragError as exc:
            events.put_nowait(("error", {"message": str(exc)}))
        except Exception:
            log.exception("the API's question %r failed", query[:80])
            events.put_nowait(("error", {"message": "Something went wrong while answering; it was logged."}))
        finally:
            events.put_nowait(None)
            await writer
        return response


async def _body(request: web.Request, max_image_bytes: int) -> tuple[str, list[QueryImage], bool, str]:
    """(query, images, whether to include page images, conversation id) from a JSON body; BadInput."""
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError):
        raise BadInput('Send a JSON body: {"query": "…"} (and "image": base64 of a PNG, JPEG or WebP).') from None
    if not isinstance(body, dict):
        raise BadInput('Send a JSON object: {"query": "…"}.')
    query = body.get("query") or ""
    if not isinstance(query, str) or len(query) > MAX_QUESTION:
        raise BadInput(f'"query" must be text of at most {MAX_QUESTION} characters.')
    images = []
    if body.get("image"):
        try:
            data = base64.b64decode(body["image"], validate=True)
        except (binascii.Error, TypeError, ValueError):
            raise BadInput('"image" must be base64 of a PNG, JPEG or WebP.') from None
        images.append(validate_query_image(QueryImage(data, "image/png", "image"), max_image_bytes))
    if not query.strip() and not images:
        raise BadInput('Give a "query", an "image", or both.')
    conversation = body.get("conversation") or ""
    if conversation and not (isinstance(conversation, str) and ID.fullmatch(conversation)):
        raise BadInput('"conversation" must be 32 hexadecimal digits.')
    return query.strip(), images, bool(body.get("images")), conversation


async def _send(request: web.Request, response: web.StreamResponse, events: asyncio.Queue) -> None:
    """The events as server-sent events; the response starts with the first, so that a question refused
    before any (a limit) is still an HTTP error."""
    while (item := await events.get()) is not None:
        name, data = item
        try:
            if not response.prepared:
                await response.prepare(request)
            await response.write(f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode())
        except (ConnectionResetError, RuntimeError):
            log.info("an API client went away before its answer was sent")
            while await events.get() is not None:
                pass
            return


def _error(message: str, status: int, headers: dict | None = None) -> web.Response:
    return web.json_response({"error": message}, status=status, headers=headers)
