"""The page index (PageStore in core/ports.py) in PostgreSQL with pgvector, shared by every process.

What the embedded store keeps in files is in tables here: documents, pages with their words, page
images and source PDFs, vectors (pgvector, HNSW; halfvec above vector's 2,000-dimension index limit)
and BM25 postings (one row per page and term, and each term's page count). A build publishes in one transaction: readers see
a document's old pages or its new ones, never a mix, and a build that fails or is killed leaves
the previous state. Builds of one document (scope and origin) are kept apart by an advisory lock.

A question never scores every page: the dense candidates come from the HNSW index filtered by
scope, the lexical ones from the postings; both are scored on the union and fused as the embedded
store fuses them (core/search.py), with the dense scores' spread over the visible collection taken
from a fixed random sample of pages (every page, for collections under SPREAD_SAMPLE pages).
"""
from __future__ import annotations

import contextlib
import hashlib
import json
import math
import random
from collections import Counter
from dataclasses import asdict
from typing import Callable, Sequence

import numpy as np

from ..errors import IndexProblem
from ..records import SHARED_SCOPE, Document, Hit, Page, ReaderPage
from ..search import fused, idf, page_terms, presence_probe, probed_words, query_terms, absent_words
from ..snapshot_format import word_from_row, word_row
from .database import open_pool

CANDIDATES = 40  # per signal; the fused top k comes from their union
SAMPLE_BUCKETS = 1024  # a page's random bucket; the spread of dense scores is taken over a few buckets
SPREAD_SAMPLE = 1000  # pages the spread is estimated from (its standard error is then about 2 %)
EF_SEARCH = 100  # HNSW candidate list: recall@4 ≥ 0.95 with the scope filter (eval/bench_postgres.py)
K1, B = 1.2, 0.75  # BM25, as LexicalIndex
BUILD_LOCK_BASE = 7_215_552_000  # advisory lock keys of document builds are hashed near this


def _vector_type(dim: int) -> str:
    return "vector" if dim <= 2000 else "halfvec"  # HNSW indexes vector up to 2,000 dimensions, halfvec 4,000


def _lock_key(key: str) -> int:
    return int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big", signed=True)


class PostgresPages:
    def __init__(self, url: str):
        self.url = url
        self._pool = None

    async def _connection(self):
        if self._pool is None:
            self._pool = await open_pool(self.url)
        return self._pool.connection()

    async def close(self) -> None:
        if self._pool is not None:
            await self._pool.close()
            self._pool = None

    # --- reading ---------------------------------------------------------------------------------
    async def _index_row(self, conn) -> tuple[dict, int, float] | None:
        row = await (await conn.execute("SELECT built_with, pages, lexical_length FROM pixelrag_index")).fetchone()
        return (row[0], row[1], row[2]) if row and row[1] else None

    async def documents(self, scope: str) -> list[Document]:
        async with await self._connection() as conn:
            rows = await (await conn.execute(
                "SELECT record FROM pixelrag_documents WHERE scope = ANY(%s) ORDER BY position",
                ([SHARED_SCOPE, scope],))).fetchall()
        return [Document(**r[0]) for r in rows]

    async def all_documents(self) -> list[Document]:
        async with await self._connection() as conn:
            rows = await (await conn.execute("SELECT record FROM pixelrag_documents ORDER BY position")).fetchall()
        return [Document(**r[0]) for r in rows]

    async def search(self, scope: str) -> "PostgresSearch | None":
        async with await self._connection() as conn:
            index = await self._index_row(conn)
        if index is None:
            return None
        documents = {d.doc_id: d for d in await self.documents(scope)}
        return PostgresSearch(self, index, documents, [SHARED_SCOPE, scope])

    async def source(self, sha256: str) -> bytes | None:
        async with await self._connection() as conn:
            row = await (await conn.execute("SELECT pdf FROM pixelrag_sources WHERE sha256 = %s", (sha256,))).fetchone()
        return bytes(row[0]) if row else None

    async def warm_up(self) -> None:
        async with await self._connection():
            pass

    async def status(self) -> dict:
        async with await self._connection() as conn:
            index = await self._index_row(conn)
            version = (await (await conn.execute("SELECT version FROM pixelrag_index")).fetchone() or [None])[0]
        return {"snapshot": f"database version {version}" if version else None,
                "built_with": index[0] if index else None, "pages": index[1] if index else 0,
                "indexing_now": await self.jobs()}

    # --- building --------------------------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def building(self, keys: Sequence[str], on_wait: Callable[[str], None], warnings: list[str]):
        """Session advisory locks on the documents' keys (sorted, so two builders never deadlock), held
        on one connection for the whole build."""
        async with await self._connection() as conn:
            locks = sorted({_lock_key(k) for k in keys})
            try:
                for key in locks:
                    if not (await (await conn.execute("SELECT pg_try_advisory_lock(%s)", (key,))).fetchone())[0]:
                        on_wait("another process")
                        await conn.execute("SELECT pg_advisory_lock(%s)", (key,))
                # Listed for every process's status while this session lives (a killed build's row is
                # ignored: its session is gone).
                await conn.execute("INSERT INTO pixelrag_jobs (key) SELECT * FROM unnest(%s::text[])", (list(keys),))
                yield await PostgresBuild.start(self)
            finally:
                await conn.execute("DELETE FROM pixelrag_jobs WHERE session = pg_backend_pid()")
                await conn.execute("SELECT pg_advisory_unlock_all()")

    async def jobs(self) -> list[str]:
        """What is being indexed now, by any process: each document's origin."""
        async with await self._connection() as conn:
            await conn.execute("DELETE FROM pixelrag_jobs WHERE session NOT IN (SELECT pid FROM pg_stat_activity)")
            rows = await (await conn.execute("SELECT key FROM pixelrag_jobs ORDER BY started")).fetchall()
        return [r[0].split("\n", 1)[-1].rsplit("/", 1)[-1] for r in rows]


