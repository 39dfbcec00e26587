"""The Gemini reader: at most four page images in, a cited Markdown answer out."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from google.genai import types

from ...markup import inert
from ...records import TOPICS, Box, Draft, DraftCitation, QueryImage, ReaderPage
from .calls import GeminiCalls, json_answer, json_text
from .partial import StreamedString

MAX_READER_PAGES = 4
UNKNOWN_DOC = "?"  # doc_id of a citation whose page_ref names no attached page: the service drops it
# Gemini 3: leave temperature at its default (low values can loop) and choose how much it thinks.
READER_THINKING = types.ThinkingLevel.LOW

READER_INSTRUCTION = """\
You answer questions about product documents using ONLY the attached page images.
Each page image follows its label "Page P<n>: <document>, page <number>".
- Answer in Markdown, in the language of the question, concisely.
- Cite every fact: page_ref is the label (P1..P4) of the page it comes from; quote is a short
  passage copied exactly as printed on that page (at most about 20 words); box_2d is the region
  of that passage on the page image as [ymin, xmin, ymax, xmax] scaled 0-1000 (omit it if unsure).
- Never guess a missing price, an unreadable value or a unit the page does not state: add a
  limitation saying what is missing or unreadable instead.
- If the pages do not contain the answer, say so plainly in the answer and cite nothing.
- topic classifies the question: warranty, complaint, service, instructions, price or other."""


def reader_schema(page_refs: Sequence[str]) -> dict:
    return {
        "type": "object",
        "properties": {
            "answer": {"type": "string", "description": "The answer in Markdown."},
            "citations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "page_ref": {"type": "string", "enum": list(page_refs)},
                        "quote": {"type": "string"},
                        "box_2d": {
                            "type": "array",
                            "items": {"type": "integer", "minimum": 0, "maximum": 1000},
                            "minItems": 4,
                            "maxItems": 4,
                        },
                    },
                    "required": ["page_ref", "quote"],
                },
            },
            "limitations": {"type": "array", "items": {"type": "string"}},
            "topic": {"type": "string", "enum": list(TOPICS)},
        },
        "required": ["answer", "citations", "limitations", "topic"],
    }


def box_from_2d(value: Any) -> Box | None:
    """[ymin, xmin, ymax, xmax] in 0..1000 → normalized (x0, y0, x1, y1); None when unusable."""
    if not isinstance(value, (list, tuple)) or len(value) != 4:
        return None
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v <= 1000 for v in value):
        return None
    y0, x0, y1, x1 = (v / 1000 for v in value)
    x0, x1 = sorted((x0, x1))
    y0, y1 = sorted((y0, y1))
    if x1 - x0 <= 0 or y1 - y0 <= 0:
        return None
    return (x0, y0, x1, y1)


def strings(value: Any) -> tuple[str, ...]:
    return tuple(v.strip() for v in value if isinstance(v, str) and v.strip()) if isinstance(value, list) else ()


class GeminiReader:
    def __init__(self, calls: GeminiCalls):
        self.calls = calls

    async def read(
        self, question: str, pages: Sequence[ReaderPage], images: Sequence[QueryImage], guidance: str = ""
    ) -> Draft:
        refs, contents, config = self._request(question, pages, images, guidance)
        resp = await self.calls.call(
            "the reader call",
            lambda: self.calls.models.generate_content(
                model=self.calls.settings.reader_model, contents=contents, config=config
            ),
        )
        return self._draft(json_answer(resp, "the reader call"), refs)

    async def read_streaming(
        self,
        question: str,
        pages: Sequence[ReaderPage],
        images: Sequence[QueryImage],
        on_text: Callable[[str], None],
        guidance: str = "",
    ) -> Draft:
        """The same request, streamed: the "answer" field's text goes to `on_text` as it arrives
        (the schema lists it first, so it comes before the citations)."""
        refs, contents, config = self._request(question, pages, images, guidance)
        shown = False

        async def stream() -> tuple[str, types.GenerateContentResponse | None]:
            nonlocal shown
            answer, pieces, last = StreamedString("answer"), [], None
            async for chunk in await self.calls.models.generate_content_stream(
                model=self.calls.settings.reader_model, contents=contents, config=config
            ):
                piece = _text_of(chunk)
                pieces.append(piece)
                if new := answer.feed(piece):
                    shown = True
                    on_text(inert(new))  # the model may copy a page's links: shown as written, as in _draft
                last = chunk
            return "".join(pieces), last

        text, last = await self.calls.call("the reader call", stream, may_retry=lambda: not shown)
        return self._draft(json_text(text, last, "the reader call"), refs)

    def _request(self, question: str, pages: Sequence[ReaderPage], images: Sequence[QueryImage], guidance: str):
        pages = list(pages)[:MAX_READER_PAGES]
        refs = {f"P{i}": p for i, p in enumerate(pages, 1)}
        parts: list[types.Part] = []
        for ref, p in refs.items():
            parts.append(types.Part.from_text(text=f"Page {ref}: {p.hit.title}, page {p.page.page}"))
            parts.append(types.Part.from_bytes(data=p.jpeg, mime_type="image/jpeg"))
        for n, img in enumerate(images, 1):
            parts.append(types.Part.from_text(text=f"Screenshot {n} attached to the question ({img.name}):"))
            parts.append(types.Part.from_bytes(data=img.data, mime_type=img.mime_type))
        parts.append(types.Part.from_text(text=f"Question: {question}"))
        # A confident Jev task adds fixed formatting instructions; the citation rules above still hold.
        instruction = READER_INSTRUCTION + (f"\n- For this question: {guidance}" if guidance else "")
        config = types.GenerateContentConfig(
            system_instruction=instruction,
            thinking_config=types.ThinkingConfig(thinking_level=READER_THINKING),
            response_mime_type="application/json",
            response_json_schema=reader_schema(list(refs) or ["P1"]),
        )
        return refs, [types.Content(role="user", parts=parts)], config

    def _draft(self, data: dict, refs: dict[str, ReaderPage]) -> Draft:
        topic = data.get("topic")
        return Draft(
            markdown=inert(str(data.get("answer") or "").strip()),
            citations=tuple(self._citation(c, refs) for c in data.get("citations") or [] if isinstance(c, dict)),
            limitations=strings(data.get("limitations")),
            topic=topic if isinstance(topic, str) and topic in TOPICS else "other",
        )

    @staticmethod
    def _citation(raw: dict, refs: dict[str, ReaderPage]) -> DraftCitation:
        ref = str(raw.get("page_ref") or "").strip().upper()
        page = refs.get(ref if ref.startswith("P") else f"P{ref}")
        quote = str(raw.get("quote") or "").strip()
        if page is None:
            return DraftCitation(doc_id=UNKNOWN_DOC, page=0, quote=quote)
        return DraftCitation(
            doc_id=page.page.doc_id, page=page.page.page, quote=quote, box=box_from_2d(raw.get("box_2d"))
        )


def _text_of(chunk: types.GenerateContentResponse) -> str:
    """A streamed chunk's text parts (not its thought parts), without the SDK's warning for chunks
    that carry none."""
    content = chunk.candidates[0].content if chunk.candidates else None
    return "".join(p.text for p in (content.parts or []) if p.text and not p.thought) if content else ""
