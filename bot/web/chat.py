"""The browser chat's one request: POST /chat/ask, a question (and screenshots) in a conversation, its
answer streamed back as JSON lines while it is worked on.

The same conversation flow as the chat adapters (core's Conversation, thread memory and follow-ups)
and the same delivery owner: the browser names each question with an id of its own, claimed once, so a
question sent twice (a double submit, a retry after a dropped connection) is answered once. Lines sent:

    {"type": "step", "key", "title", "status", "detail"}     a stage begins or ends
    {"type": "pages", "pages": [{"label", "image", "view"}]}  the pages about to be read
    {"type": "text", "text"}                                  more of the answer, as written
    {"type": "answer", ...}                                   the answer: its HTML, citations, notes
    {"type": "error", "message"}                              what went wrong, for the person
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import re
import time

from aiohttp import web
from markdown_it import MarkdownIt

from core import (
    Answer,
    BadInput,
    Conversation,
    DatabaseUnavailable,
    PagesFound,
    PixelragError,
    QueryImage,
    Service,
    Step,
    TextDelta,
    ThreadMemory,
    attachment_kind,
    validate_query_image,
)

log = logging.getLogger("pixelrag.web")

ID = re.compile(r"[0-9a-f]{32}")  # a conversation's or a question's id, made by the browser
MAX_QUESTION = 4000  # characters
MAX_IMAGES = 4
GENERIC_FAILURE = "Something went wrong while answering; it was logged. Please try again."


def markdown_renderer() -> MarkdownIt:
    """CommonMark with raw HTML off, no images (nothing is fetched from elsewhere) and links only to
    http(s) and mailto, as the chat platforms show an answer."""
    md = MarkdownIt("commonmark", {"html": False}).enable("table").disable("image")
    md.validateLink = lambda url: url.strip().lower().startswith(("http://", "https://", "mailto:"))  # type: ignore[method-assign]
    return md


class WebChat:
    def __init__(self, service: Service, threads: ThreadMemory, scope: str):
        self.service, self.scope = service, scope
        self.conversation = Conversation(service, threads, service.settings.history_exchanges)
        self.markdown = markdown_renderer()

    async def ask(self, request: web.Request) -> web.StreamResponse:
        try:
            conversation, message, question, images = await self._read(request)
        except BadInput as exc:
            return web.json_response({"type": "error", "message": str(exc)}, status=400)
        try:
            delivery = await self.conversation.claim(f"web:{message}")
        except DatabaseUnavailable as exc:
            return web.json_response({"type": "error", "message": str(exc)}, status=503)
        if delivery is None:
            return web.json_response(
                {"type": "error", "message": "This question is being answered already."}, status=409
            )
        response = web.StreamResponse(headers={"Content-Type": "application/x-ndjson; charset=utf-8"})
        await response.prepare(request)
        lines: asyncio.Queue[dict | None] = asyncio.Queue()
        writer = asyncio.create_task(self._write(response, lines))
        async with delivery:
            try:
                view = await self._viewer_links()

                def heard(event: Step | TextDelta | PagesFound) -> None:
                    if isinstance(event, Step):
                        lines.put_nowait({"type": "step", **step_record(event)})
                    elif isinstance(event, TextDelta):
                        lines.put_nowait({"type": "text", "text": event.text})
                    else:
                        pages = [(h, view(h.doc_id, h.page)) for h in event.hits]
                        lines.put_nowait(
                            {
                                "type": "pages",
                                "pages": [
                                    {"label": f"{h.title}, p. {h.page}", "image": f"/page/{t}", "view": f"/view/{t}"}
                                    for h, t in pages
                                    if t
                                ],
                            }
                        )

                reply = await self.conversation.ask(
                    ("web", "browser", conversation, conversation),
                    question,
                    images,
                    scope=self.scope,
                    events=heard,
                    user="browser",
                )
                assert reply.answer is not None  # no reply is kept for sending again here
                lines.put_nowait(self._answer(reply.answer, view))
                await delivery.posted(reply)
            except PixelragError as exc:
                lines.put_nowait({"type": "error", "message": str(exc)})
            except Exception:
                log.exception("answering %r failed", question[:80])
                lines.put_nowait({"type": "error", "message": GENERIC_FAILURE})
            finally:
                lines.put_nowait(None)
                await writer
        return response

    async def _viewer_links(self):
        """A question's pages' viewer tokens: view(doc_id, page, highlight) -> token, or None for every
        page when no link secret can be had (the answer matters more than its links; logged)."""
        try:
            links = await self.service.links()
        except PixelragError as exc:
            log.warning("answer sent without page links: %s", exc)
            return lambda doc_id, page, highlight=None: None
        documents = {d.doc_id: d for d in await self.service.documents(self.scope)}

        def view(doc_id: str, page: int, highlight=None) -> str | None:
            document = documents.get(doc_id)
            return links.token(links.link(document, page, highlight, time.time())) if document else None

        return view

    async def _read(self, request: web.Request) -> tuple[str, str, str, list[QueryImage]]:
        """The form's fields, checked: ids, the question, up to MAX_IMAGES screenshots."""
        if not request.content_type.startswith("multipart/"):
            raise BadInput("Send the question as a form (multipart/form-data).")
        fields: dict[str, str] = {}
        images: list[QueryImage] = []
        max_bytes = self.service.settings.max_image_bytes
        reader = await request.multipart()
        async for part in reader:
            name = getattr(part, "name", None)
            if name == "image":
                if len(images) == MAX_IMAGES:
                    raise BadInput(f"At most {MAX_IMAGES} screenshots per question.")
                data = await part.read(decode=False)  # type: ignore[union-attr]
                file_name = getattr(part, "filename", None) or "screenshot"
                if len(data) > max_bytes:
                    raise BadInput(f"{file_name}: more than {max_bytes // 1_000_000} MB; send a smaller screenshot.")
                mime = attachment_kind(part.headers.get("Content-Type"), file_name)  # type: ignore[union-attr]
                if mime in (None, "pdf"):
                    raise BadInput(f"{file_name}: only PNG, JPEG or WebP screenshots can be sent with a question.")
                images.append(validate_query_image(QueryImage(bytes(data), mime, file_name), max_bytes))
            elif name in ("conversation", "message", "question"):
                fields[name] = (await part.text())[: MAX_QUESTION + 1]  # type: ignore[union-attr]
        conversation, message = fields.get("conversation", ""), fields.get("message", "")
        if not ID.fullmatch(conversation) or not ID.fullmatch(message):
            raise BadInput("The page sent no conversation or question id; reload it.")
        question = fields.get("question", "").strip()
        if len(question) > MAX_QUESTION:
            raise BadInput(f"The question is longer than {MAX_QUESTION} characters; ask it in fewer words.")
        if not question and not images:
            raise BadInput("Type a question, or add a screenshot.")
        return conversation, message, question, images

    def _answer(self, answer: Answer, view) -> dict:
        citations = []
        for c in answer.citations:
            token = view(c.doc_id, c.page, c.highlight)
            citations.append(
                {
                    "label": c.label,
                    "quote": c.quote,
                    "kind": c.highlight.kind if c.highlight else None,
                    "view": f"/view/{token}" if token else None,
                    "preview": _data_url(c.preview, "image/jpeg"),
                    "crop": _data_url(c.crop, "image/png"),
                }
            )
        return {
            "type": "answer",
            "html": self.markdown.render(answer.clarifying_question or answer.markdown),
            "interpreted": answer.interpreted_question if answer.changed_question else None,
            "clarifying": bool(answer.clarifying_question),
            "citations": citations,
            "limitations": list(answer.limitations),
            "notes": list(answer.notes),
        }

    @staticmethod
    async def _write(response: web.StreamResponse, lines: asyncio.Queue[dict | None]) -> None:
        """Each line as it comes; a browser that went away stops the writing, not the answer."""
        while (line := await lines.get()) is not None:
            try:
                await response.write(json.dumps(line, ensure_ascii=False).encode() + b"\n")
            except (ConnectionResetError, RuntimeError):
                log.info("the browser went away before the answer was written")
                while await lines.get() is not None:
                    pass
                return


def step_record(step: Step) -> dict:
    return {"key": step.key, "title": step.title, "status": step.status, "detail": step.detail}


def _data_url(data: bytes | None, mime: str) -> str | None:
    return f"data:{mime};base64,{base64.b64encode(data).decode()}" if data else None
