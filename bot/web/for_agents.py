"""What agents and scripts are given, whatever carries it (the HTTP API in api.py, the compatibility
route in compat.py, the MCP server in mcp.py): a key's documents, the pages a query finds, an answer as
the record `pixelrag ask --json` prints; each with the pages' viewer links. Every search and question is
a question of the key's own (`key:NAME`) for the usage limits, in the key's collection."""

from __future__ import annotations

import base64
import binascii
import logging
import time
from collections.abc import Callable

from core import (
    Answer,
    BadInput,
    Conversation,
    PagesFound,
    PixelragError,
    QueryImage,
    Service,
    Step,
    TextDelta,
    ThreadMemory,
    key_scope,
    validate_query_image,
)

from .chat import step_record

log = logging.getLogger("pixelrag.web")

MAX_TOP = 100  # pages one search may rank: ranking more is cheap, but each may carry its image


class Refused(Exception):
    """A request without a key that opens anything, or whose key cannot be checked: its HTTP answer."""

    def __init__(self, message: str, status: int, headers: dict[str, str] | None = None):
        super().__init__(message)
        self.status, self.headers = status, headers


async def caller(threads: ThreadMemory, authorization: str | None) -> tuple[str, str]:
    """(key name, collection) of the API key an `Authorization: Bearer …` header carries; Refused: 401
    (with WWW-Authenticate) without a valid one, 503 when the keys cannot be read."""
    try:
        key = await key_scope(threads, authorization)
    except PixelragError as exc:
        raise Refused(str(exc), 503) from None
    if key is None:
        raise Refused(
            "Send a pixelrag API key: Authorization: Bearer prk_… (pixelrag keys add NAME).",
            401,
            {"WWW-Authenticate": 'Bearer realm="pixelrag"'},
        )
    return key


# (event name, data) as the HTTP API streams them: "step", "pages", "text"
Heard = Callable[[str, dict], None]
Links = Callable[..., "str | None"]


class ForAgents:
    def __init__(self, service: Service, threads: ThreadMemory):
        self.service, self.threads = service, threads
        self.conversation = Conversation(service, threads, service.settings.history_exchanges)

    async def documents(self, scope: str) -> dict:
        listed = [
            {"id": d.doc_id, "title": d.title, "file_name": d.file_name, "pages": d.page_count, "collection": d.scope}
            for d in await self.service.documents(scope)
        ]
        return {"collection": scope, "documents": listed}

    async def search(
        self,
        name: str,
        scope: str,
        query: str,
        images: list[QueryImage],
        with_images: bool = False,
        top: int | None = None,
    ) -> list[dict]:
        """The `top` pages (top_k unless given): document, title, page, score, view (the viewer link) and,
        asked for, the page's JPEG as `jpeg` bytes."""
        reply = await self.conversation.ask(
            None, query, images, scope=scope, user=f"key:{name}", retrieve_only=True, top=top
        )
        assert reply.answer is not None
        links = await self.links(scope)
        results = []
        for hit in reply.answer.hits:
            item = {"document": hit.doc_id, "title": hit.title, "page": hit.page, "score": hit.score}
            item["view"] = links(hit.doc_id, hit.page)
            if with_images:
                item["jpeg"] = await self.service.page_jpeg(scope, hit.doc_id, hit.page)
            results.append(item)
        return results

    async def ask(
        self,
        name: str,
        scope: str,
        query: str,
        images: list[QueryImage],
        conversation: str = "",
        heard: Heard | None = None,
    ) -> tuple[dict, Answer]:
        """The answer record (each citation with its `url`) and the answer itself; `heard` hears the stages,
        the pages found and the text as they happen. `conversation` keeps a thread of the key's own."""
        links = await self.links(scope)

        def events(event: Step | TextDelta | PagesFound) -> None:
            if heard is None:
                return
            if isinstance(event, Step):
                heard("step", step_record(event))
            elif isinstance(event, TextDelta):
                heard("text", {"text": event.text})
            else:
                pages = [
                    {"document": h.doc_id, "title": h.title, "page": h.page, "view": links(h.doc_id, h.page)}
                    for h in event.hits
                ]
                heard("pages", {"pages": pages})

        key = ("api", name, conversation, conversation) if conversation else None
        reply = await self.conversation.ask(key, query, images, scope=scope, events=events, user=f"key:{name}")
        assert reply.answer is not None
        record = reply.answer.to_json()
        for data, citation in zip(record["citations"], reply.answer.citations):
            data["url"] = links(citation.doc_id, citation.page, citation.highlight)
        return record, reply.answer

    async def links(self, scope: str) -> Links:
        """links(doc_id, page, highlight=None) -> the page's viewer URL (absolute with PIXELRAG_PUBLIC_URL),
        or None when no link secret can be had."""
        try:
            links = await self.service.links()
        except PixelragError as exc:
            log.warning("answer for an agent without page links: %s", exc)
            return lambda doc_id, page, highlight=None: None
        documents = {d.doc_id: d for d in await self.service.documents(scope)}

        def link(doc_id: str, page: int, highlight=None) -> str | None:
            document = documents.get(doc_id)
            return links.view_url(links.link(document, page, highlight, time.time())) if document else None

        return link


def decoded_image(text: object, max_bytes: int) -> QueryImage:
    """A screenshot sent as base64 (or a data: URL, as the official PixelRAG's clients send), checked as a
    chat attachment is (PNG, JPEG or WebP, size, pixels); BadInput says what is wrong."""
    if isinstance(text, str) and text.startswith("data:"):
        text = text.partition(",")[2]
    try:
        data = base64.b64decode(text, validate=True)  # type: ignore[arg-type]
    except (binascii.Error, TypeError, ValueError):
        raise BadInput('"image" must be base64 of a PNG, JPEG or WebP.') from None
    return validate_query_image(QueryImage(data, "image/png", "image"), max_bytes)
