"""Thread memory and delivery de-duplication for the chat adapters, in SQLite (aiosqlite).

A thread is keyed by (platform, workspace, channel, thread). Each turn stores the question, the
interpreted question, the answer and the cited pages; context resolution reads them back.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import aiosqlite

from .records import Exchange

SCHEMA = """
CREATE TABLE IF NOT EXISTS turns (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    platform TEXT NOT NULL, workspace TEXT NOT NULL, channel TEXT NOT NULL, thread TEXT NOT NULL,
    question TEXT NOT NULL, interpreted TEXT NOT NULL, answer TEXT NOT NULL, cited TEXT NOT NULL,
    created REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS turns_thread ON turns(platform, workspace, channel, thread);
CREATE TABLE IF NOT EXISTS events (event_id TEXT PRIMARY KEY, created REAL NOT NULL);
"""


class ThreadStore:
    def __init__(self, path: Path):
        self.path = path
        self._db: aiosqlite.Connection | None = None

    async def open(self) -> "ThreadStore":
        if self._db is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = await aiosqlite.connect(self.path)
            await self._db.executescript(SCHEMA)
            await self._db.commit()
        return self

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()
            self._db = None

    async def _conn(self) -> aiosqlite.Connection:
        await self.open()
        assert self._db is not None
        return self._db

    async def add(self, key: tuple[str, str, str, str], exchange: Exchange) -> None:
        db = await self._conn()
        await db.execute(
            "INSERT INTO turns (platform, workspace, channel, thread, question, interpreted, answer, cited, created)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (*key, exchange.question, exchange.interpreted, exchange.answer, json.dumps(exchange.cited), time.time()),
        )
        await db.commit()

    async def history(self, key: tuple[str, str, str, str], limit: int = 4) -> tuple[Exchange, ...]:
        """The latest `limit` exchanges of a thread, oldest first."""
        db = await self._conn()
        async with db.execute(
            "SELECT question, interpreted, answer, cited FROM turns"
            " WHERE platform=? AND workspace=? AND channel=? AND thread=? ORDER BY id DESC LIMIT ?",
            (*key, limit),
        ) as cursor:
            rows = await cursor.fetchall()
        return tuple(
            Exchange(q, a, i, tuple(tuple(c) for c in json.loads(cited))) for q, i, a, cited in reversed(rows)
        )

    async def knows_thread(self, key: tuple[str, str, str, str]) -> bool:
        return bool(await self.history(key, limit=1))

    async def first_delivery(self, event_id: str) -> bool:
        """True the first time an event id is seen; retried deliveries get False."""
        db = await self._conn()
        cursor = await db.execute("INSERT OR IGNORE INTO events (event_id, created) VALUES (?, ?)", (event_id, time.time()))
        await db.commit()
        return cursor.rowcount == 1
