"""A loopback fake of TypeSafe's System One API (aiohttp.web on 127.0.0.1, a free port) for offline tests.
The real `typesafe-sdk` client talks to it: point Settings' typesafe_base_url at `fake.url`.

    async with FakeTypeSafe() as fake:
        settings = fake.settings(base)   # jev="rerank", key, base URL
        fake.scores[("Manual", 3)] = 0.9  # the relevance noul for that page; others get `default_score`

It answers `POST /v1/systemone` (JSON, or multipart/form-data whose first part `request` is the JSON
body and whose other parts are the images) and `GET /v1/models`, and refuses what the service refuses.
Where each rule comes from:

- typesafe-sdk 0.7.5 source (typesafe_sdk/_core/...): the paths (constants.py); `Authorization: Bearer
  <key>` (transport.py); the multipart layout, assets as {"type": "image", "part": "asset-N"} and "each
  part claimed by exactly one asset" (endpoints.py); references `<image:32 hex>` (assets.py); the request
  schema: model and state required, questions non-empty, a noul needs instructions or a described outcome,
  a choice needs non-empty criteria, assets non-empty when present (_schemas/models.py, questions.py);
  422 bodies as {"detail": [{loc, msg, type}]} and other errors as {"error": {"message"}} (errors.py);
  the response {model, answers, usage} (_schemas/models.py); retry-after-ms on 429 (retry.py);
  model names are the ones GET /v1/models lists (_schemas/models.py: SystemOneRequest.model).
- Issue 13 / docs/platform notes: image questions need the header `TypeSafe-Danger-Zone-Images: true`;
  the models jev-1.14.0 (pinned) and jev-latest (an older alias).
- Our assumption, not documented anywhere we could read: images smaller than core.jev.thumbnails.MIN_SIDE
  are refused. Neither the SDK nor the docs state a maximum image size or question count, so none is
  enforced; a request whose body is zstd-encoded is refused with 415 here (the real service accepts zstd;
  the SDK sends it only with the `zstd` extra, which this project does not install).

Knobs: `scores` / `default_score` / `scorer(name, instructions, images) -> float`, `choices`
({"topic": ("warranty", 0.9)}), `mangle(answers) -> answers` (malformed decisions), `script(*steps)`
(one step per request: an int answers that status, `Hang()` holds the request until the fake closes),
`fail_always`, `retry_after_ms`, `gate` (an asyncio.Event every request waits for). Records:
`received` (accepted requests), `refused` (status, message) and `attempts` (every POST).
"""

from __future__ import annotations

import asyncio
import base64
import io
import json
import re
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from PIL import Image

from core.config import Settings
from core.jev.thumbnails import MIN_SIDE

API_KEY = "fake-typesafe-key"
IMAGES_HEADER = "TypeSafe-Danger-Zone-Images"
MODELS = {"jev-1.14.0": "jev-1.14.0", "jev-latest": "jev-1.13.2"}  # name -> the model that answers
REFERENCE = re.compile(r"<image:[0-9a-f]{32}>")
SIGNATURES = {b"\x89PNG\r\n\x1a\n": "PNG", b"\xff\xd8\xff": "JPEG"}
QUESTION_TYPES = {"noul", "choice", "score", "box"}


@dataclass(frozen=True)
class Hang:
    """A script step: hold the request until the fake closes (the client times out first)."""


@dataclass
class Received:
    headers: dict[str, str]
    body: dict
    images: dict[str, bytes]  # asset key -> image bytes
    question_images: dict[str, list[bytes]] = field(default_factory=dict)  # question name -> its images
    state_images: list[bytes] = field(default_factory=list)


class Refusal(Exception):
    def __init__(self, status: int, message: str, loc: list | None = None):
        super().__init__(message)
        self.status, self.message, self.loc = status, message, loc


def references(value: Any) -> list[str]:
    """Every asset reference inside strings of a JSON value, in order."""
    if isinstance(value, str):
        return REFERENCE.findall(value)
    if isinstance(value, dict):
        return [r for v in value.values() for r in references(v)]
    if isinstance(value, list):
        return [r for v in value for r in references(v)]
    return []


