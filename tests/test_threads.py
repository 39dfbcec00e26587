"""Thread memory and delivery claims in SQLite: schema versions, pruning, and concurrent first use."""
from __future__ import annotations

import asyncio
import sqlite3
import time

import pytest

from core import Exchange, IndexProblem, ThreadStore
from core.threads import KEEP_EVENTS_S, MIGRATIONS

KEY = ("slack", "T1", "C1", "1.0")


def first_schema_database(path) -> None:
    """A thread database as the first release wrote it: no version, no claim columns."""
    db = sqlite3.connect(path)
    db.executescript(MIGRATIONS[0])
    db.execute("INSERT INTO turns (platform, workspace, channel, thread, question, interpreted, answer, cited, created)"
               " VALUES (?, ?, ?, ?, 'How heavy is the X200?', 'How heavy is the X200?', '14 kg', '[]', ?)",
               (*KEY, time.time()))
    db.execute("INSERT INTO events VALUES ('Ev-old', ?)", (time.time() - 2 * KEEP_EVENTS_S,))
    db.execute("INSERT INTO events VALUES ('Ev-recent', ?)", (time.time(),))
    db.commit()
    db.close()


async def test_an_old_database_is_migrated_and_keeps_its_threads(tmp_path):
    path = tmp_path / "threads.sqlite"
    first_schema_database(path)
    store = await ThreadStore(path).open()
    try:
        [exchange] = await store.history(KEY)
        assert exchange.answer == "14 kg"
        assert not await store.claim("Ev-recent")  # handled before the upgrade: still a duplicate
        assert await store.claim("Ev-old")  # pruned (older than a week), so it counts as new
        turn = await store.add(KEY, Exchange("And its width?", "320 mm"), pending_reply={"text": "320 mm"})
        assert await store.pending_reply(KEY, "And its width?") == (turn, {"text": "320 mm"})
    finally:
        await store.close()
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


async def test_finished_claims_are_pruned_after_a_week_and_open_ones_kept(tmp_path):
    path = tmp_path / "threads.sqlite"
    store = await ThreadStore(path).open()
    assert await store.claim("Ev-done") and await store.claim("Ev-open")
    await store.finish("Ev-done")
    await store.close()
    with sqlite3.connect(path) as db:
        db.execute("UPDATE events SET created = ?", (time.time() - 2 * KEEP_EVENTS_S,))
    store = await ThreadStore(path).open()
    await store.close()
    with sqlite3.connect(path) as db:
        assert [r[0] for r in db.execute("SELECT event_id FROM events")] == ["Ev-open"]


async def test_a_database_from_a_newer_pixelrag_is_refused(tmp_path):
    path = tmp_path / "threads.sqlite"
    with sqlite3.connect(path) as db:
        db.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    store = ThreadStore(path)
    with pytest.raises(IndexProblem, match="newer pixelrag"):
        await store.open()
    await store.close()


async def test_first_deliveries_at_once_open_the_database_once(tmp_path):
    store = ThreadStore(tmp_path / "threads.sqlite")
    try:
        claims = await asyncio.gather(*(store.claim(f"Ev{n}") for n in range(8)), store.claim("Ev0"))
        assert sorted(claims) == [False] + [True] * 8
    finally:
        await store.close()
