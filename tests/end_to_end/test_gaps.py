"""Coverage gaps end to end: questions asked in two Slack channels through the conversation service (the
local backend reading the sample brochure), then `pixelrag gaps` and the real `pixelrag web`'s /api/gaps
listing what the documents could not answer, grouped, each list its own collection's."""

from __future__ import annotations

import csv
import io
import json

import pytest

from core import Conversation, EmbeddedThreads, Service, Settings
from tests.end_to_end.web_process import bearer, pixelrag

PRICE = ("What does the HF-300 cost?", "How much does the HF-300 cost?")
BLUETOOTH = "Does the HF-300 have Bluetooth?"
SPACING = "What is the mounting hole spacing of the HydroFlow HF-300?"


@pytest.fixture
async def asked(api):
    """Channel C9 asks the price twice (a limitation each time) and the spacing (answered, then rated 👎);
    channel C8 asks about Bluetooth (a limitation). The Slack bot's thread memory keeps them."""
    base, session, keys, index = api
    async with Service(Settings(index_dir=index, backend="local")) as service:
        threads = await EmbeddedThreads(index / "slack-threads.sqlite").open()
        try:
            conversation = Conversation(service, threads, 4)
            for n, (question, channel) in enumerate(
                [(PRICE[0], "C9"), (SPACING, "C9"), (BLUETOOTH, "C8"), (PRICE[1], "C9")]
            ):
                key = ("slack", "T1", channel, f"17000000{n:02d}.000100")
                reply = await conversation.ask(key, question, scope=f"slack:T1/{channel}")
                if question == SPACING:
                    assert reply.answer.citations and not reply.answer.gap  # answered, so not a gap by itself
                    assert await threads.rate(reply.turn_id, "U1", "bad")
                else:
                    assert reply.answer.gap == "limitation", reply.answer.limitations
        finally:
            await threads.close()
    return api


def gaps_cli(index, *argv) -> str:
    run = pixelrag(index, "gaps", *argv)
    assert run.returncode == 0, run.stderr
    return run.stdout


async def test_pixelrag_gaps_groups_what_was_not_answered(asked):
    index = asked[3]
    everything = json.loads(gaps_cli(index, "--json"))
    assert [(g["count"], g["latest"]) for g in everything] == [(2, PRICE[1]), (1, BLUETOOTH), (1, SPACING)]
    price, bluetooth, spacing = everything
    assert price["reasons"] == {"limitation": 2} and price["asked_in"] == ["slack:T1/C9"]
    assert [q["question"] for q in price["questions"]] == [PRICE[1], PRICE[0]]
    assert spacing["reasons"] == {"rated bad": 1}
    assert price["pages"][0]["title"] == "HydroFlow HF-300 product brochure" and price["pages"][0]["page"] >= 1
    channel = json.loads(gaps_cli(index, "--json", "--scope", "slack:T1/C9"))
    assert [g["latest"] for g in channel] == [PRICE[1], SPACING]  # nothing of channel C8
    rows = list(csv.reader(io.StringIO(gaps_cli(index, "--csv", "--scope", "slack:T1/C8"))))
    assert [r[:3] for r in rows[1:]] == [["1", BLUETOOTH, "slack:T1/C8"]]
    assert "No unanswered questions" in gaps_cli(index, "--scope", "discord:G1")
    text = gaps_cli(index)
    assert f"2× {PRICE[1]}" in text and "looked in: HydroFlow HF-300 product brochure, p." in text
    assert pixelrag(index, "gaps", "--days", "0").returncode == 2


async def test_api_gaps_shows_each_key_its_own_collections_gaps(asked):
    base, session, keys, index = asked
    made = pixelrag(index, "keys", "add", "workspace", "--scope", "slack:T1")
    keys["workspace"] = made.stdout.strip().splitlines()[-1]
    seen = {}
    for name in ("everyone", "hr", "workspace"):
        async with session.get(f"{base}/api/gaps", headers=bearer(keys[name])) as response:
            assert response.status == 200
            seen[name] = [(g["count"], g["latest"]) for g in (await response.json())["gaps"]]
    assert seen["everyone"] == []  # the shared collection's own questions: none were asked there
    assert seen["hr"] == [(2, PRICE[1]), (1, SPACING)]  # channel C9 only
    assert seen["workspace"] == [(2, PRICE[1]), (1, BLUETOOTH), (1, SPACING)]  # its channels' too
    async with session.get(f"{base}/api/gaps?format=csv", headers=bearer(keys["hr"])) as response:
        assert response.headers["Content-Type"].startswith("text/csv")
        rows = list(csv.reader(io.StringIO(await response.text())))
    assert [r[1] for r in rows[1:]] == [PRICE[1], SPACING]
    async with session.get(f"{base}/api/gaps?days=-1", headers=bearer(keys["hr"])) as response:
        assert response.status == 400 and "days" in (await response.json())["error"]
    async with session.get(f"{base}/api/gaps") as response:
        assert response.status == 401