class PostgresSearch:
    """One question's search: candidates from the HNSW index and the postings, fused."""

    def __init__(self, pages: PostgresPages, index: tuple[dict, int, float], documents: dict[str, Document],
                 scopes: list[str]):
        self.pages, self.documents, self.scopes = pages, documents, scopes
        self.built_with, self.n_pages, lexical_length = index
        self.avg_length = lexical_length / self.n_pages if self.n_pages else 1.0
        self.visible_pages = sum(d.page_count for d in documents.values())
        self.vector_type = _vector_type(int(self.built_with["dim"]))

    async def rank(self, text: str, vector: np.ndarray, k: int, lexical: bool) -> list[Hit]:
        if not self.documents:
            return []
        query = _vector_text(vector)
        cast = self.vector_type
        async with await self.pages._connection() as conn:
            async with conn.transaction():  # SET LOCAL lasts for this question's queries only
                await conn.execute(f"SET LOCAL hnsw.ef_search = {EF_SEARCH}")
                await conn.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
                dense = dict(await (await conn.execute(
                    f"SELECT page_id, max(score) FROM (SELECT page_id, -(embedding <#> %s::{cast}) AS score "
                    f"FROM pixelrag_vectors WHERE scope = ANY(%s) ORDER BY embedding <#> %s::{cast} LIMIT %s) top "
                    "GROUP BY page_id",
                    (query, self.scopes, query, CANDIDATES))).fetchall())
            spread = await self._spread(conn, query, cast)
            bm25, coverage, best_bm25 = {}, 0.0, 0.0
            if lexical:
                bm25, coverage, best_bm25 = await self._bm25(conn, text, None)
                if missing := [p for p in bm25 if p not in dense]:
                    dense.update(await (await conn.execute(
                        f"SELECT page_id, max(-(embedding <#> %s::{cast})) FROM pixelrag_vectors "
                        "WHERE page_id = ANY(%s) GROUP BY page_id", (query, missing))).fetchall())
                if missing := [p for p in dense if p not in bm25]:
                    bm25.update((await self._bm25(conn, text, missing))[0])
            if not dense:
                return []
            ids = list(dense)
            scores = fused(np.array([dense[i] for i in ids]), max(dense.values()), spread,
                           np.array([bm25.get(i, 0.0) for i in ids]) if lexical else None, best_bm25, coverage)
            order = sorted(range(len(ids)), key=lambda j: -scores[j])[:k]
            rows = {r[0]: r[1:] for r in await (await conn.execute(
                "SELECT id, doc_id, page, content_hash FROM pixelrag_pages WHERE id = ANY(%s)",
                ([ids[j] for j in order],))).fetchall()}
        hits = []
        for j in order:
            doc_id, page, content_hash = rows[ids[j]]
            hits.append(Hit(doc_id, self.documents[doc_id].title, page, round(float(scores[j]), 6), content_hash))
        return hits

    async def _spread(self, conn, query: str, cast: str) -> float:
        """The standard deviation of the visible pages' dense scores, over a fixed random sample of them."""
        buckets = min(SAMPLE_BUCKETS, math.ceil(SAMPLE_BUCKETS * SPREAD_SAMPLE / max(1, self.visible_pages)))
        row = await (await conn.execute(
            f"SELECT stddev_pop(score) FROM (SELECT max(-(embedding <#> %s::{cast})) AS score FROM pixelrag_vectors "
            "WHERE scope = ANY(%s) AND sample < %s GROUP BY page_id) s", (query, self.scopes, buckets))).fetchone()
        return float(row[0] or 0.0)

    async def _bm25(self, conn, text: str, only: list[int] | None) -> tuple[dict[int, float], float, float]:
        """BM25 of the visible pages (the top CANDIDATES, or the pages `only`), the query's coverage
        (LexicalIndex.coverage) and the best page's BM25."""
        terms = sorted(query_terms(text))
        if not terms:
            return {}, 0.0, 0.0
        df = dict(await (await conn.execute(
            "SELECT term, pages FROM pixelrag_term_pages WHERE term = ANY(%s)", (terms,))).fetchall())
        weights = [idf(self.n_pages, df.get(t, 0)) for t in terms]
        scored = """
            WITH q(term, idf) AS (SELECT * FROM unnest(%s::text[], %s::float8[])),
            s AS (SELECT t.page_id, sum(q.idf * t.tf * %s / (t.tf + %s * (1 - %s + %s * t.lexical_length / %s))) AS bm25,
                         sum(q.idf) AS cover
                  FROM pixelrag_terms t JOIN q ON t.term = q.term WHERE t.scope = ANY(%s) {only} GROUP BY t.page_id)
            SELECT page_id, bm25, max(cover) OVER (), max(bm25) OVER () FROM s ORDER BY bm25 DESC, page_id LIMIT %s"""
        params = [terms, weights, K1 + 1, K1, B, B, max(self.avg_length, 1e-6), self.scopes]
        if only is not None:
            params.append(only)
        params.append(CANDIDATES if only is None else len(only))
        rows = await (await conn.execute(scored.format(only="AND t.page_id = ANY(%s)" if only is not None else ""),
                                         params)).fetchall()
        if not rows:
            return {}, 0.0, 0.0
        total = sum(weights)
        return {r[0]: float(r[1]) for r in rows}, float(rows[0][2]) / total if total else 0.0, float(rows[0][3])

    async def absent_words(self, question: str) -> list[str]:
        probes = sorted(probed_words(question))
        if not probes:
            return []
        looked_up = [presence_probe(w) for w in probes]
        async with await self.pages._connection() as conn:
            rows = await (await conn.execute(
                "SELECT p.word FROM unnest(%s::text[], %s::bool[], %s::text[]) AS p(word, exact, term) WHERE EXISTS ("
                " SELECT 1 FROM pixelrag_terms t WHERE t.scope = ANY(%s) AND CASE WHEN p.exact THEN t.term = p.term"
                " ELSE t.term >= p.term AND t.term < p.term || chr(1114111) END)",
                (probes, [e for e, _ in looked_up], [t for _, t in looked_up], self.scopes))).fetchall()
        present = {r[0] for r in rows}
        return absent_words(question, lambda word: word in present)

    async def read(self, hits: Sequence[Hit]) -> list[ReaderPage]:
        async with await self.pages._connection() as conn:
            rows = await (await conn.execute(
                "SELECT p.doc_id, p.page, p.content_hash, p.width_pt, p.height_pt, p.words, i.jpeg FROM pixelrag_pages p "
                "JOIN pixelrag_images i ON i.content_hash = p.content_hash "
                "WHERE (p.doc_id, p.page) IN (SELECT * FROM unnest(%s::text[], %s::int[]))",
                ([h.doc_id for h in hits], [h.page for h in hits]))).fetchall()
        found = {(r[0], r[1]): r for r in rows}
        out = []
        for h in hits:
            r = found.get((h.doc_id, h.page))
            if r is None:
                raise IndexProblem(f"{h.title} p. {h.page} was replaced while it was being read; ask again.")
            out.append(ReaderPage(h, _page(r), bytes(r[6])))
        return out


