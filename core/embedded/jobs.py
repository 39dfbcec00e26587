"""The job queue (core/ports.JobQueue) in a SQLite file beside the index folder: every process that
reaches the folder (the command line, the chat bots, `pixelrag worker`) shares it. A job is taken in an
IMMEDIATE transaction, so two processes never take the same one; WAL lets readers (status) read meanwhile."""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import aiosqlite

from ..errors import IndexProblem
from ..records import Job, WatchedSource
from .disk import folder_problems

SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY, source TEXT NOT NULL, scope TEXT NOT NULL, title TEXT, batch TEXT NOT NULL,
    state TEXT NOT NULL, worker TEXT NOT NULL DEFAULT '', lease_until REAL NOT NULL DEFAULT 0,
    attempts INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL, finished REAL NOT NULL DEFAULT 0,
    progress TEXT NOT NULL DEFAULT '{}', outcome TEXT NOT NULL DEFAULT '', kind TEXT NOT NULL DEFAULT 'index'
);
CREATE TABLE IF NOT EXISTS uploads (job_id TEXT PRIMARY KEY, data BLOB NOT NULL);
CREATE INDEX IF NOT EXISTS jobs_waiting ON jobs (state, created);
CREATE INDEX IF NOT EXISTS jobs_batch ON jobs (batch);
CREATE TABLE IF NOT EXISTS workers (worker TEXT PRIMARY KEY, seen REAL NOT NULL);
CREATE TABLE IF NOT EXISTS sources (
    id TEXT PRIMARY KEY, location TEXT NOT NULL, scope TEXT NOT NULL, every_s REAL NOT NULL,
    recursive INTEGER NOT NULL, created REAL NOT NULL, next_check REAL NOT NULL, checked REAL NOT NULL DEFAULT 0,
    result TEXT NOT NULL DEFAULT '', failing_since REAL NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0,
    seen TEXT NOT NULL DEFAULT '{}', notify TEXT NOT NULL DEFAULT '', told REAL NOT NULL DEFAULT 0,
    UNIQUE (location, scope)
);
"""
SOURCE_COLUMNS = (
    "id, location, scope, every_s, recursive, created, next_check, checked, result, failing_since, failures, seen,"
    " notify, told"
)
COLUMNS = (
    "id, source, scope, title, kind, batch, state, worker, lease_until, attempts, created, finished, progress, outcome,"
    " result, notify, told"
)
OPEN_ATTEMPTS = 50  # another process opening the file at once holds it for a moment

# Added after the first release of the table: a file made then gets them on opening.
ADDED = {
    "result": "TEXT NOT NULL DEFAULT '{}'",
    "notify": "TEXT NOT NULL DEFAULT ''",
    "told": "REAL NOT NULL DEFAULT 0",
}


class EmbeddedJobs:
    def __init__(self, path: Path):
        self.path = path
        self._db: aiosqlite.Connection | None = None
        self._opening = asyncio.Lock()
        self._taking = asyncio.Lock()  # one transaction at a time on this connection

    async def open(self) -> EmbeddedJobs:
        async with self._opening:
            if self._db is None:
                with folder_problems(self.path.parent):
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                db = await aiosqlite.connect(self.path, timeout=30, isolation_level=None)
                try:
                    for attempt in range(OPEN_ATTEMPTS):
                        try:  # the journal mode's change is not waited for like a lock: tried again
                            await db.execute("PRAGMA journal_mode=WAL")
                            await _create(db)
                            break
                        except sqlite3.OperationalError as exc:
                            if "locked" not in str(exc) or attempt == OPEN_ATTEMPTS - 1:
                                raise
                            await asyncio.sleep(0.1)
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

    async def add(self, jobs: Sequence[Job], uploads: Mapping[str, bytes] | None = None) -> None:
        db = await self._conn()
        now = time.time()
        async with self._taking:
            await db.execute("BEGIN IMMEDIATE")
            try:
                await db.executemany(
                    f"INSERT INTO jobs ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, 'queued', '', 0, 0, ?, 0, '{{}}', '',"
                    " '{}', ?, 0)",
                    [(j.id, j.source, j.scope, j.title, j.kind, j.batch, j.created or now, j.notify) for j in jobs],
                )
                await db.executemany("INSERT INTO uploads VALUES (?, ?)", list((uploads or {}).items()))
                await db.execute("COMMIT")
            except BaseException:
                await db.execute("ROLLBACK")
                raise

    async def upload(self, job_id: str) -> bytes | None:
        db = await self._conn()
        async with db.execute("SELECT data FROM uploads WHERE job_id = ?", (job_id,)) as cursor:
            row = await cursor.fetchone()
        return bytes(row[0]) if row else None

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
            job = job_of_row(row)
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

    async def finish(self, job_id: str, worker: str, state: str, outcome: str, result: dict) -> bool:
        db = await self._conn()
        async with self._taking:
            await db.execute("BEGIN IMMEDIATE")
            try:
                cursor = await db.execute(
                    "UPDATE jobs SET state = ?, outcome = ?, result = ?, finished = ?, lease_until = 0 WHERE id = ?"
                    " AND worker = ? AND state = 'running'",
                    (state, outcome, json.dumps(result), time.time(), job_id, worker),
                )
                ended = cursor.rowcount == 1
                if ended:
                    await db.execute("DELETE FROM uploads WHERE job_id = ?", (job_id,))
                await db.execute("COMMIT")
            except BaseException:
                await db.execute("ROLLBACK")
                raise
        return ended

    async def untold(self, platform: str, ended_before: float) -> list[Job]:
        db = await self._conn()
        async with db.execute(
            f"SELECT {COLUMNS} FROM jobs WHERE told = 0 AND notify LIKE ? AND batch IN (SELECT batch FROM jobs"
            " GROUP BY batch HAVING sum(state IN ('queued', 'running')) = 0 AND max(finished) < ?)"
            " ORDER BY created, id",
            (f"{platform}:%", ended_before),
        ) as cursor:
            return [job_of_row(row) for row in await cursor.fetchall()]

    async def cancel(self, batch: str, outcome: str) -> int:
        db = await self._conn()
        cursor = await db.execute(
            "UPDATE jobs SET state = 'failed', outcome = ?, finished = ?, lease_until = 0 WHERE batch = ?"
            " AND state IN ('queued', 'running')",
            (outcome, time.time(), batch),
        )
        await db.execute("DELETE FROM uploads WHERE job_id IN (SELECT id FROM jobs WHERE batch = ?)", (batch,))
        return cursor.rowcount

    async def claim_telling(self, batch: str, now: float) -> bool:
        db = await self._conn()
        cursor = await db.execute("UPDATE jobs SET told = ? WHERE batch = ? AND told = 0", (now, batch))
        return cursor.rowcount > 0

    async def jobs(self, batch: str | None = None, since: float = 0.0) -> list[Job]:
        db = await self._conn()
        where = "(state IN ('queued', 'running') OR created >= ? OR finished >= ?)"
        params: list[object] = [since, since]
        if batch is not None:
            where, params = where + " AND batch = ?", params + [batch]
        async with db.execute(f"SELECT {COLUMNS} FROM jobs WHERE {where} ORDER BY created, id", params) as cursor:
            return [job_of_row(row) for row in await cursor.fetchall()]

    async def waiting(self) -> int:
        db = await self._conn()
        async with db.execute("SELECT count(*) FROM jobs WHERE state = 'queued'") as cursor:
            row = await cursor.fetchone()
        return row[0] if row else 0

    async def beat(self, worker: str, now: float) -> None:
        db = await self._conn()
        await db.execute(
            "INSERT INTO workers VALUES (?, ?) ON CONFLICT (worker) DO UPDATE SET seen = excluded.seen", (worker, now)
        )

    async def workers(self, since: float) -> list[tuple[str, float]]:
        db = await self._conn()
        async with db.execute("SELECT worker, seen FROM workers WHERE seen >= ? ORDER BY worker", (since,)) as cursor:
            return [(w, s) for w, s in await cursor.fetchall()]

    # --- watched sources ----------------------------------------------------------------------------
    async def add_source(self, source: WatchedSource) -> bool:
        db = await self._conn()
        cursor = await db.execute(
            f"INSERT OR IGNORE INTO sources ({SOURCE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, 0, '', 0, 0, '{{}}', ?, 0)",
            (source.id, source.location, source.scope, source.every_s, int(source.recursive), source.created,
             source.next_check, source.notify),
        )  # fmt: skip
        return cursor.rowcount == 1

    async def sources(self) -> list[WatchedSource]:
        db = await self._conn()
        async with db.execute(f"SELECT {SOURCE_COLUMNS} FROM sources ORDER BY created, id") as cursor:
            return [source_of_row(row) for row in await cursor.fetchall()]

    async def checked(self, source_id: str, fields: dict) -> None:
        db = await self._conn()
        values = {k: json.dumps(v) if k == "seen" else v for k, v in fields.items()}
        sets = ", ".join(f"{name} = ?" for name in values)
        await db.execute(f"UPDATE sources SET {sets} WHERE id = ?", (*values.values(), source_id))

    async def remove_source(self, source_id: str) -> bool:
        db = await self._conn()
        return (await db.execute("DELETE FROM sources WHERE id = ?", (source_id,))).rowcount == 1

    async def tell_once(self, source_id: str, now: float) -> bool:
        db = await self._conn()
        cursor = await db.execute(
            "UPDATE sources SET told = ? WHERE id = ? AND failures > 0 AND told < failing_since", (now, source_id)
        )
        return cursor.rowcount == 1

    async def due(self, now: float, hold_s: float) -> list[WatchedSource]:
        """The sources due for a check, each moved `hold_s` ahead so that no other process queues it too."""
        db = await self._conn()
        async with self._taking:
            await db.execute("BEGIN IMMEDIATE")
            try:
                async with db.execute(
                    f"SELECT {SOURCE_COLUMNS} FROM sources WHERE next_check <= ? ORDER BY next_check", (now,)
                ) as cursor:
                    rows = await cursor.fetchall()
                await db.execute("UPDATE sources SET next_check = ? WHERE next_check <= ?", (now + hold_s, now))
                await db.execute("COMMIT")
            except BaseException:
                await db.execute("ROLLBACK")
                raise
        return [source_of_row(row) for row in rows]


async def _create(db: aiosqlite.Connection) -> None:
    """The tables, and the columns added since a file was made, in one transaction: two processes opening
    the queue at once must not both add a column."""
    await db.execute("BEGIN IMMEDIATE")
    try:
        for statement in filter(str.strip, SCHEMA.split(";")):
            await db.execute(statement)
        async with db.execute("PRAGMA table_info(jobs)") as cursor:
            have = {row[1] for row in await cursor.fetchall()}
        for column, declared in ADDED.items():
            if column not in have:
                await db.execute(f"ALTER TABLE jobs ADD COLUMN {column} {declared}")
        await db.execute("COMMIT")
    except BaseException:
        await db.execute("ROLLBACK")
        raise


def job_of_row(row) -> Job:
    """A job from its row (both stores' rows: PostgreSQL's JSON arrives decoded)."""
    return Job(
        id=row[0],
        source=row[1],
        scope=row[2],
        title=row[3],
        kind=row[4],
        batch=row[5],
        state=row[6],
        worker=row[7],
        lease_until=float(row[8]),
        attempts=row[9],
        created=float(row[10]),
        finished=float(row[11]),
        progress=_decoded(row[12]),
        outcome=row[13],
        result=_decoded(row[14]),
        notify=row[15],
        told=float(row[16]),
    )


def _decoded(value) -> dict:
    """A JSON column: SQLite's arrives as text, PostgreSQL's decoded."""
    return json.loads(value) if isinstance(value, str) else dict(value)


def source_of_row(row) -> WatchedSource:
    return WatchedSource(
        id=row[0],
        location=row[1],
        scope=row[2],
        every_s=row[3],
        recursive=bool(row[4]),
        created=row[5],
        next_check=row[6],
        checked=row[7],
        result=row[8],
        failing_since=row[9],
        failures=row[10],
        seen=_decoded(row[11]),
        notify=row[12],
        told=float(row[13]),
    )
