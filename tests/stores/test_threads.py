"""Thread memory and delivery claims: one contract for both stores (SQLite, the embedded default, and
PostgreSQL, shared by replicas, on a real server), then what is particular to each: schema versions,
pruning, concurrent first use, and replicas racing for one delivery."""

from __future__ import annotations

import asyncio
import sqlite3
import time

import numpy as np
import pytest

from core import EmbeddedThreads, Settings, thread_memory
from core.embedded.threads import KEEP_EVENTS_S, MIGRATIONS
from core.errors import BadInput, IndexProblem
from core.postgres.threads import PostgresThreads
from core.records import Exchange

KEY = ("slack", "T1", "C1", "1.0")


@pytest.fixture(params=["sqlite", "postgresql"])
async def memory(request, tmp_path):
    """Each contract test runs against both stores, as the settings choose them."""
    url = request.getfixturevalue("database_url") if request.param == "postgresql" else None
    store = thread_memory(Settings(database_url=url), tmp_path / "threads.sqlite")
    assert isinstance(store, PostgresThreads if url else EmbeddedThreads)
    await store.open()
    yield store
    await store.close()


# ----- the contract ------------------------------------------------------------------------------------


async def test_a_thread_remembers_its_exchanges_in_order(memory):
    other = ("discord", "G1", "C1", "C1")
    assert not await memory.knows_thread(KEY) and await memory.history(KEY) == ()
    for n in range(6):
        await memory.add(KEY, Exchange(f"q{n}", f"a{n}", f"interpreted {n}", (("d1", n + 1),)))
    await memory.add(other, Exchange("elsewhere", "x"))
    history = await memory.history(KEY, limit=4)
    assert [e.question for e in history] == ["q2", "q3", "q4", "q5"]  # the latest four, oldest first
    assert history[-1] == Exchange("q5", "a5", "interpreted 5", (("d1", 6),))
    assert await memory.knows_thread(KEY) and [e.question for e in await memory.history(other)] == ["elsewhere"]


async def test_an_unposted_reply_is_kept_until_delivered(memory):
    rendered = [{"text": "14 kg", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "14 kg"}}]}]
    turn = await memory.add(KEY, Exchange("How heavy?", "14 kg"), pending_reply=rendered)
    assert await memory.pending_reply(KEY, "How heavy?") == (turn, rendered)
    assert await memory.pending_reply(KEY, "Something else?") is None
    await memory.delivered(turn)
    assert await memory.pending_reply(KEY, "How heavy?") is None
    later = await memory.add(KEY, Exchange("Width?", "320 mm"))  # delivered at once: nothing kept
    assert await memory.pending_reply(KEY, "Width?") is None
    await memory.keep_reply(later, [{"text": "320 mm"}])  # kept once rendered (with the turn's buttons)
    assert await memory.pending_reply(KEY, "Width?") == (later, [{"text": "320 mm"}])


async def test_a_delivery_is_claimed_once_and_finished_for_good(memory):
    assert await memory.claim("Ev1")
    assert not await memory.claim("Ev1")  # the same delivery again while it is being answered
    await memory.finish("Ev1")
    assert not await memory.claim("Ev1")
    memory.lease_s = 0  # long past the lease, a finished claim still stays finished
    assert not await memory.claim("Ev1")


async def test_an_unfinished_claim_is_taken_over_after_the_lease(memory):
    assert await memory.claim("Ev2")
    memory.lease_s = 0  # its process died long ago
    await asyncio.sleep(0.01)
    assert await memory.claim("Ev2")


async def test_the_latest_rating_per_user_is_kept_with_what_was_retrieved_and_cited(memory):
    exchange = Exchange("And its width?", "320 mm", "How wide is the X200?", (("d1", 2),), (("d1", 2), ("d1", 1)))
    turn = await memory.add(KEY, exchange)
    other = await memory.add(KEY, Exchange("q", "a"))
    assert await memory.rate(turn, "T1:U1", "good")
    assert await memory.rate(turn, "T1:U1", "bad")  # a toggle: the latest click counts
    assert await memory.rate(turn, "T1:U2", "good")
    assert await memory.rate(other, "T1:U2", "good")
    assert not await memory.rate(turn + 1000, "T1:U1", "bad")  # no such turn
    [bad] = await memory.ratings("bad")
    assert (bad.turn_id, bad.platform, bad.workspace, bad.user) == (turn, "slack", "T1", "T1:U1")
    assert (bad.question, bad.interpreted, bad.answer) == ("And its width?", "How wide is the X200?", "320 mm")
    assert bad.retrieved == (("d1", 2), ("d1", 1)) and bad.cited == (("d1", 2),) and bad.rated_at > 0
    assert sorted((r.turn_id, r.user) for r in await memory.ratings("good")) == [(turn, "T1:U2"), (other, "T1:U2")]


