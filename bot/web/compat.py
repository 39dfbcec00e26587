"""The official PixelRAG server's routes, answered from pixelrag's index, so that clients written for it
(pixelrag-langchain, agents' PixelRAG tools) work unchanged against a team's own documents:

- POST /search  {"queries": [{"text", "image"}], "n_docs", "include_images"} ->
                {"results": [{"hits": [{"score", "vector_id", "article_id", "tile_index", "chunk_index",
                 "y_offset", "tile_height", "path", "url", "article_pages", "image_base64"}]}]}
- GET  /tile/{article_id}/{tile_index}/{chunk_index}   a hit's image
- GET  /status, /health

A "tile" here is a whole page: article_id is the document (its 16-hex id as a number), tile_index the
page counted from 0, chunk_index always 0; "url" is the document's title, as the official server puts an
article's title there. Each hit adds pixelrag's own "document", "page", "title" and "view" (the viewer
link); clients keep fields they do not know. Requests carry an API key like /api/ (docs/api.md), each
query counts as a question of the key's, and errors come as {"detail": "..."}, as that server sends them.
"""

from __future__ import annotations

import base64
import io

from aiohttp import web
from PIL import Image

from core import BadInput

from .for_agents import MAX_TOP, ForAgents, decoded_image

MAX_QUERIES = 16  # one request's queries, each a search of its own
MAX_N_DOCS = 1000  # the official server's bound; pixelrag returns at most MAX_TOP of them


class Compat:
    def __init__(self, agents: ForAgents):
        self.agents = agents
        self.service = agents.service

    def add_routes(self, app: web.Application, keyed) -> None:
        """`keyed` wraps a handler with the API's key check (api.Api._keyed), errors under "detail"."""
        app.router.add_post("/search", keyed(self.search, "detail"))
        app.router.add_get("/tile/{article_id}/{tile_index}/{chunk_index}", keyed(self.tile, "detail"))
        app.router.add_get("/status", keyed(self.status, "detail"))
        app.router.add_get("/health", self.health)

    async def search(self, request: web.Request, name: str, scope: str) -> web.Response:
        queries, n_docs, include_images = await _search_body(request, self.service.settings.max_image_bytes)
        documents = {d.doc_id: d for d in await self.service.documents(scope)}
        results = []
        for text, images in queries:
            found = await self.agents.search(name, scope, text, images, with_images=True, top=min(n_docs, MAX_TOP))
            hits = []
            for item in found:
                jpeg, document = item.pop("jpeg"), documents.get(item["document"])
                if jpeg is None or document is None:
                    continue  # removed between the ranking and now
                hits.append(_hit(item, jpeg, document.page_count, include_images))
            results.append({"hits": hits})
        return web.json_response({"results": results})

    async def tile(self, request: web.Request, name: str, scope: str) -> web.Response:
        try:
            doc_id = f"{int(request.match_info['article_id']):016x}"
            page = int(request.match_info["tile_index"]) + 1
            chunk = int(request.match_info["chunk_index"])
        except ValueError:
            raise BadInput("article_id, tile_index and chunk_index are whole numbers.") from None
        jpeg = await self.service.page_jpeg(scope, doc_id, page) if chunk == 0 and len(doc_id) == 16 else None
        if jpeg is None:
            return web.json_response({"detail": "Tile not found"}, status=404)
        return web.Response(body=jpeg, content_type="image/jpeg", headers={"Cache-Control": "no-store"})

    async def status(self, request: web.Request, name: str, scope: str) -> web.Response:
        status = await self.service.status(scope)
        built = status.get("built_with") or {}
        return web.json_response(
            {
                "total_vectors": status.get("pages", 0),  # one vector per page
                "dimension": built.get("dim", 0),
                "nlist": 0,  # exact search: no inverted lists to probe
                "nprobe": 0,
                "model": built.get("model", ""),
                "snapshot": status.get("snapshot"),
                "documents": status.get("documents", 0),
                "collection": scope,
            }
        )

    async def health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "ok"})


async def _search_body(request: web.Request, max_image_bytes: int) -> tuple[list[tuple[str, list]], int, bool]:
    """((text, images) per query, n_docs, include_images); BadInput names what does not fit the schema."""
    try:
        body = await request.json()
    except (ValueError, UnicodeDecodeError):
        raise BadInput('Send a JSON body: {"queries": [{"text": "…"}], "n_docs": 5}.') from None
    if not isinstance(body, dict) or not isinstance(body.get("queries"), list) or not body["queries"]:
        raise BadInput('"queries" must be a list of queries: [{"text": "…"}] (an "image" too, or instead).')
    if len(body["queries"]) > MAX_QUERIES:
        raise BadInput(f"At most {MAX_QUERIES} queries in one request.")
    n_docs = body.get("n_docs", 10)
    if type(n_docs) is not int or not 1 <= n_docs <= MAX_N_DOCS:
        raise BadInput(f'"n_docs" must be a whole number from 1 to {MAX_N_DOCS}.')
    queries = []
    for query in body["queries"]:
        if not isinstance(query, dict):
            raise BadInput('Each query is an object: {"text": "…"}.')
        if query.get("embedding") is not None:
            raise BadInput("pixelrag embeds queries itself: send text, an image, or both, not an embedding.")
        text = query.get("text") or ""
        if not isinstance(text, str):
            raise BadInput('A query\'s "text" must be text.')
        images = [decoded_image(query["image"], max_image_bytes)] if query.get("image") else []
        if not text.strip() and not images:
            raise BadInput("Query must have text, image, or both")
        queries.append((text.strip(), images))
    return queries, n_docs, bool(body.get("include_images"))


def _hit(item: dict, jpeg: bytes, page_count: int, include_image: bool) -> dict:
    width, height = Image.open(io.BytesIO(jpeg)).size  # reads the header only
    doc_id, page = item["document"], item["page"]
    return {
        "score": item["score"],
        "vector_id": f"{doc_id}:{page}",
        "article_id": int(doc_id, 16),
        "tile_index": page - 1,
        "chunk_index": 0,
        "y_offset": 0,
        "tile_height": height,
        "path": f"{doc_id}/page-{page}.jpg",
        "url": item["title"],
        "article_pages": ",".join(f"{i}:0-0" for i in range(page_count)),
        "image_base64": base64.b64encode(jpeg).decode() if include_image else None,
        "document": doc_id,
        "page": page,
        "title": item["title"],
        "view": item["view"],
        "width": width,
    }
