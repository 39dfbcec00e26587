"""`pixelrag slack` as teams run it by default, in Socket Mode: the real process, Bolt's Socket Mode
handler and slack_sdk's aiohttp client against the fake's WebSocket (tests/fakes/slack_socket.py), which
redelivers what is not acknowledged within 3 s and asks for a reconnection as Slack does."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time

import pytest

from tests.adapters.test_health import get, samples
from tests.conftest import ROOT, closed_port
from tests.fakes.slack import BOT_TOKEN, BOT_USER_ID, FakeSlack
from tests.fakes.slack_socket import APP_TOKEN

CHANNEL = "C100"


def mention(ts: str, text: str, event_id: str) -> dict:
    return {
        "token": "legacy",
        "team_id": "T1",
        "api_app_id": "A1",
        "type": "event_callback",
        "event_id": event_id,
        "event_time": int(time.time()),
        "authorizations": [{"team_id": "T1", "user_id": BOT_USER_ID, "is_bot": True}],
        "event": {
            "type": "app_mention",
            "user": "U1",
            "text": f"<@{BOT_USER_ID}> {text}",
            "ts": ts,
            "channel": CHANNEL,
            "event_ts": ts,
            "team": "T1",
        },
    }


async def answered(fake: FakeSlack, ts: str) -> str:
    await fake.wait_for(
        lambda: [c for c in fake.calls_to("files.completeUploadExternal") if c.params.get("thread_ts") == ts],
        timeout=120,
    )
    return fake.thread_text(ts)


async def test_pixelrag_slack_in_socket_mode_answers_commands_and_reconnects(fake, brochure_index, tmp_path):
    index = tmp_path / "index"
    shutil.copytree(brochure_index, index)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_", "PIXELRAG_", "SLACK_"))}
    env.update(
        {
            "SLACK_BOT_TOKEN": BOT_TOKEN,
            "SLACK_APP_TOKEN": APP_TOKEN,
            "SLACK_API_URL": fake.api_url,
            "PIXELRAG_INDEX_DIR": str(index),
            "PYTHONPATH": str(ROOT),
        }
    )
    probes = closed_port()
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.cli",
        "slack",
        "--health-port",
        str(probes),
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    socket = fake.socket
    try:
        await socket.connected()  # after the models loaded: apps.connections.open, then hello
        [opened] = fake.calls_to("apps.connections.open")
        assert opened.headers["Authorization"] == f"Bearer {APP_TOKEN}"  # the app-level token, not the bot's

        before = samples((await get(probes, "/metrics"))[1])
        assert before[("pixelrag_index_documents", ())] == 1 and before[("pixelrag_index_pages", ())] == 4
        # A question: acknowledged in time (no redelivery), answered in its thread with its evidence.
        fake.add_message(CHANNEL, {"ts": "1700088888.000001", "user": "U1", "text": "question"})
        first = await socket.send(
            "events_api",
            mention("1700088888.000001", "What is the mounting hole spacing of the HydroFlow HF-300?", "EvSOCK1"),
        )
        assert first in socket.acks and not socket.retries
        # The probes answer while the question is being read, and say it can be answered.
        assert await get(probes, "/healthz") == (200, "ok\n") and await get(probes, "/readyz") == (200, "ready\n")
        assert not fake.calls_to("files.completeUploadExternal")  # still being answered
        thread = await answered(fake, "1700088888.000001")
        assert "148 mm" in thread and "went wrong" not in thread
        after = samples((await get(probes, "/metrics"))[1])
        answered_key = ("pixelrag_questions_total", (("outcome", "answered"), ("platform", "slack")))
        assert after[answered_key] == before.get(answered_key, 0) + 1
        read_key = ("pixelrag_stage_seconds_count", (("stage", "read"),))
        assert after[read_key] == before.get(read_key, 0) + 1
        assert ("pixelrag_event_loop_lag_seconds", ()) in after

        # A slash command: its reply travels in the ack's payload.
        command = {
            "token": "legacy",
            "team_id": "T1",
            "team_domain": "test",
            "channel_id": CHANNEL,
            "channel_name": "general",
            "user_id": "UADMIN",
            "user_name": "admin",
            "command": "/pixelrag",
            "text": "list",
            "api_app_id": "A1",
            "response_url": fake.response_url(),
            "trigger_id": "1.2.3",
        }
        listed = await socket.send("slash_commands", command, accepts_response=True)
        assert "HydroFlow HF-300 product brochure" in json.dumps(socket.acks[listed])

        # A 👍 on the answer: an interaction, acknowledged.
        [stream] = fake.streams("1700088888.000001")
        [buttons] = [b for b in stream["stream"]["blocks"] if b["type"] == "context_actions"]
        value = buttons["elements"][0]["positive_button"]["value"]
        click = {
            "type": "block_actions",
            "team": {"id": "T1"},
            "user": {"id": "U1", "team_id": "T1"},
            "api_app_id": "A1",
            "container": {"type": "message", "message_ts": stream["ts"], "channel_id": CHANNEL},
            "channel": {"id": CHANNEL},
            "trigger_id": "1.2.3",
            "response_url": fake.response_url("click"),
            "actions": [
                {
                    "type": "feedback_buttons",
                    "action_id": "pixelrag_feedback",
                    "block_id": "fb",
                    "value": value,
                    "action_ts": "1700088889.000001",
                }
            ],
        }
        assert await socket.send("interactive", click) in socket.acks
        rated = ("pixelrag_feedback_total", (("rating", "good"),))
        for _ in range(200):  # the rating is stored after the ack
            if samples((await get(probes, "/metrics"))[1]).get(rated) == 1:
                break
            await asyncio.sleep(0.05)
        assert samples((await get(probes, "/metrics"))[1]).get(rated) == 1

        # Slack asks for a new connection: the client opens one, and what comes next reaches the bot.
        await socket.refresh()
        await socket.connected(count=2)
        assert len(fake.calls_to("apps.connections.open")) == 2
        fake.add_message(CHANNEL, {"ts": "1700088888.000002", "user": "U1", "text": "question"})
        await socket.send("events_api", mention("1700088888.000002", "What does the warranty cover?", "EvSOCK2"))
        assert "warranty" in (await answered(fake, "1700088888.000002")).lower()

        # Slack delivers an answered event again (its ack was lost): it is not answered twice.
        await socket.send(
            "events_api",
            mention("1700088888.000001", "What is the mounting hole spacing of the HydroFlow HF-300?", "EvSOCK1"),
        )
        fake.add_message(CHANNEL, {"ts": "1700088888.000003", "user": "U1", "text": "question"})
        await socket.send("events_api", mention("1700088888.000003", "How much does it weigh?", "EvSOCK3"))
        await answered(fake, "1700088888.000003")  # work queued after the duplicate is done
        assert len(fake.streams("1700088888.000001")) == 1
        assert not socket.retries and not socket.late_acks
    finally:
        proc.terminate()
        _, err = await proc.communicate()
        assert b"Traceback" not in err, err.decode()[-3000:]


async def test_the_fake_delivers_again_what_is_not_acknowledged_in_time(fake):
    import aiohttp
    from slack_sdk.web.async_client import AsyncWebClient

    web = AsyncWebClient(token=BOT_TOKEN, base_url=fake.api_url)
    fake.expected_refusals.append(("apps.connections.open", "not_allowed_token_type"))
    with pytest.raises(Exception, match="not_allowed_token_type"):  # the bot token opens no connection
        await web.apps_connections_open(app_token=BOT_TOKEN)
    url = (await web.apps_connections_open(app_token=APP_TOKEN))["url"]
    async with aiohttp.ClientSession() as session, session.ws_connect(url) as ws:
        assert (await ws.receive_json())["type"] == "hello"
        sent = asyncio.ensure_future(fake.socket.send("events_api", {"event": {"type": "app_mention"}}))
        attempts = [(await ws.receive_json(timeout=10))["retry_attempt"] for _ in range(2)]
        assert attempts == [0, 1]  # not acknowledged within 3 s: delivered again
        envelope = await ws.receive_json(timeout=10)
        await ws.send_json({"envelope_id": envelope["envelope_id"]})
        assert await sent == envelope["envelope_id"] and fake.socket.retries[-1][1] == 2
        await ws.send_json({"envelope_id": envelope["envelope_id"]})  # twice: Slack ignores it, noted
        await fake.wait_for(lambda: fake.socket.late_acks)