def check_schema(body: Any) -> None:
    """SystemOneRequest as the SDK's generated schema states it."""
    if not isinstance(body, dict):
        raise Refusal(422, "Input should be an object", ["body"])
    if not isinstance(body.get("model"), str):
        raise Refusal(422, "Field required" if "model" not in body else "Input should be a string", ["body", "model"])
    if "state" not in body or not isinstance(body["state"], (str, dict, list)):
        raise Refusal(422, "Field required", ["body", "state"])
    questions = body.get("questions")
    if not isinstance(questions, dict) or not questions:
        raise Refusal(422, "Questions should have at least 1 item", ["body", "questions"])
    for name, q in questions.items():
        loc = ["body", "questions", name]
        if not isinstance(q, dict) or q.get("type") not in QUESTION_TYPES:
            raise Refusal(422, "Input tag does not match any of the expected tags: noul, choice, score, box", loc)
        if q["type"] == "noul":
            criteria = q.get("criteria")
            if criteria is not None and (not isinstance(criteria, dict) or set(criteria) - {"true", "false"}):
                raise Refusal(422, "criteria should be an object with true and false", loc + ["criteria"])
            if q.get("instructions") is None and not any(v is not None for v in (criteria or {}).values()):
                raise Refusal(422, "A noul needs instructions or a described outcome", loc)
        if q["type"] in ("choice", "score"):
            criteria = q.get("criteria")
            kind = dict if q["type"] == "choice" else list
            if not isinstance(criteria, kind) or not criteria:
                raise Refusal(422, "criteria should have at least 1 item", loc + ["criteria"])
    assets = body.get("assets")
    if assets is not None:
        if not isinstance(assets, dict) or not assets:
            raise Refusal(422, "assets should have at least 1 item", ["body", "assets"])
        for key, asset in assets.items():
            if not isinstance(asset, dict) or asset.get("type", "image") != "image":
                raise Refusal(422, "An asset should be an image object", ["body", "assets", key])
            if not asset.get("part") and not (
                asset.get("data_base64") and asset.get("format") in ("png", "jpg", "jpeg")
            ):
                raise Refusal(422, "An asset needs part, or data_base64 with format", ["body", "assets", key])


def check_image(key: str, data: bytes) -> None:
    if not any(data.startswith(sig) for sig in SIGNATURES):
        raise Refusal(422, f"Asset {key} is not a PNG or JPEG image", ["body", "assets", key])
    try:
        with Image.open(io.BytesIO(data)) as img:
            img.load()
            width, height = img.size
    except Exception:
        raise Refusal(422, f"Asset {key} could not be decoded", ["body", "assets", key]) from None
    if min(width, height) < MIN_SIDE:
        raise Refusal(
            422,
            f"Asset {key} is {width}x{height}; images must be at least {MIN_SIDE} px on each side",
            ["body", "assets", key],
        )


