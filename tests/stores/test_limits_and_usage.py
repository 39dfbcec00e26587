"""Question limits and usage, through Conversation (what every adapter asks through) on both thread
stores: a limit answers with one clear message, does not count the refused question, and resets when
its window has passed; each workspace's costs are recorded and shown apart from the others'."""

from __future__ import annotations

import shutil

import pytest

from core import BadInput, Conversation, Service, Settings, scopes, thread_memory
from core.chat import usage
from core.chat.limits import LimitReached
from tests.conftest import text_pdf
from tests.fakes.gemini import FakeGemini

QUESTION = "What is the mounting hole spacing of the HydroFlow HF-300?"


@pytest.fixture(params=["sqlite", "postgresql"])
async def threads(request, tmp_path):
    url = request.getfixturevalue("database_url") if request.param == "postgresql" else None
    store = thread_memory(Settings(database_url=url), tmp_path / "threads.sqlite")
    await store.open()
    yield store
    await store.close()


class Clock:
    def __init__(self, now: float = 1_800_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    clock = Clock()
    monkeypatch.setattr("core.chat.limits.time.time", clock)
    monkeypatch.setattr("core.chat.usage.time.time", clock)
    return clock


@pytest.fixture
def index(tmp_path, brochure_index):
    shutil.copytree(brochure_index, tmp_path / "index")
    return tmp_path / "index"


async def ask(conversation: Conversation, user: str, scope: str = "slack:T1") -> str:
    reply = await conversation.ask(None, QUESTION, scope=scope, user=user)
    return reply.answer.markdown


async def test_a_person_over_the_hourly_limit_is_told_when_to_ask_again(threads, index, clock):
    service = Service(Settings(index_dir=index, backend="local", user_questions_per_hour=2))
    conversation = Conversation(service, threads)
    assert "148" in await ask(conversation, "U1")
    clock.now += 600
    assert "148" in await ask(conversation, "U1")
    clock.now += 600
    with pytest.raises(LimitReached, match=r"asked 2 questions in the past hour.*again in 40 minutes"):
        await ask(conversation, "U1")
    with pytest.raises(LimitReached):  # refused questions are not counted: still 40 minutes
        await ask(conversation, "U1")
    assert "148" in await ask(conversation, "U2")  # someone else, the same workspace
    clock.now += 40 * 60 + 1  # the first question is an hour old
    assert "148" in await ask(conversation, "U1")
    with pytest.raises(LimitReached, match="again in 10 minutes"):
        await ask(conversation, "U1")
    await service.close()


async def test_a_workspace_over_its_daily_limit_is_refused_and_others_are_not(threads, index, clock):
    service = Service(Settings(index_dir=index, backend="local", workspace_questions_per_day=3))
    conversation = Conversation(service, threads)
    for user, channel in (("U1", "C1"), ("U2", "C2"), ("U3", "C1")):  # every channel counts for its workspace
        await ask(conversation, user, scope=f"slack:T1/{channel}")
        clock.now += 3600
    with pytest.raises(LimitReached, match=r"This workspace has asked 3 questions in the past 24 hours.*in 21 hours"):
        await ask(conversation, "U4")
    assert "148" in await ask(conversation, "U1", scope="slack:T2")
    assert "148" in await ask(conversation, "U1", scope="discord:42")
    clock.now += 21 * 3600 + 1  # the first question is a day old
    assert "148" in await ask(conversation, "U4")
    await service.close()


async def test_no_limit_is_the_default_and_nothing_is_counted(threads, index, clock):
    service = Service(Settings(index_dir=index, backend="local"))
    conversation = Conversation(service, threads)
    for _ in range(5):
        await ask(conversation, "U1")
    assert await threads.asked("slack", "T1", None, 0.0) == []
    assert (await threads.usage("slack", "T1", 0.0))[usage.QUESTIONS] == 5
    await service.close()


async def test_gemini_tokens_and_requests_are_recorded_per_workspace(threads, tmp_path, brochure, clock):
    async with FakeGemini() as gemini:
        service = Service(gemini.settings(Settings(index_dir=tmp_path / "g"), embedding_dim=256))
        await service.index([str(brochure)])
        conversation = Conversation(service, threads)
        await ask(conversation, "U1")
        await ask(conversation, "U1")
        await ask(conversation, "U9", scope="slack:T2")
        generated = gemini.requests["generateContent"] + gemini.requests["streamGenerateContent"]
        await service.close()
    t1 = await threads.usage("slack", "T1", clock.now)
    t2 = await threads.usage("slack", "T2", clock.now)
    everyone = await threads.usage(None, None, clock.now)
    assert t1[usage.QUESTIONS] == 2 and t2[usage.QUESTIONS] == 1
    assert t1[usage.GEMINI_REQUESTS] >= 2 * 2  # per question: the query's embedding and the reading at least
    assert t1[usage.GEMINI_TOKENS] > 0 and t1[usage.GEMINI_TOKENS] == 2 * t2[usage.GEMINI_TOKENS]
    assert everyone[usage.GEMINI_REQUESTS] == t1[usage.GEMINI_REQUESTS] + t2[usage.GEMINI_REQUESTS]
    assert generated >= 3
    # Another day: today's usage starts again, the 30 days' keeps it.
    lines = await usage.summary([threads], "slack", "T1", clock.now + 86400)
    assert lines["usage today (UTC)"].startswith("0 questions")
    assert lines["usage, last 30 days"].startswith("2 questions")


async def test_what_a_workspace_indexing_costs_is_added_to_its_usage(threads, tmp_path, brochure, clock):
    async with FakeGemini() as gemini:
        service = Service(gemini.settings(Settings(index_dir=tmp_path / "g"), embedding_dim=256))
        await service.index([str(brochure)])  # the operator's, before any thread memory: not kept
        service.costs = threads  # as the Slack and Discord bots make theirs (Service(…, costs=threads))
        before = gemini.requests["batchEmbedContents"]
        manual = text_pdf(
            tmp_path / "q9.pdf", ["The Q9 pump delivers 40 litres per minute.", "Its impeller is bronze."]
        )
        await service.index_bytes(manual.read_bytes(), "q9.pdf", scope="slack:T1")
        embedded = gemini.requests["batchEmbedContents"] - before
        await service.close()
    t1 = await threads.usage("slack", "T1", clock.now)
    assert t1.get(usage.QUESTIONS, 0) == 0 and t1[usage.GEMINI_REQUESTS] == embedded > 0
    assert await threads.usage("shared", "", clock.now) == {}


async def test_where_chat_indexing_goes_is_each_workspaces_choice(threads):
    assert await scopes.indexing_scope(threads, "slack:T1/C1") == "slack:T1"  # the workspace, unless chosen
    await scopes.choose_indexing_place(threads, "slack:T1/C1", "channel")
    assert await scopes.indexing_scope(threads, "slack:T1/C2") == "slack:T1/C2"  # the workspace's choice, any channel
    assert await scopes.indexing_scope(threads, "slack:T1/C2", "workspace") == "slack:T1"  # unless named
    assert await scopes.indexing_scope(threads, "slack:T2/C1") == "slack:T2"
    assert await scopes.indexing_scope(threads, "discord:1/C1") == "discord:1"
    with pytest.raises(BadInput, match="say channel or workspace"):
        await scopes.choose_indexing_place(threads, "slack:T1/C1", "everywhere")
    await scopes.choose_indexing_place(threads, "slack:T1/C1", "workspace")
    assert await scopes.indexing_scope(threads, "slack:T1/C2") == "slack:T1"