async def test_api_keys_are_kept_hashed_open_their_collection_and_stay_revoked(memory):
    from core import add_key, key_scope, revoke_key
    from core.api_keys import digest

    key = await add_key(memory, "agent", "slack:T1/C9")
    assert await key_scope(memory, f"Bearer {key}") == ("agent", "slack:T1/C9")
    [kept] = await memory.api_keys()
    assert (kept.name, kept.scope, kept.revoked) == ("agent", "slack:T1/C9", None)
    assert key not in repr(kept) and await memory.key(digest(key)) is not None  # only its digest is kept
    with pytest.raises(BadInput, match="exists"):
        await add_key(memory, "agent", "shared")
    with pytest.raises(BadInput, match="not a key name"):
        await add_key(memory, "../x", "shared")
    for header in (None, "", key, f"Basic {key}", "Bearer prk_unknown", f"Bearer {key}x"):
        assert await key_scope(memory, header) is None, header
    await revoke_key(memory, "agent")
    assert await key_scope(memory, f"Bearer {key}") is None
    [kept] = await memory.api_keys()
    assert kept.revoked is not None
    with pytest.raises(BadInput, match="No active API key"):
        await revoke_key(memory, "agent")
    with pytest.raises(BadInput, match="exists"):
        await add_key(memory, "agent", "shared")  # a revoked name is not handed out again


async def test_gap_questions_are_the_unanswered_and_the_rated_bad(memory):
    from core.records import ABSTENTION, LIMITATION, RATED_BAD

    vector = np.arange(8, dtype=np.float16).tobytes()

    def exchange(question, gap=""):
        return Exchange(question, "answer", question, (), (("d1", 2), ("d1", 1)), "slack:T1/C1", gap, vector)

    before = time.time() - 1
    answered = await memory.add(KEY, exchange("Width?"))
    limited = await memory.add(KEY, exchange("Price?", LIMITATION))
    await memory.add(KEY, exchange("Colour?", ABSTENTION))
    disliked = await memory.add(KEY, exchange("Weight?"))
    liked = await memory.add(KEY, exchange("Height?"))
    assert await memory.rate(disliked, "U1", "bad") and await memory.rate(liked, "U1", "good")
    assert await memory.rate(limited, "U2", "bad")  # a 👎 says more than the answer did
    assert await memory.rate(answered, "U1", "bad") and await memory.rate(answered, "U1", "good")  # changed mind
    gaps = await memory.gap_questions(before)
    assert [(g.question, g.reason) for g in gaps] == [
        ("Price?", RATED_BAD),
        ("Colour?", ABSTENTION),
        ("Weight?", RATED_BAD),
    ]
    first = gaps[0]
    assert (first.scope, first.platform, first.workspace) == ("slack:T1/C1", *KEY[:2])
    assert first.retrieved == (("d1", 2), ("d1", 1)) and first.vector == vector
    assert before <= first.asked_at <= time.time()
    assert await memory.gap_questions(time.time() + 60) == []  # only those asked since


# ----- SQLite ------------------------------------------------------------------------------------------


def first_schema_database(path) -> None:
    """A thread database as the first release wrote it: no version, no claim columns."""
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0])
    db.execute(
        "INSERT INTO turns (platform, workspace, channel, thread, question, interpreted, answer, cited, created)"
        " VALUES (?, ?, ?, ?, 'How heavy is the X200?', 'How heavy is the X200?', '14 kg', '[]', ?)",
        (*KEY, time.time()),
    )
    db.execute("INSERT INTO events VALUES ('Ev-old', ?)", (time.time() - 2 * KEEP_EVENTS_S,))
    db.execute("INSERT INTO events VALUES ('Ev-recent', ?)", (time.time(),))
    db.commit()
    db.close()


async def test_an_old_database_is_migrated_and_keeps_its_threads(tmp_path):
    path = tmp_path / "threads.sqlite"
    first_schema_database(path)
    store = await EmbeddedThreads(path).open()
    try:
        [exchange] = await store.history(KEY)
        assert exchange.answer == "14 kg"
        assert not await store.claim("Ev-recent")  # handled before the upgrade: still a duplicate
        assert await store.claim("Ev-old")  # pruned (older than a week), so it counts as new
        turn = await store.add(KEY, Exchange("And its width?", "320 mm"), pending_reply={"text": "320 mm"})
        assert await store.pending_reply(KEY, "And its width?") == (turn, {"text": "320 mm"})
        old = (await store._conn()).execute("SELECT id FROM turns WHERE answer = '14 kg'")
        async with old as cursor:
            (old_turn,) = await cursor.fetchone()
        assert await store.rate(old_turn, "T1:U1", "bad")  # a turn from before ratings existed
        [rated] = await store.ratings("bad")
        assert rated.question == "How heavy is the X200?" and rated.retrieved == ()
    finally:
        await store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


