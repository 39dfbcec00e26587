"""A loopback fake of the Gemini REST API (aiohttp.web on 127.0.0.1, a free port) for offline tests.

Start it and point Settings at it:

    async with FakeGemini() as fake:
        settings = fake.settings(embedding_dim=256)   # backend="gemini", key and base URL set
        backend = gemini_backend(settings)

It answers `POST /{v1|v1beta}/models/{model}:batchEmbedContents`, `:generateContent` and
`:streamGenerateContent?alt=sse` for the models in `models` (else 404, as for a model the key may not use),
`GET /{v1|v1beta}/models/{model}` (models.get), accepting camelCase and snake_case bodies, and replies with
API-shaped JSON; the stream as the API sends it: server-sent events, one `data: {response}` per
chunk, each chunk a GenerateContentResponse holding the next piece of the text, the last one with
finishReason STOP and usageMetadata (what google-genai's generate_content_stream parses).

Embeddings are deterministic and meaningful (see `embed_content`): a hashed bag of words over the
text parts, plus one hashed token per image (its sha256) and, optionally, words the test says
the image shows (`describe_image`). A page is embedded with the text "title, page N", so a
query naming the same words — or attaching the same image bytes — retrieves that page. The
query task prefix "task: … | query:" is stripped before hashing.

generateContent replies, in order of precedence: the `replies` queue (a str is sent as the
model's text, a dict as JSON text, a `Raw` as the whole response body), then `handler(body)`,
then a default that follows the request's response schema: a context-resolver answer
(standalone_question = the latest question) or a reader answer citing P1 with its label as quote.

It refuses what the API refuses, with the API's 400 INVALID_ARGUMENT: request bodies over 4 MiB
(embeddings) or 20 MB (generation), more than 100 requests per batchEmbedContents, a request
whose model is not the one in the URL, more than 6 images per embedding content, images other than
PNG/JPEG in embeddings, inline data whose bytes do not match its MIME type, an
outputDimensionality outside 128-3072, embedding text over 8,192 tokens, and thinking_budget or
an unknown thinking level on Gemini 3 models. A 429 carries google.rpc.RetryInfo with
`retry_delay` (a Duration string such as "2s").

Knobs: `latency` (seconds per request), `gate` (an asyncio.Event every request waits for),
for streams `first_token_s` (time to the first chunk), `chunk_chars` (text per chunk), `hold` (an
asyncio.Event the stream waits for after its first chunk), `break_after` (the connection drops
after that many chunks: a failure in the middle of the answer),
`script(endpoint, 429, 500, Hang(5))` (one step per request, then normal service), `fail_always`
(a status for every request), `retry_delay`, and the records `requests` (Counter per endpoint),
`embed_sizes` (contents per embed request), `bodies` (every received request), `max_in_flight`.

One module on purpose (longer than most): the rules the API enforces are read best side by side.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import re
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from aiohttp import web

from core.config import Settings

EMBED = "batchEmbedContents"
GENERATE = "generateContent"
STREAM = "streamGenerateContent"
DEFAULT_DIM = 3072
API_KEY = "fake-test-key"
STATUS_NAMES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    408: "DEADLINE_EXCEEDED",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}
# The labels of the two documented text formats; only the labels are dropped before hashing, the
# title and text words stay.
TASK_PREFIX = re.compile(r"^\s*task:[^|]*\|\s*query:|^\s*title:|\|\s*text:", re.IGNORECASE)
MAX_EMBED_BODY = 4 * 1024 * 1024
MAX_GENERATE_BODY = 20 * 1024 * 1024
MAX_BATCH = 100
MAX_IMAGES_PER_CONTENT = 6
MAX_EMBED_TOKENS = 8192
EMBED_MIME = {"image/png", "image/jpeg"}
MAGIC = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/webp": (b"RIFF",),
    "application/pdf": (b"%PDF-",),
}
THINKING_LEVELS = {"MINIMAL", "LOW", "MEDIUM", "HIGH", "XHIGH"}
# The models the API offers and their supportedGenerationMethods (models.get); streaming is generateContent's.
MODELS = {
    "gemini-embedding-2": ("embedContent", EMBED, "countTextTokens"),
    "gemini-3.5-flash": (GENERATE, "countTokens", "createCachedContent", "batchGenerateContent"),
    "gemini-3.5-flash-lite": (GENERATE, "countTokens", "createCachedContent", "batchGenerateContent"),
}


@dataclass(frozen=True)
class Hang:
    """A script step: answer only after `seconds` (longer than the client's timeout)."""

    seconds: float = 30.0


@dataclass(frozen=True)
class Raw:
    """A reply sent as the whole generateContent response body (e.g. a blocked prompt)."""

    body: dict
    status: int = 200


@dataclass(frozen=True)
class Received:
    endpoint: str  # EMBED or GENERATE
    model: str
    version: str  # "v1" or "v1beta"
    body: dict


def pick(d: dict, *names: str, default: Any = None) -> Any:
    """The first of `names` present in `d` (the SDK sends camelCase or snake_case)."""
    for name in names:
        if name in d:
            return d[name]
    return default


def decode_b64(data: str) -> bytes:
    data = data.replace("-", "+").replace("_", "/")
    return base64.b64decode(data + "=" * (-len(data) % 4))


def words(text: str) -> list[str]:
    return re.findall(r"\w+", TASK_PREFIX.sub("", text).lower())


def content_parts(content: dict) -> tuple[list[str], list[bytes]]:
    """The texts and the decoded inline images of one Content."""
    texts, images = [], []
    for part in content.get("parts") or []:
        if "text" in part:
            texts.append(part["text"])
        blob = pick(part, "inline_data", "inlineData")
        if blob:
            images.append(decode_b64(blob["data"]))
    return texts, images


def hashed_vector(tokens: list[str], dim: int) -> list[float]:
    """Each token adds ±1 at two hashed positions; the sum is L2-normalized."""
    v = np.zeros(dim, dtype=np.float64)
    for token in tokens or ["<empty>"]:
        h = hashlib.blake2b(token.encode(), digest_size=16).digest()
        for k in (0, 8):
            n = int.from_bytes(h[k : k + 8], "little")
            v[n % dim] += 1.0 if (n >> 63) & 1 else -1.0
    if not v.any():  # every token cancelled out: still a valid vector
        v[0] = 1.0
    return (v / np.linalg.norm(v)).tolist()


def embed_content(content: dict, dim: int, describe_image: Callable[[bytes], str] | None = None) -> list[float]:
    """The fake embedding of one Content: words of its texts, one token per image, described words."""
    texts, images = content_parts(content)
    tokens = [w for t in texts for w in words(t)]
    for data in images:
        tokens.append("image:" + hashlib.sha256(data).hexdigest())
        if describe_image:
            tokens += words(describe_image(data))
    return hashed_vector(tokens, dim)


def error_response(code: int, message: str, retry_delay: str | None = None) -> web.Response:
    status = STATUS_NAMES.get(code, "UNKNOWN")
    error = {"code": code, "status": status, "message": message}
    if code == 429 and retry_delay:
        error["details"] = [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{"quotaMetric": "requests"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay},
        ]
    return web.json_response({"error": error}, status=code)


def invalid(message: str) -> web.Response:
    return error_response(400, message)


def tokens(text: str) -> int:
    """A generous token estimate (the real tokenizer gives fewer for plain prose)."""
    return len(re.findall(r"\w+|[^\w\s]", text))


def blob_problem(blob: dict, allowed: set[str] | None) -> str | None:
    """Why the API would refuse one inline_data part, or None."""
    mime = pick(blob, "mime_type", "mimeType", default="")
    if allowed is not None and mime not in allowed:
        return f"Unsupported MIME type: {mime}"
    try:
        data = decode_b64(blob.get("data") or "")
    except ValueError:
        return "Invalid value at 'inline_data.data': not base64"
    magic = MAGIC.get(mime)
    if magic is None or not data.startswith(magic):
        return f"Unable to process input image: the data is not {mime or 'of the declared type'}."
    return None


def embed_problem(body: dict, model: str) -> str | None:
    requests = body.get("requests")
    if not isinstance(requests, list) or not requests:
        return "* BatchEmbedContentsRequest.requests: requests must not be empty"
    if len(requests) > MAX_BATCH:
        return f"* BatchEmbedContentsRequest.requests: at most {MAX_BATCH} requests can be in one batch"
    for req in requests:
        if req.get("model") not in (f"models/{model}", model):
            return f"Model in request ({req.get('model')}) does not match the model in the URL ({model})."
        dim = pick(req, "outputDimensionality", "output_dimensionality")
        if dim is not None and not 128 <= int(dim) <= 3072:
            return f"outputDimensionality must be between 128 and 3072, got {dim}."
        parts = (req.get("content") or {}).get("parts") or []
        blobs = [pick(part, "inline_data", "inlineData") for part in parts if pick(part, "inline_data", "inlineData")]
        if len(blobs) > MAX_IMAGES_PER_CONTENT:
            return f"At most {MAX_IMAGES_PER_CONTENT} images are supported per content, got {len(blobs)}."
        for blob in blobs:
            if problem := blob_problem(blob, EMBED_MIME):
                return problem
        text = " ".join(part.get("text", "") for part in parts)
        if tokens(text) > MAX_EMBED_TOKENS:
            return (
                f"The input token count ({tokens(text)}) exceeds the maximum number of tokens allowed "
                f"({MAX_EMBED_TOKENS})."
            )
    return None


def generate_problem(body: dict, model: str) -> str | None:
    for content in body.get("contents") or []:
        for part in content.get("parts") or []:
            blob = pick(part, "inline_data", "inlineData")
            if blob and (problem := blob_problem(blob, None)):
                return problem
    config = pick(body, "generationConfig", "generation_config", default={}) or {}
    thinking = pick(config, "thinkingConfig", "thinking_config", default={}) or {}
    if model.startswith("gemini-3"):
        if pick(thinking, "thinkingBudget", "thinking_budget") is not None:
            return "thinking_budget is not supported by this model; use thinking_level."
        level = pick(thinking, "thinkingLevel", "thinking_level")
        if level is not None and str(level).upper() not in THINKING_LEVELS:
            return f"Invalid thinking level {level}."
    return None


def model_response(text: str) -> dict:
    return {
        "candidates": [{"content": {"role": "model", "parts": [{"text": text}]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 10, "totalTokenCount": 20},
        "modelVersion": "fake",
    }


def default_reply(body: dict) -> dict:
    """A valid structured answer for the schema the request asked for."""
    texts = [t for c in body.get("contents") or [] for t in content_parts(c)[0]]
    prompt = "\n".join(texts)
    config = pick(body, "generationConfig", "generation_config", default={})
    schema = pick(config, "responseJsonSchema", "response_json_schema", "responseSchema", "response_schema", default={})
    if "standalone_question" in (schema.get("properties") or {}):
        latest = prompt.rsplit("Latest question:", 1)[-1].strip()
        return {"standalone_question": latest, "needs_clarification": False, "clarifying_question": ""}
    label = re.search(r"Page P1: (.+)", prompt)
    citations = [{"page_ref": "P1", "quote": label.group(1).strip(), "box_2d": [100, 100, 200, 500]}] if label else []
    answer = "The answer is on page P1." if label else "The attached pages do not contain the answer."
    return {"answer": answer, "citations": citations, "limitations": [], "topic": "other"}


class FakeGemini:
    def __init__(self, *, latency: float = 0.0):
        self.latency = latency
        self.fail_always: int | None = None
        self.retry_delay = "0.05s"  # the RetryInfo of 429 answers
        self.steps: dict[str, deque] = {EMBED: deque(), GENERATE: deque(), STREAM: deque()}
        self.first_token_s = 0.0
        self.chunk_chars = 40
        self.hold: asyncio.Event | None = None
        self.break_after: int | None = None
        self.chunks_sent = 0  # stream chunks written, over all streams
        self.replies: deque[str | dict | Raw] = deque()
        self.handler: Callable[[dict], str | dict | Raw] | None = None
        self.describe_image: Callable[[bytes], str] | None = None
        self.requests: Counter[str] = Counter()
        self.embed_sizes: list[int] = []
        self.bodies: list[Received] = []
        self.refused: list[str] = []  # endpoints of requests refused with 400 for breaking the API's rules
        self.models = dict(MODELS)  # what this key may use
        self.in_flight = 0
        self.max_in_flight = 0
        self.gate: asyncio.Event | None = None
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()

    # -- lifecycle ----------------------------------------------------------------------------
    async def start(self) -> FakeGemini:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/{version}/models/{call}", self._handle)
        app.router.add_get("/{version}/models/{model}", self._model)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # port 0: ask the socket which one it got
        self.url = f"http://127.0.0.1:{port}"
        return self

    async def close(self) -> None:
        self._closing.set()  # ends pending hangs so shutdown is quick
        if self._runner:
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> FakeGemini:
        return await self.start()

    async def __aexit__(self, *exc) -> None:
        await self.close()

    def settings(self, base: Settings | None = None, **changes) -> Settings:
        """Settings for the gemini backend pointed at this fake."""
        return (base or Settings()).with_(backend="gemini", gemini_api_key=API_KEY, gemini_base_url=self.url, **changes)

    # -- knobs ----------------------------------------------------------------------------------
    def script(self, endpoint: str, *steps: int | Hang) -> None:
        """Queue one step per coming request to `endpoint`: an int answers that HTTP error."""
        self.steps[endpoint].extend(steps)

    def generate_bodies(self) -> list[dict]:
        return [r.body for r in self.bodies if r.endpoint in (GENERATE, STREAM)]

    # -- serving --------------------------------------------------------------------------------
    async def _handle(self, request: web.Request) -> web.StreamResponse:
        model, _, endpoint = request.match_info["call"].rpartition(":")
        version = request.match_info["version"]
        if version not in ("v1", "v1beta") or endpoint not in (EMBED, GENERATE, STREAM):
            return error_response(404, f"Unknown method {request.path}")
        if endpoint == STREAM and request.query.get("alt") != "sse":  # only the SSE form (what google-genai asks for)
            return error_response(404, f"Unknown method {request.path}")
        if request.headers.get("x-goog-api-key") != API_KEY:
            return error_response(401, "API key not valid. Please pass a valid API key.")
        if (GENERATE if endpoint == STREAM else endpoint) not in self.models.get(model, ()):
            return error_response(
                404,
                f"models/{model} is not found for API version {version}, or is not "
                f"supported for {endpoint}. Call ListModels to see the list of available "
                "models and their supported methods.",
            )
        raw = await request.read()
        limit = MAX_EMBED_BODY if endpoint == EMBED else MAX_GENERATE_BODY
        if len(raw) > limit:
            self.refused.append(endpoint)
            return invalid(f"Request payload size exceeds the limit: {limit} bytes.")
        body = json.loads(raw)
        problem = embed_problem(body, model) if endpoint == EMBED else generate_problem(body, model)
        if problem:
            self.refused.append(endpoint)
            return invalid(problem)
        self.requests[endpoint] += 1
        self.bodies.append(Received(endpoint, model, version, body))
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            if self.gate is not None:
                await self.gate.wait()
            step = self.steps[endpoint].popleft() if self.steps[endpoint] else None
            if isinstance(step, Hang):
                await self._sleep(step.seconds)
            elif step is not None:
                return error_response(step, f"Scripted failure {step}.", self.retry_delay)
            if self.fail_always is not None:
                return error_response(self.fail_always, f"Persistent failure {self.fail_always}.", self.retry_delay)
            if self.latency:
                await self._sleep(self.latency)
            if endpoint == STREAM:
                return await self._stream(request, body)
            return self._embed(body) if endpoint == EMBED else self._generate(body)
        finally:
            self.in_flight -= 1

    async def _model(self, request: web.Request) -> web.Response:
        """models.get: a model's resource, for a key that may use it."""
        model, version = request.match_info["model"], request.match_info["version"]
        if version not in ("v1", "v1beta"):
            return error_response(404, f"Unknown method {request.path}")
        if request.headers.get("x-goog-api-key") != API_KEY:
            return error_response(401, "API key not valid. Please pass a valid API key.")
        if model not in self.models:
            return error_response(404, f"models/{model} is not found for API version {version}.")
        return web.json_response(
            {
                "name": f"models/{model}",
                "version": "001",
                "displayName": model,
                "inputTokenLimit": 1_048_576,
                "outputTokenLimit": 65_536,
                "supportedGenerationMethods": list(self.models[model]),
            }
        )

    async def _sleep(self, seconds: float) -> None:
        try:
            await asyncio.wait_for(self._closing.wait(), seconds)
        except TimeoutError:
            pass

    def _embed(self, body: dict) -> web.Response:
        requests = body.get("requests") or []
        self.embed_sizes.append(len(requests))
        out = []
        for req in requests:
            dim = pick(req, "outputDimensionality", "output_dimensionality")
            dim = (
                dim
                or pick(pick(req, "config", default={}), "outputDimensionality", "output_dimensionality")
                or DEFAULT_DIM
            )
            out.append({"values": embed_content(req.get("content") or {}, int(dim), self.describe_image)})
        return web.json_response({"embeddings": out})

    def _reply(self, body: dict) -> str | Raw:
        reply = self.replies.popleft() if self.replies else (self.handler or default_reply)(body)
        return reply if isinstance(reply, (str, Raw)) else json.dumps(reply)

    def _generate(self, body: dict) -> web.Response:
        reply = self._reply(body)
        if isinstance(reply, Raw):
            return web.json_response(reply.body, status=reply.status)
        return web.json_response(model_response(reply))

    async def _stream(self, request: web.Request, body: dict) -> web.StreamResponse:
        reply = self._reply(body)
        if isinstance(reply, Raw):
            return web.json_response(reply.body, status=reply.status)
        pieces = [reply[i : i + self.chunk_chars] for i in range(0, len(reply), self.chunk_chars)] or [""]
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        response.enable_chunked_encoding()
        await response.prepare(request)
        if self.first_token_s:
            await self._sleep(self.first_token_s)
        for n, piece in enumerate(pieces):
            if self.break_after is not None and n >= self.break_after:
                request.transport.close()  # mid-answer: the client sees the body end unfinished
                return response
            chunk = {
                "candidates": [{"content": {"role": "model", "parts": [{"text": piece}]}, "index": 0}],
                "modelVersion": "fake",
            }
            if n == len(pieces) - 1:
                chunk = model_response(piece)
            await response.write(b"data: " + json.dumps(chunk).encode() + b"\r\n\r\n")
            self.chunks_sent += 1
            if n == 0 and self.hold is not None:
                await self.hold.wait()
        await response.write_eof()
        return response