class FakeTypeSafe:
    def __init__(self) -> None:
        self.scores: dict[tuple[str, int], float] = {}
        self.default_score = 0.5
        self.scorer: Callable[[str, Any, list[bytes]], float] | None = None
        self.choices: dict[str, tuple[str, float]] = {}
        self.mangle: Callable[[dict], dict] | None = None
        self.steps: deque = deque()
        self.fail_always: int | None = None
        self.retry_after_ms = 5
        self.gate: asyncio.Event | None = None
        self.received: list[Received] = []
        self.refused: list[tuple[int, str]] = []
        self.attempts = 0
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._closing = asyncio.Event()

    # -- lifecycle ----------------------------------------------------------------------------
    async def __aenter__(self) -> FakeTypeSafe:
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/v1/systemone", self._system_one)
        app.router.add_get("/v1/models", self._models)
        self._runner = web.AppRunner(app, handler_cancellation=True, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
        return self

    async def __aexit__(self, *exc) -> None:
        self._closing.set()
        if self._runner:
            await self._runner.cleanup()
            self._runner = None

    def settings(self, base: Settings | None = None, **changes) -> Settings:
        """Settings with the selector on and pointed at this fake (fast retries for tests)."""
        changes = {
            "jev": "rerank",
            "typesafe_api_key": API_KEY,
            "typesafe_base_url": self.url,
            "retry_initial_delay_s": 0.01,
            **changes,
        }
        return (base or Settings()).with_(**changes)

    def script(self, *steps: int | Hang) -> None:
        self.steps.extend(steps)

    # -- serving --------------------------------------------------------------------------------
    async def _models(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != f"Bearer {API_KEY}":
            return self._error(401, "Invalid API key.")
        return web.json_response(
            {"models": [{"name": n, "description": "System one model.", "release_date": "2026-09-15"} for n in MODELS]}
        )

    async def _system_one(self, request: web.Request) -> web.StreamResponse:
        self.attempts += 1
        try:
            received = await self._accept(request)
        except Refusal as r:
            self.refused.append((r.status, r.message))
            return self._error(r.status, r.message, r.loc)
        if self.gate is not None:
            await self.gate.wait()
        step = self.steps.popleft() if self.steps else None
        if isinstance(step, Hang):
            await self._closing.wait()
            return self._error(503, "Shutting down.")
        status = step if step is not None else self.fail_always
        if status is not None:
            headers = {"retry-after-ms": str(self.retry_after_ms)} if status == 429 else {}
            return self._error(status, f"Scripted failure {status}.", headers=headers)
        self.received.append(received)
        answers = self._answers(received)
        if self.mangle:
            answers = self.mangle(answers)
        body = {
            "model": MODELS[received.body["model"]],
            "answers": answers,
            "usage": {"input_tokens": 100 * len(received.images) + 50, "output_tokens": len(answers)},
        }
        return web.json_response(body, headers={"x-typesafe-request-id": f"req-{len(self.received)}"})

    async def _accept(self, request: web.Request) -> Received:
        if request.headers.get("Authorization") != f"Bearer {API_KEY}":
            raise Refusal(401, "Invalid API key.")
        if request.headers.get("Content-Encoding"):
            raise Refusal(415, f"Content-Encoding {request.headers['Content-Encoding']} is not supported by this fake.")
        parts: dict[str, bytes] = {}
        if request.content_type == "multipart/form-data":
            reader = await request.multipart()
            first = await reader.next()
            if first is None or first.name != "request":
                raise Refusal(422, "The first part of a multipart request must be named request", ["body"])
            raw = await first.read()
            while (part := await reader.next()) is not None:
                if part.name in parts:
                    raise Refusal(422, f"Part {part.name} appears twice", ["body"])
                parts[part.name] = bytes(await part.read())
        elif request.content_type == "application/json":
            raw = await request.read()
        else:
            raise Refusal(415, f"Unsupported content type {request.content_type}.")
        try:
            body = json.loads(raw)
        except ValueError:
            raise Refusal(422, "JSON decode error", ["body"]) from None
        check_schema(body)
        if body["model"] not in MODELS:
            raise Refusal(404, f"Unknown model {body['model']!r}; GET /v1/models lists the available names.")
        images = self._assets(body, parts)
        if images and request.headers.get(IMAGES_HEADER, "").lower() != "true":
            raise Refusal(400, f"Image questions require the header {IMAGES_HEADER}: true.")
        received = Received(dict(request.headers), body, images)
        received.state_images = [images[r] for r in references(body["state"])]
        received.question_images = {n: [images[r] for r in references(q)] for n, q in body["questions"].items()}
        return received

    def _assets(self, body: dict, parts: dict[str, bytes]) -> dict[str, bytes]:
        assets = body.get("assets") or {}
        claimed: dict[str, str] = {}
        images: dict[str, bytes] = {}
        for key, asset in assets.items():
            if asset.get("part"):
                part = asset["part"]
                if part not in parts:
                    raise Refusal(
                        422, f"Asset {key} names part {part}, which the request does not have", ["body", "assets", key]
                    )
                if part in claimed:
                    raise Refusal(422, f"Part {part} is claimed by {claimed[part]} and {key}", ["body", "assets", key])
                claimed[part] = key
                images[key] = parts[part]
            else:
                images[key] = base64.b64decode(asset["data_base64"])
            check_image(key, images[key])
        if unclaimed := set(parts) - set(claimed):
            raise Refusal(422, f"Part(s) {', '.join(sorted(unclaimed))} are not claimed by any asset", ["body"])
        for ref in references({"state": body["state"], "questions": body["questions"]}):
            if ref not in images:
                raise Refusal(422, f"{ref} is referenced but not among the assets", ["body", "assets"])
        return images

    def _answers(self, received: Received) -> dict:
        answers = {}
        for name, q in received.body["questions"].items():
            if q["type"] == "noul":
                answers[name] = {
                    "type": "noul",
                    "noul": self._score(name, q.get("instructions"), received.question_images[name]),
                }
            elif q["type"] == "choice":
                labels = list(q["criteria"])
                label, confidence = self.choices.get(
                    name, ("other" if "other" in labels else labels[0], 1 / len(labels))
                )
                rest = (1 - confidence) / max(1, len(labels) - 1)
                answers[name] = {
                    "type": "choice",
                    "choice": label,
                    "confidence": confidence,
                    "probabilities": {lb: (confidence if lb == label else rest) for lb in labels},
                }
        return answers

    def _score(self, name: str, instructions: Any, images: list[bytes]) -> float:
        if self.scorer:
            return self.scorer(name, instructions, images)
        if isinstance(instructions, dict):
            return self.scores.get((instructions.get("document"), instructions.get("page_number")), self.default_score)
        return self.default_score

    def _error(self, status: int, message: str, loc: list | None = None, headers: dict | None = None) -> web.Response:
        body = (
            {"detail": [{"loc": loc or ["body"], "msg": message, "type": "value_error"}]}
            if status == 422
            else {"error": {"message": message}}
        )
        return web.json_response(body, status=status, headers=headers)
