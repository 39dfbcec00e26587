"""The page index (PageStore in core/ports.py) in PostgreSQL with pgvector, shared by every process.

What the embedded store keeps in files is in tables here: documents, pages with their words, page
images and source PDFs, vectors (pgvector, HNSW; halfvec above vector's 2,000-dimension index limit)
and BM25 postings (one row per page and term, and each term's page count). A build publishes in one
transaction: readers see a document's old pages or its new ones, never a mix, and a build that fails or is killed leaves
the previous state. Builds of one document (scope and origin) are kept apart by an advisory lock.

A question never scores every page (page_search.py): it reads the index's version, and what its
scope sees at that version is kept in memory (scope_views.py). A build writes through page_builds.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import secrets
from collections.abc import Callable, Sequence

from ..errors import BadInput, IndexProblem
from ..records import Document
from ..scopes import visible_scopes
from .database import connected, open_pool, retried, unbounded
from .page_builds import PostgresBuild
from .page_search import PostgresSearch, configure
from .page_terms import refresh_terms
from .scope_views import ScopeViews


def _lock_key(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big", signed=True)


class PostgresPages:
    def __init__(self, url: str):
        self.url = url
        self._pool = None
        self._opening = asyncio.Lock()  # the first questions at once must share one pool
        self._views = ScopeViews()

    async def connection(self):
        if self._pool is None:
            async with self._opening:
                if self._pool is None:
                    pool = await open_pool(self.url, configure=configure)
                    try:
                        await refresh_terms(pool)
                    except BaseException:
                        await pool.close()
                        raise
                    self._pool = pool
        return connected(self._pool)

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    # --- reading ---------------------------------------------------------------------------------
    async def _index_row(self, conn) -> tuple[dict, int, float] | None:
        row = await (await conn.execute("SELECT built_with, pages, lexical_length FROM pixelrag_index")).fetchone()
        return (row[0], row[1], row[2]) if row and row[1] else None

    @retried
    async def documents(self, scope: str) -> list[Document]:
        async with await self.connection() as conn:
            rows = await (
                await conn.execute(
                    "SELECT record FROM pixelrag_documents WHERE scope = ANY(%s) ORDER BY position",
                    (visible_scopes(scope),),
                )
            ).fetchall()
        return [Document(**r[0]) for r in rows]

    @retried
    async def all_documents(self) -> list[Document]:
        async with await self.connection() as conn:
            rows = await (await conn.execute("SELECT record FROM pixelrag_documents ORDER BY position")).fetchall()
        return [Document(**r[0]) for r in rows]

    @retried
    async def search(self, scope: str) -> PostgresSearch | None:
        async with await self.connection() as conn:
            row = await (
                await conn.execute("SELECT built_with, pages, lexical_length, version FROM pixelrag_index")
            ).fetchone()
            if not row or not row[1]:
                return None
            view = await self._views.get(conn, scope, row[3])
        return PostgresSearch(self, tuple(row[:3]), view)

    @retried
    async def source(self, sha256: str) -> bytes | None:
        async with await self.connection() as conn:
            row = await (await conn.execute("SELECT pdf FROM pixelrag_sources WHERE sha256 = %s", (sha256,))).fetchone()
        return bytes(row[0]) if row else None

    @retried
    async def link_secret(self) -> bytes:
        from psycopg.errors import InsufficientPrivilege, ReadOnlySqlTransaction

        async with await self.connection() as conn:
            # A user who may only read still reads the secret another process made.
            with contextlib.suppress(InsufficientPrivilege, ReadOnlySqlTransaction):
                await conn.execute(
                    "INSERT INTO pixelrag_secrets (name, value) VALUES ('links', %s) ON CONFLICT DO NOTHING",
                    (secrets.token_hex(32),),
                )
            row = await (await conn.execute("SELECT value FROM pixelrag_secrets WHERE name = 'links'")).fetchone()
        if row is None:
            raise IndexProblem(
                "No link secret is stored in the database and this user may not store one; set "
                "PIXELRAG_LINK_SECRET, or let a process that may write start first."
            )
        return bytes.fromhex(row[0])

    async def published(self) -> None:
        """Nothing to do: a question reads the index's version, and what a scope sees is read again after
        a publication (scope_views.py)."""

    async def warm_up(self) -> None:
        async with await self.connection():
            pass

    @retried
    async def status(self, scope: str | None = None) -> dict:
        async with await self.connection() as conn:
            index = await self._index_row(conn)
            version = (await (await conn.execute("SELECT version FROM pixelrag_index")).fetchone() or [None])[0]
        documents = await (self.documents(scope) if scope else self.all_documents())
        return {
            "index": "PostgreSQL (PIXELRAG_DATABASE_URL)",
            "snapshot": f"database version {version}" if version else None,
            "built_with": index[0] if index else None,
            "pages": index[1] if index else 0,
            "documents": len(documents),
            "indexing_now": await self.jobs(scope),
        }

    async def repair(self) -> tuple[str | None, list]:
        raise BadInput("repair is for an index folder; a database index is never left half-published.")

    async def verify(self) -> tuple[list[Document], list[str]]:
        """A database is never half-published, and keeps every PDF with its pages: its documents."""
        return await self.all_documents(), []

    # --- building --------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def building(self, keys: Sequence[str], on_wait: Callable[[str], None], warnings: list[str]):
        """Session advisory locks on the documents' keys (sorted, so two builders never deadlock), held
        on one connection for the whole build."""
        async with await self.connection() as conn:
            locks = sorted({_lock_key(k) for k in keys})
            try:
                for key in locks:
                    if not (await (await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))).fetchone())[0]:
                        on_wait("another process")
                        async with conn.transaction():  # the lock is the session's: it outlives the transaction
                            await unbounded(conn)  # as long as the other build takes
                            await conn.execute("SELECT pg_advisory_lock(%s)", (key,))
                # Listed for every process's status while this session lives (a killed build's row is
                # ignored: its session is gone).
                await conn.execute("INSERT INTO pixelrag_jobs (key) SELECT * FROM unnest(%s::text[])", (list(keys),))
                yield await PostgresBuild.start(self)
            finally:
                await conn.execute("DELETE FROM pixelrag_jobs WHERE session = pg_backend_pid()")
                await conn.execute("SELECT pg_advisory_unlock_all()")

    async def jobs(self, scope: str | None = None) -> list[str]:
        """What is being indexed now, by any process (in `scope` only, when given): each document's file name."""
        async with await self.connection() as conn:
            await conn.execute("DELETE FROM pixelrag_jobs WHERE session NOT IN (SELECT pid FROM pg_stat_activity)")
            rows = await (await conn.execute("SELECT key FROM pixelrag_jobs ORDER BY started")).fetchall()
        keys = [r[0].split("\n", 1) for r in rows]  # build keys are "scope\norigin" (core/indexing.build_key)
        seen = visible_scopes(scope) if scope is not None else None
        return [origin.rsplit("/", 1)[-1] for where, origin in keys if seen is None or where in seen]
