"""Gemini backend: Gemini Embedding 2 for pages and queries, a Gemini reader and context resolver.

Every call goes through `GeminiCalls.call`, which owns the timeout and the retries: the SDK's
aiohttp transport surfaces a timeout as a bare TimeoutError that its own HttpRetryOptions would
not retry, so the SDK's retries stay off and this module does both.
"""
from __future__ import annotations

import asyncio
import io
import json
import random
from dataclasses import replace
from typing import Any, Awaitable, Callable, Sequence, TypeVar

import aiohttp
import numpy as np
from google import genai
from google.genai import errors, types
from PIL import Image

from . import deadline
from .backends import Backend, Draft, DraftCitation, PageInput, ReaderPage, Resolution
from .config import Settings
from .context import trim_history
from .errors import BadInput, RemoteError
from .query_images import fit
from .records import Box, Exchange, QueryImage

T = TypeVar("T")

# Pinned because structured output (responseJsonSchema) and system instructions are documented
# on v1beta; the SDK's default is v1.
API_VERSION = "v1beta"

# gemini-embedding-2 takes the task in the text instead of task_type, in its documented formats.
# Every stored index depends on the page format: an index records DOCUMENT_FORMAT, and a change
# here must change that name so old indexes are refused instead of mixed with new vectors.
DOCUMENT_TEXT = "title: {title} | text: {text}"
DOCUMENT_FORMAT = "title-text-v1"
QUERY_TEXT = "task: search result | query: {text}"
PAGE_TEXT_CHARS = 6000  # the page's text layer sent with its image; the model reads 8,192 tokens
# Gemini 3: leave temperature at its default (low values can loop) and choose how much it thinks.
READER_THINKING = types.ThinkingLevel.LOW
CONTEXT_THINKING = types.ThinkingLevel.MINIMAL
MAX_RETRY_DELAY_S = 30.0  # a longer RetryInfo delay is not worth a chat user's wait

MAX_BATCH_BODY_BYTES = int(3.5 * 1024 * 1024)  # base64 image bytes per request; the API caps bodies at 4 MiB
MAX_READER_PAGES = 4
TOPICS = ("warranty", "complaint", "service", "instructions", "price", "other")
UNKNOWN_DOC = "?"  # doc_id of a citation whose page_ref names no attached page: the service drops it
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
STATUS_WORDS = {408: "request timeout", 429: "rate limited", 500: "server error", 502: "bad gateway",
                503: "unavailable", 504: "gateway timeout"}

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

CONTEXT_INSTRUCTION = """\
You rewrite the latest question of a conversation about product documents into a standalone
question that can be searched without the conversation. Use the earlier conversation only to
resolve references (it, its, that model, the second one); never add facts or answers from it.
If the question is already standalone, return it unchanged. If a reference could mean several
things and the conversation does not settle it, set needs_clarification and write a short
clarifying_question in the language of the question."""

CONTEXT_SCHEMA = {
    "type": "object",
    "properties": {
        "standalone_question": {"type": "string"},
        "needs_clarification": {"type": "boolean"},
        "clarifying_question": {"type": "string"},
    },
    "required": ["standalone_question", "needs_clarification", "clarifying_question"],
}


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


