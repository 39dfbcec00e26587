"""The job queue (core/ports.JobQueue) in a SQLite file beside the index folder: every process that
reaches the folder (the command line, the chat bots, `pixelrag worker`) shares it. A job is taken in an
IMMEDIATE transaction, so two processes never take the same one; WAL lets readers (status) read meanwhile."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import aiosqlite

from ..errors import IndexProblem
from ..records import Job

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, scope TEXT NOT NULL, title TEXT, batch TEXT NOT NULL,
    state TEXT NOT NULL, worker TEXT NOT NULL DEFAULT '', lease_until REAL NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL, finished REAL NOT NULL DEFAULT 0,
    progress TEXT NOT NULL DEFAULT '{}', outcome TEXT NOT NULL DEFAULT ''
);
CREATE INDEX IF NOT EXISTS jobs_waiting ON jobs (state, created);
CREATE INDEX IF NOT EXISTS jobs_batch ON jobs (batch);
CREATE TABLE IF NOT EXISTS workers (worker TEXT PRIMARY KEY, seen REAL NOT NULL);
"""
COLUMNS = "id, source, scope, title, batch, state, worker, lease_until, attempts, created, finished, progress, outcome"


class EmbeddedJobs:
    def __init__(self, path: Path):
        self.path = path
        self._db: aiosqlite.Connection | None = None
        self._opening = asyncio.Lock()
        self._taking = asyncio.Lock()  # one transaction at a time on this connection

    async def open(self) -> EmbeddedJobs:
        async with self._opening:
            if self._db is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = await aiosqlite.connect(self.path, timeout=30, isolation_level=None)
                try:
                    await db.execute("PRAGMA journal_mode=WAL")
                    await db.executescript(SCHEMA)
                except sqlite3.DatabaseError as exc:
                    await db.close()
                    raise IndexProblem(f"{self.path}: the job queue cannot be used ({exc}).") from None
                self._db = db
        return self

    async def close(self) -> None:
        if self._db is not None:
            await self._db.close()
            self._db = None

    async def _conn(self) -> aiosqlite.Connection:
        await self.open()
        assert self._db is not None
        return self._db

    async def add(self, jobs: Sequence[Job]) -> None:
        db = await self._conn()
        now = time.time()
        await db.executemany(
            f"INSERT INTO jobs ({COLUMNS}) VALUES (?, ?, ?, ?, ?, 'queued', '', 0, 0, ?, 0, '{{}}', '')",
            [(j.id, j.source, j.scope, j.title, j.batch, j.created or now) for j in jobs],
        )

    async def take(self, worker: str, lease_s: float, batch: str | None = None) -> Job | None:
        db = await self._conn()
        now = time.time()
        mine = "AND batch = ?" if batch is not None else ""
        async with self._taking:
            return await self._take(db, worker, lease_s, batch, now, mine)

    async def _take(self, db, worker: str, lease_s: float, batch: str | None, now: float, mine: str) -> Job | None:
        await db.execute("BEGIN IMMEDIATE")  # one taker at a time, across processes
        try:
            async with db.execute(
                f"SELECT {COLUMNS} FROM jobs WHERE (state = 'queued' OR (state = 'running' AND lease_until < ?))"
                f" {mine} ORDER BY created, id LIMIT 1",
                (now, batch) if batch is not None else (now,),
            ) as cursor:
                row = await cursor.fetchone()
            if row is None:
                await db.execute("COMMIT")
                return None
            job = _job(row)
            await db.execute(
                "UPDATE jobs SET state = 'running', worker = ?, lease_until = ?, attempts = attempts + 1 WHERE id = ?",
                (worker, now + lease_s, job.id),
            )
            await db.execute("COMMIT")
        except BaseException:
            await db.execute("ROLLBACK")
            raise
        return replace(job, state="running", worker=worker, lease_until=now + lease_s, attempts=job.attempts + 1)

    async def renew(self, job_id: str, worker: str, lease_s: float, progress: dict) -> bool:
        db = await self._conn()
        cursor = await db.execute(
            "UPDATE jobs SET lease_until = ?, progress = ? WHERE id = ? AND worker = ? AND state = 'running'",
            (time.time() + lease_s, json.dumps(progress), job_id, worker),
        )
        return cursor.rowcount == 1

    async def finish(self, job_id: str, worker: str, state: str, outcome: str) -> bool:
        db = await self._conn()
        cursor = await db.execute(
            "UPDATE jobs SET state = ?, outcome = ?, finished = ?, lease_until = 0 WHERE id = ? AND worker = ?"
            " AND state = 'running'",
            (state, outcome, time.time(), job_id, worker),
        )
        return cursor.rowcount == 1

    async def jobs(self, batch: str | None = None, since: float = 0.0) -> list[Job]:
        db = await self._conn()
        where = "(state IN ('queued', 'running') OR created >= ? OR finished >= ?)"
        params: list[object] = [since, since]
        if batch is not None:
            where, params = where + " AND batch = ?", params + [batch]
        async with db.execute(f"SELECT {COLUMNS} FROM jobs WHERE {where} ORDER BY created, id", params) as cursor:
            return [_job(row) for row in await cursor.fetchall()]

    async def beat(self, worker: str, now: float) -> None:
        db = await self._conn()
        await db.execute(
            "INSERT INTO workers VALUES (?, ?) ON CONFLICT (worker) DO UPDATE SET seen = excluded.seen", (worker, now)
        )

    async def workers(self, since: float) -> list[tuple[str, float]]:
        db = await self._conn()
        async with db.execute("SELECT worker, seen FROM workers WHERE seen >= ? ORDER BY worker", (since,)) as cursor:
            return [(w, s) for w, s in await cursor.fetchall()]


def _job(row) -> Job:
    return Job(
        id=row[0],
        source=row[1],
        scope=row[2],
        title=row[3],
        batch=row[4],
        state=row[5],
        worker=row[6],
        lease_until=row[7],
        attempts=row[8],
        created=row[9],
        finished=row[10],
        progress=json.loads(row[11]),
        outcome=row[12],
    )
