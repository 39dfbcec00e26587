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
import json
import logging
import math
from dataclasses import dataclass

from aiohttp import web

from core import (
    BadInput,
    LimitReached,
    PixelragError,
    QueryImage,
    Service,
    ThreadMemory,
    gaps_csv,
)

from ..gaps import DEFAULT_DAYS, gap_record, gaps_for
from .chat import ID, MAX_QUESTION
from .compat import Compat
from .for_agents import MAX_TOP, ForAgents, Refused, caller, decoded_image

log = logging.getLogger("pixelrag.web")


class Api:
    def __init__(self, service: Service, threads: ThreadMemory):
        self.service, self.threads = service, threads
        self.agents = ForAgents(service, threads)

    def add_routes(self, app: web.Application) -> None:
        app.router.add_get("/api/documents", self._keyed(self.documents))
        app.router.add_post("/api/search", self._keyed(self.search))
        app.router.add_post("/api/ask", self._keyed(self.ask))
        app.router.add_get("/api/gaps", self._keyed(self.gaps))
        Compat(self.agents).add_routes(app, self._keyed)

    def _keyed(self, handler, field: str = "error"):
        """The handler, given the key's (name, scope); 401 without a valid key, 400 for a bad body, 429
        over a limit, 503 for an unavailable index; each with the words a chat would show, under `field`."""

        def refused(message: str, status: int, headers: dict | None = None) -> web.Response:
            return web.json_response({field: message}, status=status, headers=headers)

        async def keyed(request: web.Request) -> web.StreamResponse:
            try:
                key = await caller(self.threads, request.headers.get("Authorization"))
            except Refused as exc:
                return refused(str(exc), exc.status, exc.headers)
            try:
                return await handler(request, *key)
            except LimitReached as exc:
                return refused(str(exc), 429, {"Retry-After": str(max(1, math.ceil(exc.retry_after)))})
            except BadInput as exc:
                return refused(str(exc), 400)
            except PixelragError as exc:
                return refused(str(exc), 503)

        return keyed

    async def documents(self, request: web.Request, name: str, scope: str) -> web.Response:
        return web.json_response(await self.agents.documents(scope))

    async def gaps(self, request: web.Request, name: str, scope: str) -> web.Response:
        """The coverage gaps of the key's collection (a workspace key: its channels' too); ?days=30,
        ?format=csv."""
        try:
            days = float(request.query.get("days", DEFAULT_DAYS))
        except ValueError:
            days = 0
        if not 0 < days <= 3660:
            raise BadInput('"days" must be a number of days, more than 0.')
        gaps, titles = await gaps_for(self.service, scope, days, self.threads)
        if request.query.get("format") == "csv":
            return web.Response(
                text=gaps_csv(gaps, titles),
                content_type="text/csv",
                headers={"Content-Disposition": 'attachment; filename="pixelrag-gaps.csv"'},
            )
        return web.json_response({"collection": scope, "days": days, "gaps": [gap_record(g, titles) for g in gaps]})

    async def search(self, request: web.Request, name: str, scope: str) -> web.Response:
        asked = await _body(request, self.service.settings.max_image_bytes)
        results = await self.agents.search(name, scope, asked.query, asked.images, asked.with_images, asked.top)
        for item in results:
            if asked.with_images:
                jpeg = item.pop("jpeg")
                item["image"] = "data:image/jpeg;base64," + base64.b64encode(jpeg).decode() if jpeg else None
        return web.json_response({"query": asked.query, "results": results})

    async def ask(self, request: web.Request, name: str, scope: str) -> web.StreamResponse:
        asked = await _body(request, self.service.settings.max_image_bytes)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-store"})
        events: asyncio.Queue[tuple[str, dict] | None] = asyncio.Queue()
        writer = asyncio.create_task(_send(request, response, events))
        try:
            record, _ = await self.agents.ask(
                name,
                scope,
                asked.query,
                asked.images,
                asked.conversation,
                heard=lambda *event: events.put_nowait(event),
            )
            events.put_nowait(("answer", record))
        except LimitReached:
            raise  # checked before any event, so nothing is sent yet: a 429 as /api/search gives
        except PixelragError as exc:
            events.put_nowait(("error", {"message": str(exc)}))
        except Exception:
            log.exception("the API's question %r failed", asked.query[:80])
            events.put_nowait(("error", {"message": "Something went wrong while answering; it was logged."}))
        finally:
            events.put_nowait(None)
            await writer
        return response


@dataclass(frozen=True)
class Asked:
    query: str
    images: list[QueryImage]
    with_images: bool  # page images inline in /api/search's results
    conversation: str  # the caller's thread id, or ""
    top: int | None  # how many pages /api/search ranks (top_k unless given)


async def _body(request: web.Request, max_image_bytes: int) -> Asked:
    """What a JSON body asks; BadInput says what is wrong with it."""
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError):
        raise BadInput('Send a JSON body: {"query": "…"} (and "image": base64 of a PNG, JPEG or WebP).') from None
    if not isinstance(body, dict):
        raise BadInput('Send a JSON object: {"query": "…"}.')
    query = body.get("query") or ""
    if not isinstance(query, str) or len(query) > MAX_QUESTION:
        raise BadInput(f'"query" must be text of at most {MAX_QUESTION} characters.')
    images = [decoded_image(body["image"], max_image_bytes)] if body.get("image") else []
    if not query.strip() and not images:
        raise BadInput('Give a "query", an "image", or both.')
    conversation = body.get("conversation") or ""
    if conversation and not (isinstance(conversation, str) and ID.fullmatch(conversation)):
        raise BadInput('"conversation" must be 32 hexadecimal digits.')
    top = body.get("top")
    if top is not None and not (type(top) is int and 1 <= top <= MAX_TOP):
        raise BadInput(f'"top" must be a whole number from 1 to {MAX_TOP}.')
    return Asked(query.strip(), images, bool(body.get("images")), conversation, top)


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