class GeminiCalls:
    """The shared client plus the timeout-and-retry policy every call goes through."""

    def __init__(self, settings: Settings):
        if not settings.gemini_api_key:
            raise BadInput("The gemini backend needs GEMINI_API_KEY or GOOGLE_API_KEY.")
        self.settings = settings
        self.client = genai.Client(
            api_key=settings.gemini_api_key,
            http_options=types.HttpOptions(base_url=settings.gemini_base_url or None, api_version=API_VERSION),
        )
        self.models = self.client.aio.models
        # every call (embedding, reading, context) shares one cap on requests in flight
        self.slots = asyncio.Semaphore(max(1, settings.embed_concurrency))
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # the backoff's clock (tests record it)

    async def aclose(self) -> None:
        await self.client.aio.aclose()

    async def call(self, what: str, make: Callable[[], Awaitable[T]]) -> T:
        """Run `make()` with a timeout; retry 408/429/5xx, timeouts and dropped connections with
        backoff (at least the delay a 429's RetryInfo asks for), within the question's budget."""
        s = self.settings
        attempts = max(1, s.retry_attempts)
        delay = s.retry_initial_delay_s
        for attempt in range(1, attempts + 1):
            timeout = s.request_timeout_s
            left = deadline.remaining()
            if left is not None:
                if left <= 0:
                    raise RemoteError(f"Gemini did not finish {what} within the {deadline.allowed():g} s "
                                      "allowed for a question. Try again in a few minutes.")
                timeout = min(timeout, left)
            wait = delay * (1 + random.uniform(0, 0.1))
            try:
                async with self.slots:
                    return await asyncio.wait_for(make(), timeout)
            except errors.APIError as e:
                if e.code not in RETRY_STATUS:
                    raise RemoteError(f"Gemini refused the {what} request ({e.code} {e.status}): {e.message}") from e
                failure = f"answering {e.code} ({STATUS_WORDS[e.code]})"
                asked = retry_delay(e)
                if asked is not None:
                    wait = max(wait, min(asked, MAX_RETRY_DELAY_S))
            except TimeoutError:  # before OSError: TimeoutError is one
                failure = f"not answering within {timeout:g} s"
            except (aiohttp.ClientConnectorError, ConnectionRefusedError) as e:
                failure = f"being unreachable ({type(e).__name__})"
            except (aiohttp.ClientError, ConnectionError) as e:
                failure = f"dropping the connection ({type(e).__name__})"
            left = deadline.remaining()
            if attempt < attempts and (left is None or wait < left):
                await self.sleep(wait)
                delay *= 2
            elif attempt < attempts:
                raise RemoteError(f"Gemini kept {failure} during {what}; no time was left for another attempt "
                                  f"within the {deadline.allowed():g} s allowed for a question. "
                                  "Try again in a few minutes.")
        raise RemoteError(f"Gemini kept {failure} during {what} after {attempts} attempts. Try again in a few minutes.")


def retry_delay(error: errors.APIError) -> float | None:
    """Seconds from the google.rpc.RetryInfo of an error ("retryDelay": "17s"), if it has one."""
    details = error.details if isinstance(error.details, dict) else {}
    for item in (details.get("error") or details).get("details") or []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("google.rpc.RetryInfo"):
            value = str(item.get("retryDelay", "")).strip()
            try:
                return max(0.0, float(value.removesuffix("s")))
            except ValueError:
                return None
    return None


def unit_rows(values: Sequence[Sequence[float]], dim: int, what: str) -> np.ndarray:
    """Float32 rows of length `dim`, L2-normalized; RemoteError on a wrong length or a zero vector."""
    if any(len(v) != dim for v in values):
        lengths = sorted({len(v) for v in values})
        raise RemoteError(f"Gemini returned {what} embeddings with {lengths} values, expected {dim} values each.")
    rows = np.asarray(values, dtype=np.float32).reshape(len(values), dim)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    if not np.all(np.isfinite(norms)) or np.any(norms == 0):
        raise RemoteError(f"Gemini returned an empty or invalid {what} embedding.")
    return rows / norms


