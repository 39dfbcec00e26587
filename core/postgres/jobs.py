"""The job queue (core/ports.JobQueue) in the shared database: every process reaching it (chat replicas,
`pixelrag worker` on other machines) works on the same jobs. A job is taken with FOR UPDATE SKIP LOCKED,
so workers taking at once get different jobs and never wait on each other."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence

from ..records import Job
from .database import connected, open_pool, retrying

COLUMNS = "id, source, scope, title, batch, state, worker, lease_until, attempts, created, finished, progress, outcome"


class PostgresJobs:
    def __init__(self, url: str):
        self.url = url
        self._pool = None
        self._opening = asyncio.Lock()

    async def open(self) -> PostgresJobs:
        async with self._opening:
            if self._pool is None:
                self._pool = await open_pool(self.url, max_size=2)
        return self

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def _run(self, sql: str, params: Sequence = ()):
        await self.open()

        async def run():
            async with connected(self._pool) as conn:
                cursor = await conn.execute(sql, params)
                return await cursor.fetchall() if cursor.description else cursor.rowcount

        return await retrying(run)

    async def add(self, jobs: Sequence[Job]) -> None:
        from psycopg.types.json import Jsonb

        now = time.time()
        await self.open()
        async with connected(self._pool) as conn:
            async with conn.transaction():
                for j in jobs:
                    await conn.execute(
                        f"INSERT INTO pixelrag_index_jobs ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, 'queued', '', 0,"
                        " 0, %s, 0, %s, '')",
                        (j.id, j.source, j.scope, j.title, j.batch, j.created or now, Jsonb({})),
                    )

    async def take(self, worker: str, lease_s: float, batch: str | None = None) -> Job | None:
        now = time.time()
        mine = "AND batch = %s" if batch is not None else ""
        rows = await self._run(
            f"UPDATE pixelrag_index_jobs SET state = 'running', worker = %s, lease_until = %s, attempts = attempts + 1"
            f" WHERE id = (SELECT id FROM pixelrag_index_jobs WHERE (state = 'queued' OR (state = 'running' AND"
            f" lease_until < %s)) {mine} ORDER BY created, id FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING {COLUMNS}",
            (worker, now + lease_s, now, batch) if batch is not None else (worker, now + lease_s, now),
        )
        return _job(rows[0]) if rows else None

    async def renew(self, job_id: str, worker: str, lease_s: float, progress: dict) -> bool:
        from psycopg.types.json import Jsonb

        count = await self._run(
            "UPDATE pixelrag_index_jobs SET lease_until = %s, progress = %s WHERE id = %s AND worker = %s"
            " AND state = 'running'",
            (time.time() + lease_s, Jsonb(progress), job_id, worker),
        )
        return count == 1

    async def finish(self, job_id: str, worker: str, state: str, outcome: str) -> bool:
        count = await self._run(
            "UPDATE pixelrag_index_jobs SET state = %s, outcome = %s, finished = %s, lease_until = 0 WHERE id = %s"
            " AND worker = %s AND state = 'running'",
            (state, outcome, time.time(), job_id, worker),
        )
        return count == 1

    async def jobs(self, batch: str | None = None, since: float = 0.0) -> list[Job]:
        where = "(state IN ('queued', 'running') OR created >= %s OR finished >= %s)"
        params: list = [since, since]
        if batch is not None:
            where, params = where + " AND batch = %s", params + [batch]
        rows = await self._run(f"SELECT {COLUMNS} FROM pixelrag_index_jobs WHERE {where} ORDER BY created, id", params)
        return [_job(row) for row in rows]

    async def beat(self, worker: str, now: float) -> None:
        await self._run(
            "INSERT INTO pixelrag_index_workers VALUES (%s, %s)"
            " ON CONFLICT (worker) DO UPDATE SET seen = EXCLUDED.seen",
            (worker, now),
        )

    async def workers(self, since: float) -> list[tuple[str, float]]:
        rows = await self._run(
            "SELECT worker, seen FROM pixelrag_index_workers WHERE seen >= %s ORDER BY worker", (since,)
        )
        return [(w, float(s)) for w, s in rows]


def _job(row) -> Job:
    return Job(
        id=row[0],
        source=row[1],
        scope=row[2],
        title=row[3],
        batch=row[4],
        state=row[5],
        worker=row[6],
        lease_until=float(row[7]),
        attempts=row[8],
        created=float(row[9]),
        finished=float(row[10]),
        progress=dict(row[11]),
        outcome=row[12],
    )
