"""Thread memory and delivery claims for the chat adapters, in SQLite (aiosqlite).

A thread is keyed by (platform, workspace, channel, thread). Each turn stores the question, the
interpreted question, the answer and the cited pages; context resolution reads them back. A turn
whose reply could not be posted keeps the rendered reply, so that asking again re-posts it. People's
ratings of an answer (👍 / 👎, the latest per person) are kept with its turn for feedback exports.

Deliveries are claimed, not just seen: a claim is finished when the answer is out. A bot that dies
mid-answer leaves its claim unfinished, and the platform's redelivery is answered by the next
process (or, after the lease, by anyone): once, not never.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
import uuid
from collections.abc import Mapping
from pathlib import Path

import aiosqlite

from ..chat.limits import KEEP_QUESTIONS_S
from ..chat.usage import day_of
from ..errors import IndexProblem
from ..ports import ThreadKey
from ..records import RATED_BAD, ApiKey, Exchange, GapQuestion, Rated

# Each entry upgrades the schema by one version (PRAGMA user_version); databases of any earlier
# version are brought up to date when opened.
MIGRATIONS = (
    """
    CREATE TABLE IF NOT EXISTS turns (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        platform TEXT NOT NULL, workspace TEXT NOT NULL, channel TEXT NOT NULL, thread TEXT NOT NULL,
        question TEXT NOT NULL, interpreted TEXT NOT NULL, answer TEXT NOT NULL, cited TEXT NOT NULL,
        created REAL NOT NULL
    );
    CREATE INDEX IF NOT EXISTS turns_thread ON turns(platform, workspace, channel, thread);
    CREATE TABLE IF NOT EXISTS events (event_id TEXT PRIMARY KEY, created REAL NOT NULL);
    """,
    """
    ALTER TABLE events ADD COLUMN done INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE events ADD COLUMN owner TEXT NOT NULL DEFAULT '';
    ALTER TABLE turns ADD COLUMN pending_reply TEXT;
    """,
    """
    ALTER TABLE turns ADD COLUMN retrieved TEXT NOT NULL DEFAULT '[]';
    CREATE TABLE IF NOT EXISTS feedback (
        turn_id INTEGER NOT NULL, user TEXT NOT NULL, rating TEXT NOT NULL, created REAL NOT NULL,
        PRIMARY KEY (turn_id, user)
    );
    """,
    """
    ALTER TABLE events ADD COLUMN progress TEXT NOT NULL DEFAULT '{}';
    """,
    # Questions counted against the limits and each workspace's costs per day (core/chat/: limits.py, usage.py).
    """
    CREATE TABLE IF NOT EXISTS questions (platform TEXT NOT NULL, workspace TEXT NOT NULL, user TEXT NOT NULL,
        at REAL NOT NULL);
    CREATE INDEX IF NOT EXISTS questions_workspace ON questions(platform, workspace, at);
    CREATE TABLE IF NOT EXISTS usage (platform TEXT NOT NULL, workspace TEXT NOT NULL, day TEXT NOT NULL,
        metric TEXT NOT NULL, amount INTEGER NOT NULL, PRIMARY KEY (platform, workspace, day, metric));
    """,
    # What a workspace's admins chose (core/ports.ThreadMemory.choice).
    """
    CREATE TABLE IF NOT EXISTS choices (platform TEXT NOT NULL, workspace TEXT NOT NULL, name TEXT NOT NULL,
        value TEXT NOT NULL, PRIMARY KEY (platform, workspace, name));
    """,
    # The HTTP API's keys, as their sha256 only (core/api_keys.py).
    """
    CREATE TABLE IF NOT EXISTS api_keys (name TEXT PRIMARY KEY, scope TEXT NOT NULL, digest TEXT NOT NULL UNIQUE,
        created REAL NOT NULL, revoked REAL);
    """,
    # What coverage gaps are made of (core/chat/gaps.py): where each question was asked, why the documents
    # did not answer it, its query's embedding.
    """
    ALTER TABLE turns ADD COLUMN scope TEXT NOT NULL DEFAULT '';
    ALTER TABLE turns ADD COLUMN gap TEXT NOT NULL DEFAULT '';
    ALTER TABLE turns ADD COLUMN vector BLOB;
    CREATE INDEX IF NOT EXISTS turns_created ON turns(created);
    """,
)

KEEP_EVENTS_S = 7 * 24 * 3600  # platforms redeliver within minutes; a week is ample


class EmbeddedThreads:
    """ThreadMemory (core/ports.py) in one SQLite file: the embedded default."""

    def __init__(self, path: Path, lease_s: float = 300.0):
        self.path = path
        self.lease_s = lease_s  # after this, an unfinished claim of a live process may be taken over
        self.owner = uuid.uuid4().hex  # this process's claims
        self._db: aiosqlite.Connection | None = None
        self._closed = False
        self._opening = asyncio.Lock()  # two first deliveries at once must not both migrate

    async def open(self) -> EmbeddedThreads:
        if self._closed:
            raise RuntimeError("the thread store is closed")  # a late task must not leave a connection open
        async with self._opening:
            if self._db is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                db = await aiosqlite.connect(self.path)
                try:
                    await migrate(db)
                    await self._prune(db)
                except sqlite3.DatabaseError as exc:  # not a database, damaged, or one that cannot be written
                    await db.close()
                    raise IndexProblem(
                        f"{self.path}: the thread memory cannot be used ({exc}). Move the file aside (a new one "
                        "is started, without the threads' history) or make it writable."
                    ) from None
                except BaseException:
                    await db.close()
                    raise
                self._db = db
        return self

    async def _prune(self, db: aiosqlite.Connection) -> None:
        """Deliveries finished long ago dropped; left for later where the file may only be read."""
        try:
            await db.execute("DELETE FROM events WHERE done = 1 AND created < ?", (time.time() - KEEP_EVENTS_S,))
            await db.commit()
        except sqlite3.OperationalError as exc:
            if "readonly" not in str(exc):
                raise
            await db.rollback()

    async def close(self) -> None:
        self._closed = True
        if self._db is not None:
            await self._db.close()
            self._db = None

    async def _conn(self) -> aiosqlite.Connection:
        await self.open()
        assert self._db is not None
        return self._db

    async def add(self, key: ThreadKey, exchange: Exchange, pending_reply: object = None) -> int:
        """Store a turn; `pending_reply` is the rendered reply while it is not yet posted."""
        db = await self._conn()
        cursor = await db.execute(
            "INSERT INTO turns (platform, workspace, channel, thread, question, interpreted, answer, cited, retrieved,"
            " created, pending_reply, scope, gap, vector) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                *key,
                exchange.question,
                exchange.interpreted,
                exchange.answer,
                json.dumps(exchange.cited),
                json.dumps(exchange.retrieved),
                time.time(),
                None if pending_reply is None else json.dumps(pending_reply),
                exchange.scope,
                exchange.gap,
                exchange.vector or None,
            ),
        )
        await db.commit()
        assert cursor.lastrowid is not None  # set by a successful INSERT (the stubs allow None)
        return cursor.lastrowid

    async def keep_reply(self, turn_id: int, rendered: object) -> None:
        db = await self._conn()
        await db.execute("UPDATE turns SET pending_reply = ? WHERE id = ?", (json.dumps(rendered), turn_id))
        await db.commit()

    async def rate(self, turn_id: int, user: str, rating: str) -> bool:
        """The user's latest rating of a turn's answer; False when no such turn is stored."""
        db = await self._conn()
        async with db.execute("SELECT 1 FROM turns WHERE id = ?", (turn_id,)) as cursor:
            if await cursor.fetchone() is None:
                return False
        await db.execute(
            "INSERT INTO feedback (turn_id, user, rating, created) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (turn_id, user) DO UPDATE SET rating = excluded.rating, created = excluded.created",
            (turn_id, user, rating, time.time()),
        )
        await db.commit()
        return True

    async def ratings(self, rating: str) -> list[Rated]:
        """Every turn someone last rated `rating`, with what was asked, retrieved and cited."""
        db = await self._conn()
        async with db.execute(
            "SELECT t.id, t.platform, t.workspace, t.question, t.interpreted, t.answer, t.retrieved, t.cited,"
            " f.user, f.created FROM feedback f JOIN turns t ON t.id = f.turn_id WHERE f.rating = ?"
            " ORDER BY f.created",
            (rating,),
        ) as cursor:
            rows = await cursor.fetchall()
        return [Rated(r[0], r[1], r[2], r[3], r[4], r[5], _pages(r[6]), _pages(r[7]), r[8], r[9]) for r in rows]

    async def gap_questions(self, since: float) -> list[GapQuestion]:
        """Questions asked since `since` whose answer stated a limitation or abstained, or that someone last
        rated bad; oldest first."""
        db = await self._conn()
        async with db.execute(
            "SELECT t.id, t.scope, t.platform, t.workspace, t.question, t.interpreted,"
            " CASE WHEN EXISTS (SELECT 1 FROM feedback f WHERE f.turn_id = t.id AND f.rating = 'bad') THEN ?"
            " ELSE t.gap END, t.created, t.retrieved, t.vector FROM turns t WHERE t.created >= ? AND (t.gap != ''"
            " OR EXISTS (SELECT 1 FROM feedback f WHERE f.turn_id = t.id AND f.rating = 'bad')) ORDER BY t.id",
            (RATED_BAD, since),
        ) as cursor:
            rows = await cursor.fetchall()
        return [GapQuestion(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], _pages(r[8]), r[9] or b"") for r in rows]

    async def delivered(self, turn_id: int) -> None:
        db = await self._conn()
        await db.execute("UPDATE turns SET pending_reply = NULL WHERE id = ?", (turn_id,))
        await db.commit()

    async def pending_reply(self, key: ThreadKey, question: str) -> tuple[int, object] | None:
        """The stored, unposted reply to the thread's latest turn when it asked `question`."""
        db = await self._conn()
        async with db.execute(
            "SELECT id, question, pending_reply FROM turns WHERE platform=? AND workspace=? AND channel=? AND thread=?"
            " ORDER BY id DESC LIMIT 1",
            key,
        ) as cursor:
            row = await cursor.fetchone()
        if row is None or row[2] is None or row[1] != question:
            return None
        return row[0], json.loads(row[2])

    async def history(self, key: ThreadKey, limit: int = 4) -> tuple[Exchange, ...]:
        """The latest `limit` exchanges of a thread, oldest first."""
        db = await self._conn()
        async with db.execute(
            "SELECT question, interpreted, answer, cited FROM turns"
            " WHERE platform=? AND workspace=? AND channel=? AND thread=? ORDER BY id DESC LIMIT ?",
            (*key, limit),
        ) as cursor:
            rows = list(await cursor.fetchall())  # a list already; typed as any iterable
        return tuple(Exchange(q, a, i, tuple(tuple(c) for c in json.loads(cited))) for q, i, a, cited in reversed(rows))

    async def knows_thread(self, key: ThreadKey) -> bool:
        return bool(await self.history(key, limit=1))

    async def claim(self, event_id: str) -> bool:
        """True when this process should handle the delivery: the first time, or again when an earlier
        claim was never finished (its process died, or its lease ran out)."""
        db = await self._conn()
        now = time.time()
        cursor = await db.execute(
            "INSERT OR IGNORE INTO events (event_id, created, done, owner) VALUES (?, ?, 0, ?)",
            (event_id, now, self.owner),
        )
        if cursor.rowcount != 1:
            cursor = await db.execute(
                "UPDATE events SET created = ?, owner = ? WHERE event_id = ? AND done = 0"
                " AND (owner != ? OR created < ?)",
                (now, self.owner, event_id, self.owner, now - self.lease_s),
            )
        await db.commit()
        return cursor.rowcount == 1

    async def finish(self, *event_ids: str) -> None:
        """The deliveries are handled: later redeliveries are dropped."""
        db = await self._conn()
        await db.executemany("UPDATE events SET done = 1 WHERE event_id = ?", [(e,) for e in event_ids])
        await db.commit()

    async def note(self, event_id: str, **progress: object) -> None:
        db = await self._conn()
        merged = {**await self.progress(event_id), **progress}
        await db.execute("UPDATE events SET progress = ? WHERE event_id = ?", (json.dumps(merged), event_id))
        await db.commit()

    async def progress(self, event_id: str) -> dict:
        db = await self._conn()
        async with db.execute("SELECT progress FROM events WHERE event_id = ?", (event_id,)) as cursor:
            row = await cursor.fetchone()
        return json.loads(row[0]) if row else {}

    async def asked(self, platform: str, workspace: str, user: str | None, since: float) -> list[float]:
        db = await self._conn()
        sql = "SELECT at FROM questions WHERE platform = ? AND workspace = ? AND at >= ?"
        params: tuple = (platform, workspace, since)
        if user is not None:
            sql, params = sql + " AND user = ?", (*params, user)
        async with db.execute(sql + " ORDER BY at", params) as cursor:
            return [row[0] for row in await cursor.fetchall()]

    async def record_question(self, platform: str, workspace: str, user: str, at: float) -> None:
        db = await self._conn()
        await db.execute("DELETE FROM questions WHERE at < ?", (at - KEEP_QUESTIONS_S,))
        await db.execute("INSERT INTO questions VALUES (?, ?, ?, ?)", (platform, workspace, user, at))
        await db.commit()

    async def add_usage(self, platform: str, workspace: str, counts: Mapping[str, int], at: float) -> None:
        db = await self._conn()
        await db.executemany(
            "INSERT INTO usage VALUES (?, ?, ?, ?, ?) ON CONFLICT (platform, workspace, day, metric) "
            "DO UPDATE SET amount = amount + excluded.amount",
            [(platform, workspace, day_of(at), metric, int(n)) for metric, n in counts.items() if n],
        )
        await db.commit()

    async def choose(self, platform: str, workspace: str, name: str, value: str) -> None:
        db = await self._conn()
        await db.execute(
            "INSERT INTO choices VALUES (?, ?, ?, ?) ON CONFLICT (platform, workspace, name) "
            "DO UPDATE SET value = excluded.value",
            (platform, workspace, name, value),
        )
        await db.commit()

    async def choice(self, platform: str, workspace: str, name: str) -> str | None:
        db = await self._conn()
        sql = "SELECT value FROM choices WHERE platform = ? AND workspace = ? AND name = ?"
        async with db.execute(sql, (platform, workspace, name)) as cursor:
            row = await cursor.fetchone()
        return row[0] if row else None

    async def add_key(self, name: str, scope: str, digest: str, at: float) -> bool:
        db = await self._conn()
        cursor = await db.execute(
            "INSERT INTO api_keys VALUES (?, ?, ?, ?, NULL) ON CONFLICT (name) DO NOTHING", (name, scope, digest, at)
        )
        await db.commit()
        return cursor.rowcount == 1

    async def key(self, digest: str) -> tuple[str, str] | None:
        db = await self._conn()
        async with db.execute(
            "SELECT name, scope FROM api_keys WHERE digest = ? AND revoked IS NULL", (digest,)
        ) as cur:
            row = await cur.fetchone()
        return (row[0], row[1]) if row else None

    async def api_keys(self) -> list[ApiKey]:
        db = await self._conn()
        async with db.execute("SELECT name, scope, created, revoked FROM api_keys ORDER BY created") as cursor:
            return [ApiKey(*row) for row in await cursor.fetchall()]

    async def revoke_key(self, name: str, at: float) -> bool:
        db = await self._conn()
        cursor = await db.execute("UPDATE api_keys SET revoked = ? WHERE name = ? AND revoked IS NULL", (at, name))
        await db.commit()
        return cursor.rowcount == 1

    async def usage(self, platform: str | None, workspace: str | None, since: float) -> dict[str, int]:
        db = await self._conn()
        sql, params = "SELECT metric, sum(amount) FROM usage WHERE day >= ?", [day_of(since)]
        for column, value in (("platform", platform), ("workspace", workspace)):
            if value is not None:
                sql += f" AND {column} = ?"
                params.append(value)
        async with db.execute(sql + " GROUP BY metric", params) as cursor:
            return {metric: int(total) for metric, total in await cursor.fetchall()}


def _pages(raw: str) -> tuple[tuple[str, int], ...]:
    return tuple((doc, page) for doc, page in json.loads(raw))


async def migrate(db: aiosqlite.Connection) -> None:
    async with db.execute("PRAGMA user_version") as cursor:
        row = await cursor.fetchone()
    assert row is not None  # PRAGMA user_version always answers one row
    (version,) = row
    # Databases from before versioning are version 0 with the first schema: its CREATEs are idempotent.
    if version > len(MIGRATIONS):
        raise IndexProblem(
            f"The thread database was written by a newer pixelrag (schema {version}, this one knows "
            f"{len(MIGRATIONS)}); upgrade pixelrag."
        )
    for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
        for statement in (s.strip() for s in script.split(";")):
            if statement:
                await db.execute(statement)
        await db.execute(f"PRAGMA user_version = {number}")
    await db.commit()