def batches(pages: Sequence[PageInput], max_pages: int, max_bytes: int = MAX_BATCH_BODY_BYTES) -> list[list[int]]:
    """Indices of `pages` in request-sized groups: at most `max_pages`, at most `max_bytes` of base64."""
    groups: list[list[int]] = []
    size = 0
    for i, p in enumerate(pages):
        cost = 4 * -(-len(p.jpeg) // 3)
        if not groups or len(groups[-1]) >= max_pages or size + cost > max_bytes:
            groups.append([])
            size = 0
        groups[-1].append(i)
        size += cost
    return groups


def page_image(jpeg: bytes, budget: int = MAX_BATCH_BODY_BYTES * 3 // 4) -> bytes:
    """The page JPEG, re-encoded smaller only when it alone would not fit one request."""
    if len(jpeg) <= budget:
        return jpeg
    data, _ = fit(Image.open(io.BytesIO(jpeg)), jpeg, budget)
    return data


def document_text(page: PageInput) -> str:
    text = " ".join(page.page.text.split())[:PAGE_TEXT_CHARS]
    return DOCUMENT_TEXT.format(title=page.title.strip() or "none", text=text or "none")


class GeminiEmbedder:
    name = "gemini"
    document_format = DOCUMENT_FORMAT

    def __init__(self, calls: GeminiCalls):
        self.calls = calls
        self.model = calls.settings.embedding_model
        self.dim = calls.settings.embedding_dim
        self._config = types.EmbedContentConfig(output_dimensionality=self.dim)

    async def _embed(self, what: str, contents: list[types.Content]) -> np.ndarray:
        resp = await self.calls.call(
            what, lambda: self.calls.models.embed_content(model=self.model, contents=contents, config=self._config)
        )
        got = resp.embeddings or []
        if len(got) != len(contents):
            raise RemoteError(f"Gemini returned {len(got)} embeddings for {len(contents)} inputs during {what}.")
        return unit_rows([e.values or [] for e in got], self.dim, what)

    async def embed_pages(self, pages: Sequence[PageInput], done: Callable[[int], None]) -> list[np.ndarray]:
        out: list[np.ndarray | None] = [None] * len(pages)

        async def run(group: list[int]) -> None:
            contents = [
                types.Content(parts=[
                    types.Part.from_bytes(data=page_image(pages[i].jpeg), mime_type="image/jpeg"),
                    types.Part.from_text(text=document_text(pages[i])),
                ])
                for i in group
            ]
            rows = await self._embed("page embedding", contents)  # GeminiCalls caps requests in flight
            for i, row in zip(group, rows):
                out[i] = row.reshape(1, self.dim)
            done(len(group))

        tasks = [asyncio.ensure_future(run(g)) for g in batches(pages, max(1, self.calls.settings.embed_batch_pages))]
        try:
            await asyncio.gather(*tasks)
        except BaseException:
            for t in tasks:  # one failed batch stops the others instead of leaving them running
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        return out  # type: ignore[return-value]

    async def embed_query(self, text: str, images: Sequence[QueryImage]) -> np.ndarray:
        parts = [types.Part.from_text(text=QUERY_TEXT.format(text=text.strip()))] if text.strip() else []
        parts += [types.Part.from_bytes(data=img.data, mime_type=img.mime_type) for img in images]
        if not parts:
            raise BadInput("Ask a question or attach an image to search with.")
        return (await self._embed("query embedding", [types.Content(parts=parts)]))[0]


def json_answer(resp: types.GenerateContentResponse, what: str) -> dict:
    """The JSON object of a structured reply; RemoteError when blocked, empty or not JSON."""
    if isinstance(resp.parsed, dict):
        return resp.parsed
    try:
        data = json.loads(resp.text or "")
    except ValueError:
        data = None
    if not isinstance(data, dict):
        reason = ""
        finish = resp.candidates[0].finish_reason if resp.candidates else None
        if finish and finish != types.FinishReason.STOP:
            reason = f" (finish reason {finish.name})"
        elif resp.prompt_feedback and resp.prompt_feedback.block_reason:
            reason = f" (blocked: {resp.prompt_feedback.block_reason.name})"
        raise RemoteError(f"Gemini returned an unreadable answer during {what}{reason}. Try asking again.")
    return data


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

    async def read(self, question: str, pages: Sequence[ReaderPage], images: Sequence[QueryImage]) -> Draft:
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
        config = types.GenerateContentConfig(
            system_instruction=READER_INSTRUCTION,
            thinking_config=types.ThinkingConfig(thinking_level=READER_THINKING),
            response_mime_type="application/json",
            response_json_schema=reader_schema(list(refs) or ["P1"]),
        )
        s = self.calls.settings
        resp = await self.calls.call(
            "the reader call",
            lambda: self.calls.models.generate_content(
                model=s.reader_model, contents=[types.Content(role="user", parts=parts)], config=config
            ),
        )
        data = json_answer(resp, "the reader call")
        return Draft(
            markdown=str(data.get("answer") or "").strip(),
            citations=tuple(self._citation(c, refs) for c in data.get("citations") or [] if isinstance(c, dict)),
            limitations=strings(data.get("limitations")),
            topic=data.get("topic") if data.get("topic") in TOPICS else "other",
        )

    @staticmethod
    def _citation(raw: dict, refs: dict[str, ReaderPage]) -> DraftCitation:
        ref = str(raw.get("page_ref") or "").strip().upper()
        page = refs.get(ref if ref.startswith("P") else f"P{ref}")
        quote = str(raw.get("quote") or "").strip()
        if page is None:
            return DraftCitation(doc_id=UNKNOWN_DOC, page=0, quote=quote)
        return DraftCitation(doc_id=page.page.doc_id, page=page.page.page, quote=quote, box=box_from_2d(raw.get("box_2d")))


def history_text(history: Sequence[Exchange], max_exchanges: int, max_chars: int) -> str:
    """The exchanges `trim_history` keeps, oldest first, as prompt text. A newest exchange too long
    on its own is cut rather than dropped: it is the one a follow-up most likely points at."""
    kept = trim_history(history, max_exchanges, max_chars)
    if not kept and history and max_exchanges > 0:
        last = history[-1]
        room = max(0, max_chars - len(last.question) - len(last.interpreted))
        kept = [replace(last, answer=last.answer[:room] + "…")]
    return "\n\n".join(exchange_text(ex) for ex in kept)


def exchange_text(ex: Exchange) -> str:
    text = f"Question: {ex.question.strip()}\n"
    if ex.interpreted.strip() and ex.interpreted.strip() != ex.question.strip():
        text += f"(understood as: {ex.interpreted.strip()})\n"
    return text + f"Answer: {ex.answer.strip()}"


class GeminiContextResolver:
    def __init__(self, calls: GeminiCalls):
        self.calls = calls

    async def resolve(self, question: str, history: Sequence[Exchange]) -> Resolution:
        if not history:
            return Resolution(question)
        s = self.calls.settings
        earlier = history_text(history, s.history_exchanges, s.history_chars)
        prompt = f"Earlier conversation:\n{earlier}\n\nLatest question: {question}"
        config = types.GenerateContentConfig(
            system_instruction=CONTEXT_INSTRUCTION,
            thinking_config=types.ThinkingConfig(thinking_level=CONTEXT_THINKING),
            response_mime_type="application/json",
            response_json_schema=CONTEXT_SCHEMA,
        )
        resp = await self.calls.call(
            "the follow-up question rewrite",
            lambda: self.calls.models.generate_content(model=s.context_model, contents=prompt, config=config),
        )
        data = json_answer(resp, "the follow-up question rewrite")
        clarify = str(data.get("clarifying_question") or "").strip()
        if data.get("needs_clarification") is True and clarify:
            return Resolution(question, clarify=clarify)
        return Resolution(str(data.get("standalone_question") or "").strip() or question)


def gemini_backend(settings: Settings) -> Backend:
    calls = GeminiCalls(settings)
    return Backend(
        name="gemini",
        embedder=GeminiEmbedder(calls),
        reader=GeminiReader(calls),
        resolver=GeminiContextResolver(calls),
        lexical=False,
        ocr_queries=False,
    )
