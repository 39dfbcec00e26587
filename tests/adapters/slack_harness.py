"""The Slack harness every Slack test shares: signed Events API requests and slash commands dispatched
through Bolt (AsyncApp.async_dispatch) to the real Service, a loopback fake of the Slack Web API
(tests/fakes/slack.py), and the fixtures `fake`, `make_harness` and `slack` (tests/conftest.py loads
them for every test)."""

from __future__ import annotations

import itertools
import json
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlencode

import pymupdf
import pytest
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_sdk.signature import SignatureVerifier

from bot.slack import build_app, render
from core.config import Settings
from core.embedded.threads import EmbeddedThreads
from core.records import Answer
from core.service import Service
from tests.fakes.slack import BOT_TOKEN, BOT_USER_ID, FakeSlack

SECRET = "test-signing-secret"
CHANNEL = "C100"
TS = itertools.count(1)


def make_pdf(lines_per_page: list[list[str]], title: str = "") -> bytes:
    doc = pymupdf.open()
    for lines in lines_per_page:
        page = doc.new_page(width=595, height=842)
        y = 80
        for line in lines:
            page.insert_text((60, y), line, fontsize=13)
            y += 24
    if title:
        doc.set_metadata({"title": title})
    data = doc.tobytes()
    doc.close()
    return data


PUMP_PDF = make_pdf(
    [
        [
            "Aquaflow X200 centrifugal pump datasheet",
            "Maximum flow rate: 120 litres per minute.",
            "Maximum head: 42 metres.",
            "Motor power: 1.1 kW at 230 V.",
        ],
        [
            "Aquaflow X200 mechanical data",
            "Weight: 14 kg without water.",
            "Width: 320 mm, height: 410 mm.",
            "Warranty: 3 years.",
        ],
    ]
)
SECRET_PDF = make_pdf(
    [
        [
            "Zephyr Q9 turbine service manual",
            "Zephyr Q9 blade pitch torque: 85 Nm.",
            "Zephyr Q9 service interval: every 900 operating hours.",
        ],
    ]
)


class SpyService:
    """The real Service, with the turns it was asked recorded (to check history and images)."""

    def __init__(self, real: Service):
        self.real = real
        self.turns = []
        self.answers: list[Answer] = []

    async def answer(self, turn, events=None):
        self.turns.append(turn)
        answer = await self.real.answer(turn, events=events)
        self.answers.append(answer)
        return answer

    def __getattr__(self, name):
        return getattr(self.real, name)


@dataclass
class Harness:
    app: object
    bot: object
    fake: FakeSlack
    service: SpyService
    store: EmbeddedThreads
    settings: Settings

    def _ts(self) -> str:
        return f"1700000000.{next(TS):06d}"  # unique across harnesses (restarts share a database)

    async def dispatch(self, raw: str, content_type: str, extra_headers: dict | None = None, secret: str = SECRET):
        stamp = str(int(time.time()))
        headers = {
            "content-type": [content_type],
            "x-slack-request-timestamp": [stamp],
            "x-slack-signature": [SignatureVerifier(secret).generate_signature(timestamp=stamp, body=raw)],
            **(extra_headers or {}),
        }
        return await self.app.async_dispatch(AsyncBoltRequest(body=raw, headers=headers))

    async def event(
        self, event: dict, *, team: str = "T1", event_id: str | None = None, retry: int = 0, secret: str = SECRET
    ):
        event.setdefault("ts", self._ts())
        event.setdefault("channel", CHANNEL)
        event.setdefault("event_ts", event["ts"])
        event.setdefault("team", team)
        if not any(m.get("ts") == event["ts"] for m in self.fake.messages.get(event["channel"], [])):
            # The message exists in Slack before its event arrives (reactions and replies find it there).
            self.fake.add_message(
                event["channel"],
                {k: v for k, v in event.items() if k in ("ts", "user", "text", "files", "thread_ts", "bot_id")},
            )
        body = {
            "token": "legacy",
            "team_id": team,
            "api_app_id": "A1",
            "type": "event_callback",
            "event_id": event_id or f"Ev{event['ts'].replace('.', '')}{event['type']}",
            "event_time": int(time.time()),
            "event": event,
            "authorizations": [{"team_id": team, "user_id": BOT_USER_ID, "is_bot": True}],
        }
        headers = {"x-slack-retry-num": [str(retry)], "x-slack-retry-reason": ["http_timeout"]} if retry else None
        response = await self.dispatch(json.dumps(body), "application/json", headers, secret)
        return event, response

    async def mention(self, text: str, *, team: str = "T1", thread_ts: str | None = None, files=None, **kw):
        event = {"type": "app_mention", "user": "U1", "text": f"<@{BOT_USER_ID}> {text}"}
        if thread_ts:
            event["thread_ts"] = thread_ts
        if files is not None:
            event["files"] = files
        return await self.event(event, team=team, **kw)

    async def command(self, text: str, *, user: str = "UADMIN", team: str = "T1", channel: str = CHANNEL):
        body = urlencode(
            {
                "token": "legacy",
                "team_id": team,
                "team_domain": "test",
                "channel_id": channel,
                "channel_name": "general",
                "user_id": user,
                "user_name": user.lower(),
                "command": "/pixelrag",
                "text": text,
                "api_app_id": "A1",
                "response_url": self.fake.response_url(),
                "trigger_id": "1.2.3",
            }
        )
        return await self.dispatch(body, "application/x-www-form-urlencoded")

    async def click(
        self, message_ts: str, value: str = "", *, user: str = "U1", team: str = "T1", action: dict | None = None
    ):
        """A click on a message's feedback buttons (or on another `action`), as Slack sends it (block_actions)."""
        payload = {
            "type": "block_actions",
            "team": {"id": team},
            "user": {"id": user, "team_id": team},
            "api_app_id": "A1",
            "container": {"type": "message", "message_ts": message_ts, "channel_id": CHANNEL},
            "channel": {"id": CHANNEL},
            "trigger_id": "1.2.3",
            "response_url": self.fake.response_url(),
            "actions": [
                action
                or {
                    "type": "feedback_buttons",
                    "action_id": render.FEEDBACK_ACTION,
                    "block_id": "fb",
                    "value": value,
                    "action_ts": self._ts(),
                }
            ],
        }
        return await self.dispatch(urlencode({"payload": json.dumps(payload)}), "application/x-www-form-urlencoded")

    def image_file(self, name: str, data: bytes, mimetype: str = "image/png", url_name: str | None = None) -> dict:
        url = self.fake.add_private_file(url_name or name, data, mimetype) if url_name != "" else ""
        return {
            "id": "F" + name,
            "name": name,
            "mimetype": mimetype,
            "filetype": name.rsplit(".", 1)[-1],
            "size": len(data),
            "url_private": url,
            "url_private_download": url,
        }


