"""ThreadMemory (core/ports.py) in PostgreSQL, shared by every replica of every bot.

A claim is one atomic INSERT … ON CONFLICT: of two replicas given the same delivery, exactly one
gets it. An unfinished claim is taken over only after the lease, by any replica: a live replica
may still be answering, and a dead one's work is redone when the platform redelivers. Times are
the database's, so replicas with skewed clocks agree.
"""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import Mapping

from ..chat.limits import KEEP_QUESTIONS_S
from ..chat.usage import day_of
from ..ports import ThreadKey
from ..records import RATED_BAD, ApiKey, Exchange, GapQuestion, Rated
from .database import connected, open_pool, retrying

KEEP_EVENTS = "7 days"  # platforms redeliver within minutes
CLAIM_WAIT_S = 2.0  # a delivery is claimed within Slack's 3 s to acknowledge it, or left to be redelivered


class PostgresThreads:
    def __init__(self, url: str, lease_s: float = 150.0):
        self.url = url
        self.lease_s = lease_s  # longer than an answer may take (its deadline), shorter than Slack's last retry
        self.owner = uuid.uuid4().hex
        self._pool = None
        self._closed = False
        self._opening = asyncio.Lock()  # first deliveries at once must share one pool

    async def open(self) -> PostgresThreads:
        if self._closed:
            raise RuntimeError("the thread store is closed")
        async with self._opening:
            if self._pool is None:
                from psycopg.errors import InsufficientPrivilege, ReadOnlySqlTransaction

                pool = await open_pool(self.url)
                async with pool.connection() as conn:
                    with contextlib.suppress(InsufficientPrivilege, ReadOnlySqlTransaction):  # pruning can wait
                        await conn.execute(
                            "DELETE FROM pixelrag_events WHERE done AND created < now() - %s::interval", (KEEP_EVENTS,)
                        )
                self._pool = pool
        return self

    async def close(self) -> None:
        self._closed = True
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    async def _run(self, sql: str, params: tuple = (), wait_s: float | None = None):
        """One statement, tried again while the database restarts (within `wait_s`, else the question's
        deadline)."""
        await self.open()

        async def run():
            async with connected(self._pool, wait_s) as conn:
                cursor = await conn.execute(sql, params)
                return await cursor.fetchall() if cursor.description else cursor.rowcount

        return await retrying(run, wait_s)

    async def add(self, key: ThreadKey, exchange: Exchange, pending_reply: object = None) -> int:
        from psycopg.types.json import Jsonb

        [(turn_id,)] = await self._run(
            "INSERT INTO pixelrag_turns (platform, workspace, channel, thread, question, interpreted, answer, cited,"
            " retrieved, pending_reply, scope, gap, vector) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)"
            " RETURNING id",
            (
                *key,
                exchange.question,
                exchange.interpreted,
                exchange.answer,
                Jsonb(list(exchange.cited)),
                Jsonb(list(exchange.retrieved)),
                None if pending_reply is None else Jsonb(pending_reply),
                exchange.scope,
                exchange.gap,
                exchange.vector or None,
            ),
        )
        return turn_id

    async def keep_reply(self, turn_id: int, rendered: object) -> None:
        from psycopg.types.json import Jsonb

        await self._run("UPDATE pixelrag_turns SET pending_reply = %s WHERE id = %s", (Jsonb(rendered), turn_id))

    async def rate(self, turn_id: int, user: str, rating: str) -> bool:
        rows = await self._run(
            'INSERT INTO pixelrag_feedback (turn_id, "user", rating) SELECT id, %s, %s FROM pixelrag_turns WHERE id '
            "= %s"
            ' ON CONFLICT (turn_id, "user") DO UPDATE SET rating = EXCLUDED.rating, created = now() RETURNING turn_id',
            (user, rating, turn_id),
        )
        return bool(rows)

    async def ratings(self, rating: str) -> list[Rated]:
        rows = await self._run(
            'SELECT t.id, t.platform, t.workspace, t.question, t.interpreted, t.answer, t.retrieved, t.cited, f."user",'
            " extract(epoch FROM f.created) FROM pixelrag_feedback f JOIN pixelrag_turns t ON t.id = f.turn_id"
            " WHERE f.rating = %s ORDER BY f.created",
            (rating,),
        )
        return [
            Rated(
                r[0], r[1], r[2], r[3], r[4], r[5], tuple(map(tuple, r[6])), tuple(map(tuple, r[7])), r[8], float(r[9])
            )
            for r in rows
        ]

    async def gap_questions(self, since: float) -> list[GapQuestion]:
        rows = await self._run(
            "SELECT t.id, t.scope, t.platform, t.workspace, t.question, t.interpreted, CASE WHEN EXISTS (SELECT 1"
            " FROM pixelrag_feedback f WHERE f.turn_id = t.id AND f.rating = 'bad') THEN %s ELSE t.gap END,"
            " extract(epoch FROM t.created), t.retrieved, t.vector FROM pixelrag_turns t"
            " WHERE t.created >= to_timestamp(%s) AND (t.gap != '' OR EXISTS (SELECT 1 FROM pixelrag_feedback f"
            " WHERE f.turn_id = t.id AND f.rating = 'bad')) ORDER BY t.id",
            (RATED_BAD, since),
        )
        return [
            GapQuestion(
                r[0], r[1], r[2], r[3], r[4], r[5], r[6], float(r[7]), tuple(map(tuple, r[8])), bytes(r[9] or b"")
            )
            for r in rows
        ]

    async def delivered(self, turn_id: int) -> None:
        await self._run("UPDATE pixelrag_turns SET pending_reply = NULL WHERE id = %s", (turn_id,))

    async def pending_reply(self, key: ThreadKey, question: str) -> tuple[int, object] | None:
        rows = await self._run(
            "SELECT id, question, pending_reply FROM pixelrag_turns WHERE platform = %s AND workspace = %s"
            " AND channel = %s AND thread = %s ORDER BY id DESC LIMIT 1",
            key,
        )
        if not rows or rows[0][2] is None or rows[0][1] != question:
            return None
        return rows[0][0], rows[0][2]

    async def history(self, key: ThreadKey, limit: int = 4) -> tuple[Exchange, ...]:
        rows = await self._run(
            "SELECT question, interpreted, answer, cited FROM pixelrag_turns WHERE platform = %s AND workspace = %s"
            " AND channel = %s AND thread = %s ORDER BY id DESC LIMIT %s",
            (*key, limit),
        )
        return tuple(Exchange(q, a, i, tuple(tuple(c) for c in cited)) for q, i, a, cited in reversed(rows))

    async def knows_thread(self, key: ThreadKey) -> bool:
        return bool(await self.history(key, limit=1))

    async def claim(self, event_id: str) -> bool:
        rows = await self._run(
            "INSERT INTO pixelrag_events AS e (event_id, owner) VALUES (%s, %s)"
            " ON CONFLICT (event_id) DO UPDATE SET owner = EXCLUDED.owner, created = now()"
            " WHERE NOT e.done AND e.created < now() - make_interval(secs => %s)"
            " RETURNING event_id",
            (event_id, self.owner, self.lease_s),
            wait_s=CLAIM_WAIT_S,
        )
        return bool(rows)

    async def finish(self, *event_ids: str) -> None:
        await self._run("UPDATE pixelrag_events SET done = true WHERE event_id = ANY(%s)", (list(event_ids),))

    async def note(self, event_id: str, **progress: object) -> None:
        from psycopg.types.json import Jsonb

        await self._run(
            "UPDATE pixelrag_events SET progress = progress || %s WHERE event_id = %s", (Jsonb(progress), event_id)
        )

    async def progress(self, event_id: str) -> dict:
        rows = await self._run("SELECT progress FROM pixelrag_events WHERE event_id = %s", (event_id,))
        return rows[0][0] if rows else {}

    async def asked(self, platform: str, workspace: str, user: str | None, since: float) -> list[float]:
        rows = await self._run(
            "SELECT at FROM pixelrag_questions WHERE platform = %s AND workspace = %s AND at >= %s"
            " AND (%s::text IS NULL OR user_id = %s) ORDER BY at",
            (platform, workspace, since, user, user),
        )
        return [row[0] for row in rows]

    async def record_question(self, platform: str, workspace: str, user: str, at: float) -> None:
        await self._run("DELETE FROM pixelrag_questions WHERE at < %s", (at - KEEP_QUESTIONS_S,))
        await self._run("INSERT INTO pixelrag_questions VALUES (%s, %s, %s, %s)", (platform, workspace, user, at))

    async def add_usage(self, platform: str, workspace: str, counts: Mapping[str, int], at: float) -> None:
        spent = {metric: int(n) for metric, n in counts.items() if n}
        if spent:  # one statement for all of a question's metrics
            await self._run(
                "INSERT INTO pixelrag_usage SELECT %s, %s, %s, metric, amount"
                " FROM unnest(%s::text[], %s::bigint[]) AS spent(metric, amount)"
                " ON CONFLICT (platform, workspace, day, metric)"
                " DO UPDATE SET amount = pixelrag_usage.amount + EXCLUDED.amount",
                (platform, workspace, day_of(at), list(spent), list(spent.values())),
            )

    async def choose(self, platform: str, workspace: str, name: str, value: str) -> None:
        await self._run(
            "INSERT INTO pixelrag_choices VALUES (%s, %s, %s, %s) ON CONFLICT (platform, workspace, name)"
            " DO UPDATE SET value = EXCLUDED.value",
            (platform, workspace, name, value),
        )

    async def choice(self, platform: str, workspace: str, name: str) -> str | None:
        rows = await self._run(
            "SELECT value FROM pixelrag_choices WHERE platform = %s AND workspace = %s AND name = %s",
            (platform, workspace, name),
        )
        return rows[0][0] if rows else None

    async def add_key(self, name: str, scope: str, digest: str, at: float) -> bool:
        rows = await self._run(
            "INSERT INTO pixelrag_api_keys VALUES (%s, %s, %s, %s, NULL) ON CONFLICT (name) DO NOTHING RETURNING name",
            (name, scope, digest, at),
        )
        return bool(rows)

    async def key(self, digest: str) -> tuple[str, str] | None:
        rows = await self._run(
            "SELECT name, scope FROM pixelrag_api_keys WHERE digest = %s AND revoked IS NULL", (digest,)
        )
        return (rows[0][0], rows[0][1]) if rows else None

    async def api_keys(self) -> list[ApiKey]:
        rows = await self._run("SELECT name, scope, created, revoked FROM pixelrag_api_keys ORDER BY created")
        return [ApiKey(*row) for row in rows]

    async def revoke_key(self, name: str, at: float) -> bool:
        rows = await self._run(
            "UPDATE pixelrag_api_keys SET revoked = %s WHERE name = %s AND revoked IS NULL RETURNING name", (at, name)
        )
        return bool(rows)

    async def usage(self, platform: str | None, workspace: str | None, since: float) -> dict[str, int]:
        rows = await self._run(
            "SELECT metric, sum(amount) FROM pixelrag_usage WHERE day >= %s AND (%s::text IS NULL OR platform = %s)"
            " AND (%s::text IS NULL OR workspace = %s) GROUP BY metric",
            (day_of(since), platform, platform, workspace, workspace),
        )
        return {metric: int(total) for metric, total in rows}