class PostgresBuild:
    """IndexBuild over the database (see the module docstring)."""
    damaged = False
    recovered: list = []

    def __init__(self, pages: PostgresPages):
        self.pages = pages

    @classmethod
    async def start(cls, pages: PostgresPages) -> "PostgresBuild":
        build = cls(pages)
        async with await pages._connection() as conn:
            row = await (await conn.execute("SELECT built_with, pages, version FROM pixelrag_index")).fetchone()
        build.built_with, build.pages_total = (row[0], row[1]) if row else (None, 0)
        build.name = f"database version {row[2]}" if row else None
        build.documents = await pages.all_documents()
        return build

    async def reusable(self, content_hashes: Sequence[str]) -> dict[str, tuple[Page, np.ndarray]]:
        async with await self.pages._connection() as conn:
            rows = await (await conn.execute(
                "SELECT DISTINCT ON (content_hash) content_hash, id, doc_id, page, content_hash, width_pt, height_pt, "
                "words FROM pixelrag_pages WHERE content_hash = ANY(%s) ORDER BY content_hash, id",
                (list(content_hashes),))).fetchall()
            if not rows:
                return {}
            vectors: dict[int, list[np.ndarray]] = {}
            for page_id, embedding in await (await conn.execute(
                    "SELECT page_id, embedding::text FROM pixelrag_vectors WHERE page_id = ANY(%s) ORDER BY page_id",
                    ([r[1] for r in rows],))).fetchall():
                vectors.setdefault(page_id, []).append(np.array(json.loads(embedding), dtype=np.float32))
        return {r[0]: (_page(r[2:]), np.vstack(vectors[r[1]])) for r in rows if r[1] in vectors}

    async def save_source(self, sha256: str, data: bytes) -> None:
        async with await self.pages._connection() as conn:
            await conn.execute("INSERT INTO pixelrag_sources (sha256, pdf) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                               (sha256, data))

    async def save_page_image(self, content_hash: str, jpeg: bytes) -> None:
        async with await self.pages._connection() as conn:
            await conn.execute("INSERT INTO pixelrag_images (content_hash, jpeg) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                               (content_hash, jpeg))

    async def publish(self, built_with: dict, removed: set[str],
                      added: Sequence[tuple[Document, Sequence[Page], Sequence[np.ndarray]]]) -> tuple[str, int]:
        dim = int(built_with["dim"])
        kind = _vector_type(dim)
        gone = sorted(removed | {d.doc_id for d, _, _ in added})
        async with await self.pages._connection() as conn:
            async with conn.transaction():
                await conn.execute("INSERT INTO pixelrag_index (built_with) VALUES (%s) ON CONFLICT DO NOTHING",
                                   (json.dumps(built_with),))
                # The row lock orders publications; the first one creates the vectors table for its dimension.
                index = (await (await conn.execute("SELECT built_with FROM pixelrag_index FOR UPDATE")).fetchone())[0]
                if index != built_with and (await self._has_pages(conn)):
                    raise IndexProblem(f"The database holds an index built with {index}; this build is {built_with}.")
                await conn.execute("UPDATE pixelrag_index SET built_with = %s", (json.dumps(built_with),))
                await _ensure_vectors_table(conn, kind, dim)
                before = await (await conn.execute(
                    "SELECT count(*), coalesce(sum(lexical_length), 0) FROM pixelrag_pages WHERE doc_id = ANY(%s)",
                    (gone,))).fetchone()
                df = Counter({t: -n for t, n in await (await conn.execute(
                    "SELECT term, count(*) FROM pixelrag_terms WHERE doc_id = ANY(%s) GROUP BY term", (gone,))).fetchall()})
                for table in ("pixelrag_terms", "pixelrag_vectors", "pixelrag_pages", "pixelrag_documents"):
                    await conn.execute(f"DELETE FROM {table} WHERE doc_id = ANY(%s)", (gone,))
                # Into an empty table (a first build, a migration), the HNSW index is built once after the rows:
                # several times faster than growing it row by row, and no question can be waiting on it.
                bulk = not (await (await conn.execute("SELECT EXISTS (SELECT 1 FROM pixelrag_vectors)")).fetchone())[0]
                if bulk:
                    await conn.execute("DROP INDEX pixelrag_vectors_hnsw")
                pages_added, length_added = 0, 0.0
                for document, pages, vectors in added:
                    n, length = await _insert_document(conn, document, pages, vectors, kind, df)
                    pages_added, length_added = pages_added + n, length_added + length
                if changed := [(t, n) for t, n in df.items() if n]:
                    await conn.execute(
                        "INSERT INTO pixelrag_term_pages (term, pages) SELECT * FROM unnest(%s::text[], %s::int[]) "
                        "ON CONFLICT (term) DO UPDATE SET pages = pixelrag_term_pages.pages + EXCLUDED.pages",
                        ([t for t, _ in changed], [n for _, n in changed]))
                if bulk:
                    await conn.execute("SET LOCAL maintenance_work_mem = '512MB'")
                    await _create_hnsw(conn, kind)
                row = await (await conn.execute(
                    "UPDATE pixelrag_index SET version = version + 1, pages = pages + %s, "
                    "lexical_length = lexical_length + %s RETURNING version, pages",
                    (pages_added - before[0], length_added - before[1]))).fetchone()
        return f"database version {row[0]}", row[1]

    @staticmethod
    async def _has_pages(conn) -> bool:
        return bool((await (await conn.execute("SELECT pages FROM pixelrag_index")).fetchone())[0])


async def _insert_document(conn, document: Document, pages: Sequence[Page], vectors: Sequence[np.ndarray],
                           kind: str, df: Counter) -> tuple[int, float]:
    """The document's rows; `df` gains the number of its pages each term is on."""
    await conn.execute("INSERT INTO pixelrag_documents (doc_id, scope, record) VALUES (%s, %s, %s)",
                       (document.doc_id, document.scope, json.dumps(asdict(document))))
    ids = [r[0] for r in await (await conn.execute(
        "SELECT nextval('pixelrag_pages_id_seq') FROM generate_series(1, %s)", (len(pages),))).fetchall()]
    total_length = 0.0
    async with conn.cursor().copy(
            "COPY pixelrag_pages (id, doc_id, page, content_hash, width_pt, height_pt, words, scope, lexical_length) "
            "FROM STDIN") as copy:
        terms_of = []
        for page_id, page in zip(ids, pages):
            terms = page_terms(f"{document.title}\n{page.text}")  # as lexical_index() indexes a page
            length = float(sum(terms.values()))
            total_length += length
            terms_of.append((page_id, terms, length))
            df.update(terms.keys())
            await copy.write_row((page_id, document.doc_id, page.page, page.content_hash, page.width_pt,
                                  page.height_pt, json.dumps([word_row(w) for w in page.words], ensure_ascii=False),
                                  document.scope, length))
    async with conn.cursor().copy("COPY pixelrag_terms (term, page_id, doc_id, scope, tf, lexical_length) FROM STDIN") as copy:
        for page_id, terms, length in terms_of:
            for term, tf in terms.items():
                await copy.write_row((term, page_id, document.doc_id, document.scope, float(tf), length))
    # Binary COPY through pgvector's adapters: writing vectors as text costs more than the database's work.
    from pgvector import HalfVector, Vector
    from pgvector.psycopg import register_vector_async

    await register_vector_async(conn)
    wrap = Vector if kind == "vector" else HalfVector
    async with conn.cursor().copy("COPY pixelrag_vectors (page_id, doc_id, scope, sample, embedding) "
                                  "FROM STDIN WITH (FORMAT BINARY)") as copy:
        copy.set_types(["int8", "text", "text", "int2", kind])
        for page_id, rows in zip(ids, vectors):
            rows = np.asarray(rows, dtype=np.float32)
            bucket = random.randrange(SAMPLE_BUCKETS)  # all of a page's rows are in the sample or none
            for row in rows.reshape(-1, rows.shape[-1]):
                await copy.write_row((page_id, document.doc_id, document.scope, bucket, wrap(row)))
    return len(pages), total_length


async def _ensure_vectors_table(conn, kind: str, dim: int) -> None:
    exists = (await (await conn.execute("SELECT to_regclass('pixelrag_vectors')")).fetchone())[0]
    if exists:
        return
    # No index on scope: with one, the planner filters by it and skips the HNSW index (bench_postgres.py).
    await conn.execute(f"""
        CREATE TABLE pixelrag_vectors (
            page_id BIGINT NOT NULL, doc_id TEXT NOT NULL, scope TEXT NOT NULL, sample SMALLINT NOT NULL,
            embedding {kind}({dim}) NOT NULL);
        CREATE INDEX pixelrag_vectors_page ON pixelrag_vectors (page_id);
        CREATE INDEX pixelrag_vectors_doc ON pixelrag_vectors (doc_id);
        CREATE INDEX pixelrag_vectors_sample ON pixelrag_vectors (sample);""")
    await _create_hnsw(conn, kind)


async def _create_hnsw(conn, kind: str) -> None:
    await conn.execute(f"CREATE INDEX pixelrag_vectors_hnsw ON pixelrag_vectors USING hnsw (embedding {kind}_ip_ops)")


def _vector_text(values: np.ndarray) -> str:
    """pgvector's text form: float32 values written so that they read back exactly."""
    return "[" + ",".join(map(str, np.asarray(values, dtype=np.float32).tolist())) + "]"


def _page(row) -> Page:
    doc_id, page, content_hash, width, height, words = row[:6]
    return Page(doc_id, page, content_hash, width, height, tuple(word_from_row(w) for w in words))
