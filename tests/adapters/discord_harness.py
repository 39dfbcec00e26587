"""The Discord harness the streamed-answer tests share: the fake Discord REST API (`discord_api`) and the
real bot logged in against it on virtual time (`bot`); tests/conftest.py loads these fixtures."""

from __future__ import annotations

import asyncio

import pytest

from bot.discord import build_client
from core.config import Settings
from core.embedded.threads import EmbeddedThreads
from tests.fakes.discord import FakeDiscord


class VirtualTime:
    """A clock that moves only when someone sleeps on it: sleeping passes the time at once."""

    def __init__(self):
        self.now = 1000.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0)
        await asyncio.sleep(0)


@pytest.fixture
async def discord_api():
    async with FakeDiscord() as fake:
        yield fake
    assert not fake.acted, fake.acted  # a ping or a hidden link would act in real Discord


@pytest.fixture
async def bot(tmp_path, discord_api):
    """The real bot, logged in against the fake; its thread memory in tmp_path."""
    threads = await EmbeddedThreads(tmp_path / "threads.sqlite").open()
    clients = []

    async def make(service, **extra):
        client = build_client(service, threads, Settings(extra=dict(extra)))
        await client.login("fake-bot-token")  # users/@me, the application, setup_hook's command sync
        client.http.max_ratelimit_timeout = 0.001  # a 429 raises at once instead of sleeping through it
        time = VirtualTime()
        client.questions.clock, client.questions.sleep = time.clock, time.sleep
        discord_api.clock = time.clock
        client.time = time
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()
    await threads.close()