async def test_finished_claims_are_pruned_after_a_week_and_open_ones_kept(tmp_path):
    path = tmp_path / "threads.sqlite"
    store = await EmbeddedThreads(path).open()
    assert await store.claim("Ev-done") and await store.claim("Ev-open")
    await store.finish("Ev-done")
    await store.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE events SET created = ?", (time.time() - 2 * KEEP_EVENTS_S,))
    store = await EmbeddedThreads(path).open()
    await store.close()
    with sqlite3.connect(path) as db:
        assert [r[0] for r in db.execute("SELECT event_id FROM events")] == ["Ev-open"]


async def test_a_database_from_a_newer_pixelrag_is_refused(tmp_path):
    path = tmp_path / "threads.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    store = EmbeddedThreads(path)
    with pytest.raises(IndexProblem, match="newer pixelrag"):
        await store.open()
    await store.close()


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
async def test_first_deliveries_at_once_open_the_database_once(kind, request, tmp_path):
    url = request.getfixturevalue("database_url") if kind == "postgresql" else None
    store = thread_memory(Settings(database_url=url), tmp_path / "threads.sqlite")
    try:
        claims = await asyncio.gather(*(store.claim(f"Ev{n}") for n in range(8)), store.claim("Ev0"))
        assert sorted(claims) == [False] + [True] * 8
    finally:
        await store.close()


# ----- PostgreSQL: replicas ----------------------------------------------------------------------------


async def test_replicas_racing_for_one_delivery_give_it_to_exactly_one(database_url):
    replicas = [PostgresThreads(database_url) for _ in range(3)]
    try:
        # All open at once: the schema is created once, under the migration lock.
        await asyncio.gather(*(r.open() for r in replicas))
        for n in range(10):
            won = await asyncio.gather(*(r.claim(f"Ev{n}") for r in replicas for _ in range(3)))
            assert sum(won) == 1
        # A live replica still answering keeps its claim: another replica's redelivery is dropped...
        assert not await replicas[1].claim("Ev0")
        # ...and once it is answered, it stays answered everywhere.
        await replicas[0].finish(*(f"Ev{n}" for n in range(10)))
        assert not any(await asyncio.gather(*(r.claim("Ev3") for r in replicas)))
        # Memory written by one replica is read by another.
        await replicas[2].add(KEY, Exchange("q", "a"))
        assert await replicas[0].knows_thread(KEY)
    finally:
        for r in replicas:
            await r.close()


async def test_postgres_schema_is_versioned_and_a_newer_one_is_refused(database_url):
    import psycopg

    from core.postgres.database import MIGRATIONS as PG_MIGRATIONS

    store = await PostgresThreads(database_url).open()
    await store.close()
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert conn.execute("SELECT array_agg(version ORDER BY version) FROM pixelrag_schema").fetchone()[0] == list(
            range(1, len(PG_MIGRATIONS) + 1)
        )
        conn.execute("INSERT INTO pixelrag_schema VALUES (%s)", (len(PG_MIGRATIONS) + 1,))
    store = PostgresThreads(database_url)
    with pytest.raises(IndexProblem, match="newer pixelrag"):
        await store.open()
    await store.close()


async def test_postgres_prunes_finished_claims_after_a_week(database_url):
    import psycopg

    store = await PostgresThreads(database_url).open()
    assert await store.claim("Ev-done") and await store.claim("Ev-open")
    await store.finish("Ev-done")
    await store.close()
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("UPDATE pixelrag_events SET created = now() - interval '8 days'")
    store = await PostgresThreads(database_url).open()
    await store.close()
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert [r[0] for r in conn.execute("SELECT event_id FROM pixelrag_events")] == ["Ev-open"]


async def test_an_unreachable_database_is_one_clear_line(tmp_path):
    from core import BadInput

    store = PostgresThreads(f"postgresql://nobody@/nothing?host={tmp_path}&connect_timeout=2")
    with pytest.raises(BadInput, match="Cannot reach the database in PIXELRAG_DATABASE_URL"):
        await store.open()
    await store.close()


def test_a_database_url_that_is_not_postgresql_is_refused():
    from core import BadInput, load_settings

    with pytest.raises(BadInput, match="must be a PostgreSQL URL"):
        load_settings({"PIXELRAG_DATABASE_URL": "mysql://db/pixelrag"}, None)
    assert load_settings({"PIXELRAG_DATABASE_URL": "postgresql://db/pixelrag"}, None).database_url


async def test_the_progress_of_a_delivery_is_kept_for_the_one_that_takes_it_over(memory):
    assert await memory.claim("Ev-progress")
    assert await memory.progress("Ev-progress") == {}
    await memory.note("Ev-progress", stream="1700000000.000009")
    await memory.note("Ev-progress", posted=True)
    assert await memory.progress("Ev-progress") == {"stream": "1700000000.000009", "posted": True}
    assert await memory.progress("Ev-unknown") == {}
