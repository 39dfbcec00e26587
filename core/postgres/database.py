"""One connection pool per process, and the schema brought up to date when it opens.

Migrations run in one transaction under an advisory lock, so replicas starting together apply each
one once; a database written by a newer pixelrag is refused rather than misread.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import time

from .. import deadline
from ..errors import BadInput, DatabaseUnavailable, IndexProblem, first_line

WAIT_S = 30.0  # for a connection, while the server restarts
MIGRATION_LOCK = 7_215_551_001  # pg_advisory_xact_lock key: pixelrag's schema changes, one at a time
# Every pooled connection's bounds: a lock another session holds, or a statement that runs on, must not
# hold a question past its deadline. Builds and migrations lift them in their own transactions (unbounded).
LOCK_TIMEOUT = "5s"
STATEMENT_TIMEOUT = "60s"
RETRY_PAUSE_S = 0.25  # before a statement the database lost (a restart) is tried again; doubled up to 2 s

# Each entry upgrades the schema by one version.
MIGRATIONS = (
    """
    CREATE TABLE pixelrag_turns (
        id BIGSERIAL PRIMARY KEY,
        platform TEXT NOT NULL, workspace TEXT NOT NULL, channel TEXT NOT NULL, thread TEXT NOT NULL,
        question TEXT NOT NULL, interpreted TEXT NOT NULL, answer TEXT NOT NULL, cited JSONB NOT NULL,
        pending_reply JSONB, created TIMESTAMPTZ NOT NULL DEFAULT now()
    );
    CREATE INDEX pixelrag_turns_thread ON pixelrag_turns (platform, workspace, channel, thread, id);
    CREATE TABLE pixelrag_events (
        event_id TEXT PRIMARY KEY, owner TEXT NOT NULL, done BOOLEAN NOT NULL DEFAULT false,
        created TIMESTAMPTZ NOT NULL DEFAULT now()
    );
    """,
    """
    ALTER TABLE pixelrag_turns ADD COLUMN retrieved JSONB NOT NULL DEFAULT '[]';
    CREATE TABLE pixelrag_feedback (
        turn_id BIGINT NOT NULL REFERENCES pixelrag_turns (id) ON DELETE CASCADE, "user" TEXT NOT NULL,
        rating TEXT NOT NULL, created TIMESTAMPTZ NOT NULL DEFAULT now(), PRIMARY KEY (turn_id, "user")
    );
    """,
    # The page index (core/postgres/pages.py). Its vectors table is created by the first build, which
    # knows the dimension; nothing here is indexed by scope, so that the planner keeps to HNSW.
    """
    CREATE EXTENSION IF NOT EXISTS vector;
    CREATE TABLE pixelrag_index (
        single BOOLEAN PRIMARY KEY DEFAULT true CHECK (single), built_with JSONB NOT NULL,
        version BIGINT NOT NULL DEFAULT 0, pages BIGINT NOT NULL DEFAULT 0,
        lexical_length DOUBLE PRECISION NOT NULL DEFAULT 0
    );
    CREATE TABLE pixelrag_documents (
        doc_id TEXT PRIMARY KEY, scope TEXT NOT NULL, record JSONB NOT NULL, position BIGSERIAL
    );
    CREATE TABLE pixelrag_pages (
        id BIGINT PRIMARY KEY, doc_id TEXT NOT NULL, page INTEGER NOT NULL, content_hash TEXT NOT NULL,
        width_pt REAL NOT NULL, height_pt REAL NOT NULL, words JSONB NOT NULL, scope TEXT NOT NULL,
        lexical_length REAL NOT NULL, UNIQUE (doc_id, page)
    );
    CREATE SEQUENCE pixelrag_pages_id_seq OWNED BY pixelrag_pages.id;
    CREATE INDEX pixelrag_pages_hash ON pixelrag_pages (content_hash);
    CREATE TABLE pixelrag_terms (
        term TEXT COLLATE "C" NOT NULL, page_id BIGINT NOT NULL, doc_id TEXT NOT NULL, scope TEXT NOT NULL,
        tf REAL NOT NULL, lexical_length REAL NOT NULL
    );
    CREATE INDEX pixelrag_terms_term ON pixelrag_terms (term);
    CREATE INDEX pixelrag_terms_doc ON pixelrag_terms (doc_id);
    CREATE TABLE pixelrag_term_pages (term TEXT COLLATE "C" PRIMARY KEY, pages INTEGER NOT NULL);
    CREATE TABLE pixelrag_jobs (
        key TEXT NOT NULL, session INTEGER NOT NULL DEFAULT pg_backend_pid(),
        started TIMESTAMPTZ NOT NULL DEFAULT now()
    );
    CREATE TABLE pixelrag_images (
        content_hash TEXT PRIMARY KEY, jpeg BYTEA NOT NULL, created TIMESTAMPTZ NOT NULL DEFAULT now()
    );
    CREATE TABLE pixelrag_sources (
        sha256 TEXT PRIMARY KEY, pdf BYTEA NOT NULL, created TIMESTAMPTZ NOT NULL DEFAULT now()
    );
    """,
    # BM25 pruning (core/postgres/page_bm25.py): bounds of each term's postings (kept by publications,
    # only ever widened: still bounds after documents are removed), and postings found by term within
    # the visible scopes, or by term on given pages.
    """
    ALTER TABLE pixelrag_term_pages ADD COLUMN max_tf REAL NOT NULL DEFAULT 0,
        ADD COLUMN min_length REAL NOT NULL DEFAULT 0;
    UPDATE pixelrag_term_pages p SET max_tf = s.max_tf, min_length = s.min_length
        FROM (SELECT term, max(tf) AS max_tf, min(lexical_length) AS min_length FROM pixelrag_terms GROUP BY term) s
        WHERE s.term = p.term;
    DROP INDEX pixelrag_terms_term;
    CREATE INDEX pixelrag_terms_term ON pixelrag_terms (term, scope, page_id);
    DO $$ BEGIN
        IF to_regclass('pixelrag_vectors') IS NOT NULL THEN  -- a scope's page sample, read by its documents
            DROP INDEX pixelrag_vectors_doc, pixelrag_vectors_sample;
            CREATE INDEX pixelrag_vectors_doc ON pixelrag_vectors (doc_id, sample);
        END IF;
    END $$;
    """,
    # How far the work on a delivery got (ThreadMemory.note): a redelivery finishes it.
    """
    ALTER TABLE pixelrag_events ADD COLUMN progress JSONB NOT NULL DEFAULT '{}';
    """,
    # Which tokenizer wrote pixelrag_terms (ranking.bm25.TERMS_VERSION): page_terms.py rebuilds older ones.
    """
    ALTER TABLE pixelrag_index ADD COLUMN terms_version INTEGER NOT NULL DEFAULT 1;
    """,
    # Questions counted against the limits and each workspace's costs per day (core/chat/: limits.py, usage.py).
    """
    CREATE TABLE pixelrag_questions (platform TEXT NOT NULL, workspace TEXT NOT NULL, user_id TEXT NOT NULL,
        at DOUBLE PRECISION NOT NULL);
    CREATE INDEX pixelrag_questions_workspace ON pixelrag_questions (platform, workspace, at);
    CREATE TABLE pixelrag_usage (platform TEXT NOT NULL, workspace TEXT NOT NULL, day TEXT NOT NULL,
        metric TEXT NOT NULL, amount BIGINT NOT NULL, PRIMARY KEY (platform, workspace, day, metric));
    """,
    # What a workspace's admins chose (core/ports.ThreadMemory.choice).
    """
    CREATE TABLE pixelrag_choices (platform TEXT NOT NULL, workspace TEXT NOT NULL, name TEXT NOT NULL,
        value TEXT NOT NULL, PRIMARY KEY (platform, workspace, name));
    """,
    # The secret page links are signed with (core/links.py), one for every process.
    """
    CREATE TABLE pixelrag_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL);
    """,
    # The HTTP API's keys, as their sha256 only (core/api_keys.py).
    """
    CREATE TABLE pixelrag_api_keys (name TEXT PRIMARY KEY, scope TEXT NOT NULL, digest TEXT NOT NULL UNIQUE,
        created DOUBLE PRECISION NOT NULL, revoked DOUBLE PRECISION);
    """,
    # What coverage gaps are made of (core/chat/gaps.py): where each question was asked, why the documents
    # did not answer it, its query's embedding.
    """
    ALTER TABLE pixelrag_turns ADD COLUMN scope TEXT NOT NULL DEFAULT '';
    ALTER TABLE pixelrag_turns ADD COLUMN gap TEXT NOT NULL DEFAULT '';
    ALTER TABLE pixelrag_turns ADD COLUMN vector BYTEA;
    CREATE INDEX pixelrag_turns_created ON pixelrag_turns (created);
    """,
    # Indexing jobs and the workers that take them (core/postgres/jobs.py).
    """
    CREATE TABLE pixelrag_index_jobs (
        id TEXT PRIMARY KEY, source TEXT NOT NULL, scope TEXT NOT NULL, title TEXT, batch TEXT NOT NULL,
        state TEXT NOT NULL, worker TEXT NOT NULL DEFAULT '', lease_until DOUBLE PRECISION NOT NULL DEFAULT 0,
        attempts INTEGER NOT NULL DEFAULT 0, created DOUBLE PRECISION NOT NULL,
        finished DOUBLE PRECISION NOT NULL DEFAULT 0, progress JSONB NOT NULL DEFAULT '{}',
        outcome TEXT NOT NULL DEFAULT '', kind TEXT NOT NULL DEFAULT 'index'
    );
    CREATE INDEX pixelrag_index_jobs_waiting ON pixelrag_index_jobs (state, created);
    CREATE INDEX pixelrag_index_jobs_batch ON pixelrag_index_jobs (batch);
    CREATE TABLE pixelrag_index_workers (worker TEXT PRIMARY KEY, seen DOUBLE PRECISION NOT NULL);
    CREATE TABLE pixelrag_watched (
        id TEXT PRIMARY KEY, location TEXT NOT NULL, scope TEXT NOT NULL, every_s DOUBLE PRECISION NOT NULL,
        recursive BOOLEAN NOT NULL, created DOUBLE PRECISION NOT NULL, next_check DOUBLE PRECISION NOT NULL,
        checked DOUBLE PRECISION NOT NULL DEFAULT 0, result TEXT NOT NULL DEFAULT '',
        failing_since DOUBLE PRECISION NOT NULL DEFAULT 0, failures INTEGER NOT NULL DEFAULT 0,
        seen JSONB NOT NULL DEFAULT '{}', notify TEXT NOT NULL DEFAULT '',
        told DOUBLE PRECISION NOT NULL DEFAULT 0, UNIQUE (location, scope)
    );
    """,
    # A job's result (its IndexReport), the thread to tell when it ends, and a chat attachment's bytes.
    """
    ALTER TABLE pixelrag_index_jobs ADD COLUMN result JSONB NOT NULL DEFAULT '{}',
        ADD COLUMN notify TEXT NOT NULL DEFAULT '', ADD COLUMN told DOUBLE PRECISION NOT NULL DEFAULT 0;
    CREATE TABLE pixelrag_index_uploads (job_id TEXT PRIMARY KEY, data BYTEA NOT NULL);
    """,
)


async def open_pool(url: str, max_size: int = 8, configure=None):
    """A pool of autocommit connections, the schema migrated; BadInput when the server can't be reached.
    `configure(conn)`: run on each new connection (session settings)."""
    try:
        import psycopg
        from psycopg_pool import AsyncConnectionPool
    except ImportError as exc:
        raise BadInput(
            "PIXELRAG_DATABASE_URL is set but psycopg is not installed: pip install 'pixelrag-docbot[postgres]'."
        ) from exc
    try:  # one direct attempt first: a pool would retry quietly, and its error hides the server's reason
        probe = await psycopg.AsyncConnection.connect(url, connect_timeout=10)
        await probe.close()
    except psycopg.OperationalError as exc:
        raise BadInput(f"Cannot reach the database in PIXELRAG_DATABASE_URL ({first_line(exc)}).") from None
    except psycopg.ProgrammingError as exc:  # an option libpq does not know, a malformed address
        raise BadInput(f"PIXELRAG_DATABASE_URL is not a usable address ({first_line(exc)}).") from None

    async def bounded(conn) -> None:
        await conn.execute(f"SET lock_timeout = '{LOCK_TIMEOUT}'")
        await conn.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT}'")
        if configure is not None:
            await configure(conn)

    # `check`: a pooled connection the server has closed (a restart, a failover) is replaced when it is
    # next handed out, instead of failing the question that gets it. A new one is waited for up to
    # WAIT_S: a restart of a few seconds costs the questions asked meanwhile that long, not an error.
    pool = AsyncConnectionPool(
        url,
        min_size=1,
        max_size=max_size,
        open=False,
        kwargs={"autocommit": True},
        configure=bounded,
        check=AsyncConnectionPool.check_connection,
        timeout=WAIT_S,
        name="pixelrag",
    )
    try:
        await pool.open(wait=True, timeout=30)
        await migrate(pool)
    except BaseException:
        await pool.close()
        raise
    return pool


@contextlib.asynccontextmanager
async def connected(pool, wait_s: float | None = None):
    """A pooled connection; the server not answering (stopped, restarting: psycopg's OperationalError,
    or no connection within the pool's wait) is DatabaseUnavailable, a message for the person asking."""
    import psycopg
    from psycopg_pool import PoolTimeout

    try:
        async with pool.connection(timeout=wait_s) as conn:
            yield conn
    except (psycopg.OperationalError, PoolTimeout) as exc:
        raise DatabaseUnavailable(
            f"The document index is unavailable right now: its database does not answer "
            f"({first_line(exc)}). Try again in a minute."
        ) from exc


async def unbounded(conn) -> None:
    """Inside a transaction: its statements may wait for locks and run as long as they need (a build's
    publication, a migration, a rebuild of the terms), whatever the connection's bounds."""
    await conn.execute("SET LOCAL lock_timeout = 0")
    await conn.execute("SET LOCAL statement_timeout = 0")


@contextlib.asynccontextmanager
async def schema_changes():
    """A migration's statements; a database user who may only read (or a read-only server) is told
    which right is missing, not shown a traceback."""
    import psycopg

    try:
        yield
    except (psycopg.errors.InsufficientPrivilege, psycopg.errors.ReadOnlySqlTransaction) as exc:
        raise BadInput(
            f"The database in PIXELRAG_DATABASE_URL needs its schema brought up to date, and this user may not "
            f"({first_line(exc)}). Run pixelrag once as a user with the CREATE right on the database's schema "
            "(and on a server that takes writes); afterwards reading needs no such right."
        ) from None


async def migrate(pool) -> None:
    """The schema brought up to date; a database that is current is only read (a user without the CREATE
    right, or a read-only replica, can still answer from it)."""
    async with pool.connection() as conn:
        if await _schema_version(conn) == len(MIGRATIONS):
            return
        async with schema_changes(), conn.transaction():
            await unbounded(conn)
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
            await conn.execute("CREATE TABLE IF NOT EXISTS pixelrag_schema (version INTEGER NOT NULL)")
            version = await _schema_version(conn)
            if version > len(MIGRATIONS):
                raise IndexProblem(
                    f"The database was written by a newer pixelrag (schema {version}, this one knows "
                    f"{len(MIGRATIONS)}); upgrade pixelrag."
                )
            for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
                await conn.execute(script)
                await conn.execute("INSERT INTO pixelrag_schema (version) VALUES (%s)", (number,))


async def _schema_version(conn) -> int:
    """The schema's version; 0 before the first migration."""
    if not (await (await conn.execute("SELECT to_regclass('pixelrag_schema') IS NOT NULL")).fetchone())[0]:
        return 0
    row = await (await conn.execute("SELECT max(version) FROM pixelrag_schema")).fetchone()
    return row[0] or 0


async def retrying(operation, within: float | None = None):
    """`await operation()`, tried again while the database is away (a restart ends the statements that
    were running; a lock another session holds outlasts LOCK_TIMEOUT). Tries stop, and a try is cut
    short, when the question's deadline is reached (`within` seconds, or WAIT_S, outside of one): the
    person asking is told then, not kept waiting."""
    left = deadline.remaining() if within is None else within
    budget = WAIT_S if left is None else max(left, 0.0)
    until, pause = time.monotonic() + budget, RETRY_PAUSE_S
    while True:
        try:
            async with asyncio.timeout(max(until - time.monotonic(), 0.0)):
                return await operation()
        except TimeoutError:
            raise DatabaseUnavailable(
                f"The document index is unavailable right now: its database does not answer (not within "
                f"{budget:.0f} s). Try again in a minute."
            ) from None
        except DatabaseUnavailable:
            if time.monotonic() + pause >= until:
                raise
            await asyncio.sleep(pause)
            pause = min(pause * 2, 2.0)


def retried(method):
    """A method whose statements only read (or may be repeated), run by retrying()."""

    @functools.wraps(method)
    async def run(*args, **kwargs):
        return await retrying(lambda: method(*args, **kwargs))

    return run
