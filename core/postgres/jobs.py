"""The job queue (core/ports.JobQueue) in the shared database: every process reaching it (chat replicas,
`pixelrag worker` on other machines) works on the same jobs. A job is taken with FOR UPDATE SKIP LOCKED,
so workers taking at once get different jobs and never wait on each other."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping, Sequence

from ..embedded.jobs import COLUMNS, SOURCE_COLUMNS, job_of_row, source_of_row
from ..records import Job, WatchedSource
from .database import connected, open_pool, retrying


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

    async def add(self, jobs: Sequence[Job], uploads: Mapping[str, bytes] | None = None) -> None:
        from psycopg.types.json import Jsonb

        now = time.time()
        await self.open()
        async with connected(self._pool) as conn:
            async with conn.transaction():
                for j in jobs:
                    await conn.execute(
                        f"INSERT INTO pixelrag_index_jobs ({COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, 'queued', '',"
                        " 0, 0, %s, 0, %s, '', %s, %s, 0)",
                        (j.id, j.source, j.scope, j.title, j.kind, j.batch, j.created or now, Jsonb({}), Jsonb({}),
                         j.notify),
                    )  # fmt: skip
                for job_id, data in (uploads or {}).items():
                    await conn.execute("INSERT INTO pixelrag_index_uploads VALUES (%s, %s)", (job_id, data))

    async def upload(self, job_id: str) -> bytes | None:
        rows = await self._run("SELECT data FROM pixelrag_index_uploads WHERE job_id = %s", (job_id,))
        return bytes(rows[0][0]) if rows else None

    async def take(self, worker: str, lease_s: float, batch: str | None = None) -> Job | None:
        now = time.time()
        mine = "AND batch = %s" if batch is not None else ""
        rows = await self._run(
            f"UPDATE pixelrag_index_jobs SET state = 'running', worker = %s, lease_until = %s, attempts = attempts + 1"
            f" WHERE id = (SELECT id FROM pixelrag_index_jobs WHERE (state = 'queued' OR (state = 'running' AND"
            f" lease_until < %s)) {mine} ORDER BY created, id FOR UPDATE SKIP LOCKED LIMIT 1) RETURNING {COLUMNS}",
            (worker, now + lease_s, now, batch) if batch is not None else (worker, now + lease_s, now),
        )
        return job_of_row(rows[0]) if rows else None

    async def renew(self, job_id: str, worker: str, lease_s: float, progress: dict) -> bool:
        from psycopg.types.json import Jsonb

        count = await self._run(
            "UPDATE pixelrag_index_jobs SET lease_until = %s, progress = %s WHERE id = %s AND worker = %s"
            " AND state = 'running'",
            (time.time() + lease_s, Jsonb(progress), job_id, worker),
        )
        return count == 1

    async def finish(self, job_id: str, worker: str, state: str, outcome: str, result: dict) -> bool:
        from psycopg.types.json import Jsonb

        async def ending() -> bool:
            async with connected(self._pool) as conn:
                async with conn.transaction():
                    cursor = await conn.execute(
                        "UPDATE pixelrag_index_jobs SET state = %s, outcome = %s, result = %s, finished = %s,"
                        " lease_until = 0 WHERE id = %s AND worker = %s AND state = 'running'",
                        (state, outcome, Jsonb(result), time.time(), job_id, worker),
                    )
                    if cursor.rowcount != 1:
                        return False
                    await conn.execute("DELETE FROM pixelrag_index_uploads WHERE job_id = %s", (job_id,))
                    return True

        await self.open()
        return await retrying(ending)

    async def untold(self, platform: str, ended_before: float) -> list[Job]:
        rows = await self._run(
            f"SELECT {COLUMNS} FROM pixelrag_index_jobs WHERE told = 0 AND notify LIKE %s AND batch IN (SELECT"
            " batch FROM pixelrag_index_jobs GROUP BY batch HAVING count(*) FILTER (WHERE state IN ('queued',"
            " 'running')) = 0 AND max(finished) < %s) ORDER BY created, id",
            (f"{platform}:%", ended_before),
        )
        return [job_of_row(row) for row in rows]

    async def cancel(self, batch: str, outcome: str) -> int:
        count = await self._run(
            "UPDATE pixelrag_index_jobs SET state = 'failed', outcome = %s, finished = %s, lease_until = 0"
            " WHERE batch = %s AND state IN ('queued', 'running')",
            (outcome, time.time(), batch),
        )
        await self._run(
            "DELETE FROM pixelrag_index_uploads WHERE job_id IN (SELECT id FROM pixelrag_index_jobs WHERE batch = %s)",
            (batch,),
        )
        return count

    async def claim_telling(self, batch: str, now: float) -> bool:
        count = await self._run("UPDATE pixelrag_index_jobs SET told = %s WHERE batch = %s AND told = 0", (now, batch))
        return count > 0

    async def jobs(self, batch: str | None = None, since: float = 0.0) -> list[Job]:
        where = "(state IN ('queued', 'running') OR created >= %s OR finished >= %s)"
        params: list = [since, since]
        if batch is not None:
            where, params = where + " AND batch = %s", params + [batch]
        rows = await self._run(f"SELECT {COLUMNS} FROM pixelrag_index_jobs WHERE {where} ORDER BY created, id", params)
        return [job_of_row(row) for row in rows]

    async def waiting(self) -> int:
        [(count,)] = await self._run("SELECT count(*) FROM pixelrag_index_jobs WHERE state = 'queued'")
        return count

    async def beat(self, worker: str, now: float) -> None:
        await self._run(
            "INSERT INTO pixelrag_index_workers VALUES (%s, %s)"
            " ON CONFLICT (worker) DO UPDATE SET seen = EXCLUDED.seen",
            (worker, now),
        )

    # --- watched sources ----------------------------------------------------------------------------
    async def add_source(self, source: WatchedSource) -> bool:
        count = await self._run(
            f"INSERT INTO pixelrag_watched ({SOURCE_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s, %s, 0, '', 0, 0, '{{}}',"
            " %s, 0) ON CONFLICT DO NOTHING",
            (source.id, source.location, source.scope, source.every_s, source.recursive, source.created,
             source.next_check, source.notify),
        )  # fmt: skip
        return count == 1

    async def sources(self) -> list[WatchedSource]:
        rows = await self._run(f"SELECT {SOURCE_COLUMNS} FROM pixelrag_watched ORDER BY created, id")
        return [source_of_row(row) for row in rows]

    async def checked(self, source_id: str, fields: dict) -> None:
        from psycopg.types.json import Jsonb

        values = {k: Jsonb(v) if k == "seen" else v for k, v in fields.items()}
        sets = ", ".join(f"{name} = %s" for name in values)
        await self._run(f"UPDATE pixelrag_watched SET {sets} WHERE id = %s", (*values.values(), source_id))

    async def remove_source(self, source_id: str) -> bool:
        return await self._run("DELETE FROM pixelrag_watched WHERE id = %s", (source_id,)) == 1

    async def tell_once(self, source_id: str, now: float) -> bool:
        count = await self._run(
            "UPDATE pixelrag_watched SET told = %s WHERE id = %s AND failures > 0 AND told < failing_since",
            (now, source_id),
        )
        return count == 1

    async def due(self, now: float, hold_s: float) -> list[WatchedSource]:
        rows = await self._run(
            f"UPDATE pixelrag_watched w SET next_check = %s FROM (SELECT id FROM pixelrag_watched WHERE next_check"
            f" <= %s FOR UPDATE SKIP LOCKED) due WHERE w.id = due.id RETURNING {_prefixed(SOURCE_COLUMNS)}",
            (now + hold_s, now),
        )
        return [source_of_row(row) for row in rows]

    async def workers(self, since: float) -> list[tuple[str, float]]:
        rows = await self._run(
            "SELECT worker, seen FROM pixelrag_index_workers WHERE seen >= %s ORDER BY worker", (since,)
        )
        return [(w, float(s)) for w, s in rows]


def _prefixed(columns: str) -> str:
    return ", ".join(f"w.{c.strip()}" for c in columns.split(","))