def base_settings(fake: FakeSlack, tmp_path: Path, **extra) -> Settings:
    # The fake serves the PDFs to index on loopback, which chat users may not fetch by default.
    return Settings(
        index_dir=tmp_path / "index",
        allow_private_urls=True,
        extra={
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": fake.api_url,
            "SLACK_PROGRESS_INTERVAL": "0.05",
            "SLACK_STREAM_INTERVAL": "0.05",
            **extra,
        },
    )


@pytest.fixture
def fake():
    server = FakeSlack().start()
    server.admins.add("UADMIN")
    yield server
    server.stop()
    # Anything Slack would have refused is a bug the product hides, unless a test expects it.
    assert server.refused == server.expected_refusals, server.refused
    # A mention, a broadcast or a link hidden behind its label would act in real Slack.
    assert not server.acted, server.acted


@pytest.fixture
async def make_harness(fake, tmp_path):
    stores, services = [], []

    async def make(settings: Settings | None = None, service: Service | None = None, threads=None) -> Harness:
        settings = settings or base_settings(fake, tmp_path)
        store = threads or EmbeddedThreads(tmp_path / "threads.sqlite")
        stores.append(store)
        services.append(service or Service(settings))
        spy = SpyService(services[-1])
        return Harness(*build_app(settings, spy, store), fake, spy, store, settings)

    yield make
    for store in stores:
        await store.close()
    for service in services:  # its job queue, opened by the first indexing
        await service.close()


@pytest.fixture
async def slack(make_harness) -> Harness:
    harness = await make_harness()
    await harness.service.real.index_bytes(PUMP_PDF, "x200-datasheet.pdf", scope="slack:T1")
    return harness


def answer_posts(fake: FakeSlack, thread_ts: str) -> list[dict]:
    """The bot's finished answers in a thread (streamed or posted): {"ts", "blocks", "text"}."""
    return fake.replies(thread_ts)


# ----- questions ---------------------------------------------------------------------------------


def event_body(fake: FakeSlack, ts: str, text: str, event_id: str) -> tuple[dict, str]:
    """A mention from U1 in CHANNEL, seeded in the fake as Slack has it, and the Events API body that
    delivers it (for the HTTP server: `signed_headers`)."""
    event = {"type": "app_mention", "user": "U1", "text": f"<@{BOT_USER_ID}> {text}", "ts": ts, "channel": CHANNEL}
    fake.add_message(CHANNEL, {"ts": ts, "user": "U1", "text": event["text"]})
    body = {
        "team_id": "T1",
        "api_app_id": "A1",
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
        "event": event,
    }
    return event, json.dumps(body)


def signed_headers(raw: str, retry: int = 0, signature: str | None = None) -> dict[str, str]:
    """The headers Slack sends with a body: its timestamp, its signature, and on a retry its number."""
    stamp = str(int(time.time()))
    return {
        "Content-Type": "application/json",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature or SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=raw),
        **({"X-Slack-Retry-Num": str(retry), "X-Slack-Retry-Reason": "http_error"} if retry else {}),
    }


async def http_process(fake: FakeSlack, port: int, index: Path, cwd: Path):
    """`pixelrag slack --http --port PORT` as its own process against the fake, as a team runs it (the
    caller terminates it); no key, so the local backend reads."""
    import asyncio
    import os
    import sys

    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_", "PIXELRAG_", "SLACK_"))}
    env.update(
        {
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_SIGNING_SECRET": SECRET,
            "SLACK_API_URL": fake.api_url,
            "PIXELRAG_INDEX_DIR": str(index),
            "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        }
    )
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "slack",
        "--http",
        "--port",
        str(port),
        cwd=cwd,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
