"""Gemini Embedding 2 for pages (image + text layer) and queries (text + screenshots)."""

from __future__ import annotations

import asyncio
import io
from collections.abc import Callable, Sequence

import numpy as np
from google.genai import types
from PIL import Image

from ...answering.query_images import fit
from ...errors import BadInput, RemoteError
from ...records import PageInput, QueryImage
from .calls import GeminiCalls

# gemini-embedding-2 takes the task in the text instead of task_type, in its documented formats.
# Every stored index depends on the page format: an index records DOCUMENT_FORMAT, and a change
# here must change that name so old indexes are refused instead of mixed with new vectors.
DOCUMENT_TEXT = "title: {title} | text: {text}"
DOCUMENT_FORMAT = "title-text-v1"
QUERY_TEXT = "task: search result | query: {text}"
PAGE_TEXT_CHARS = 6000  # the page's text layer sent with its image; the model reads 8,192 tokens
MAX_BATCH_BODY_BYTES = int(3.5 * 1024 * 1024)  # base64 image bytes per request; the API caps bodies at 4 MiB


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
        self.pages_in_flight = calls.settings.embed_batch_pages * calls.settings.embed_concurrency
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
                types.Content(
                    parts=[
                        types.Part.from_bytes(data=page_image(pages[i].jpeg), mime_type="image/jpeg"),
                        types.Part.from_text(text=document_text(pages[i])),
                    ]
                )
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
