"""A build over the PostgreSQL page index (IndexBuild in core/ports.py): reuse of published pages
by their pixels, and one transaction that replaces documents' rows (pages, words, BM25 postings and
term counts, vectors) so that readers see a document's old pages or its new ones, never a mix."""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict

import numpy as np

from ..embedded.snapshot_format import word_row
from ..errors import IndexProblem
from ..ranking import bm25
from ..records import Document, Page
from .database import unbounded
from .page_rows import SAMPLE_BUCKETS, page_from_row, page_lexicon, vector_type

PLAIN_BYTES = 7000  # a vector this size or smaller is kept in its row (a row must fit an 8 kB page)


class PostgresBuild:
    """IndexBuild over the database (see the module docstring)."""

    damaged = False
    recovered: list = []
    unsourced: frozenset[str] = frozenset()  # the database keeps every source PDF with its pages
    redraw: frozenset[str] = frozenset()  # and every page image
    name: str | None  # these four are set by start()
    built_with: dict | None
    documents: list[Document]
    pages_total: int

    def __init__(self, pages):
        self.pages = pages

    @classmethod
    async def start(cls, pages) -> PostgresBuild:
        build = cls(pages)
        async with await pages.connection() as conn:
            row = await (await conn.execute("SELECT built_with, pages, version FROM pixelrag_index")).fetchone()
        build.built_with, build.pages_total = (row[0], row[1]) if row else (None, 0)
        build.name = f"database version {row[2]}" if row else None
        build.documents = await pages.all_documents()
        return build

    async def reusable(self, content_hashes: Sequence[str]) -> dict[str, tuple[Page, np.ndarray]]:
        async with await self.pages.connection() as conn:
            rows = await (
                await conn.execute(
                    "SELECT DISTINCT ON (content_hash) content_hash, id, doc_id, page, content_hash, width_pt, "
                    "height_pt, "
                    "words FROM pixelrag_pages WHERE content_hash = ANY(%s) ORDER BY content_hash, id",
                    (list(content_hashes),),
                )
            ).fetchall()
            if not rows:
                return {}
            vectors: dict[int, list[np.ndarray]] = {}
            for page_id, embedding in await (
                await conn.execute(
                    "SELECT page_id, embedding::text FROM pixelrag_vectors WHERE page_id = ANY(%s) ORDER BY page_id",
                    ([r[1] for r in rows],),
                )
            ).fetchall():
                vectors.setdefault(page_id, []).append(np.array(json.loads(embedding), dtype=np.float32))
        return {r[0]: (page_from_row(r[2:]), np.vstack(vectors[r[1]])) for r in rows if r[1] in vectors}

    async def save_source(self, document: Document, data: bytes) -> None:
        async with await self.pages.connection() as conn:  # the documents table says what it was indexed as
            await conn.execute(
                "INSERT INTO pixelrag_sources (sha256, pdf) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (document.sha256, data),
            )

    async def save_page_image(self, content_hash: str, jpeg: bytes) -> None:
        async with await self.pages.connection() as conn:
            await conn.execute(
                "INSERT INTO pixelrag_images (content_hash, jpeg) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                (content_hash, jpeg),
            )

    async def publish(
        self,
        built_with: dict,
        removed: set[str],
        added: Sequence[tuple[Document, Sequence[Page], Sequence[np.ndarray]]],
    ) -> tuple[str, int]:
        dim = int(built_with["dim"])
        kind = vector_type(dim)
        gone = sorted(removed | {d.doc_id for d, _, _ in added})
        async with await self.pages.connection() as conn:
            async with conn.transaction():
                await unbounded(conn)  # waits for the publication before it, and takes as long as it takes
                await conn.execute(
                    "INSERT INTO pixelrag_index (built_with, terms_version) VALUES (%s, %s) ON CONFLICT DO NOTHING",
                    (json.dumps(built_with), bm25.TERMS_VERSION),
                )
                # The row lock orders publications; the first one creates the vectors table for its dimension.
                index = (await (await conn.execute("SELECT built_with FROM pixelrag_index FOR UPDATE")).fetchone())[0]
                if index != built_with and (await self._has_pages(conn)):
                    raise IndexProblem(f"The database holds an index built with {index}; this build is {built_with}.")
                await conn.execute("UPDATE pixelrag_index SET built_with = %s", (json.dumps(built_with),))
                await _ensure_vectors_table(conn, kind, dim)
                before = await (
                    await conn.execute(
                        "SELECT count(*), coalesce(sum(lexical_length), 0) FROM pixelrag_pages WHERE doc_id = ANY(%s)",
                        (gone,),
                    )
                ).fetchone()
                df = Counter(
                    {
                        t: -n
                        for t, n in await (
                            await conn.execute(
                                "SELECT term, count(*) FROM pixelrag_terms WHERE doc_id = ANY(%s) GROUP BY term",
                                (gone,),
                            )
                        ).fetchall()
                    }
                )
                for table in ("pixelrag_terms", "pixelrag_vectors", "pixelrag_pages", "pixelrag_documents"):
                    await conn.execute(f"DELETE FROM {table} WHERE doc_id = ANY(%s)", (gone,))
                # Into an empty table (a first build, a migration), the HNSW index is built once after the rows:
                # several times faster than growing it row by row, and no question can be waiting on it.
                bulk = not (await (await conn.execute("SELECT EXISTS (SELECT 1 FROM pixelrag_vectors)")).fetchone())[0]
                if bulk:
                    await conn.execute("DROP INDEX pixelrag_vectors_hnsw")
                pages_added, length_added = 0, 0.0
                bounds: dict[str, tuple[float, float]] = {}
                for document, pages, vectors in added:
                    n, length = await _insert_document(conn, document, pages, vectors, kind, df, bounds)
                    pages_added, length_added = pages_added + n, length_added + length
                if changed := [t for t in df.keys() | bounds.keys() if df[t] or t in bounds]:
                    top = [bounds.get(t, (0.0, float("inf"))) for t in changed]
                    await conn.execute(
                        "INSERT INTO pixelrag_term_pages (term, pages, max_tf, min_length) "
                        "SELECT * FROM unnest(%s::text[], %s::int[], %s::real[], %s::real[]) "
                        "ON CONFLICT (term) DO UPDATE SET pages = pixelrag_term_pages.pages + EXCLUDED.pages, "
                        "max_tf = greatest(pixelrag_term_pages.max_tf, EXCLUDED.max_tf), "
                        "min_length = least(pixelrag_term_pages.min_length, EXCLUDED.min_length)",
                        (changed, [df[t] for t in changed], [b[0] for b in top], [b[1] for b in top]),
                    )
                if bulk:
                    await conn.execute("SET LOCAL maintenance_work_mem = '1GB'")  # 200k 768-d pages' graph fits
                    await _create_hnsw(conn, kind)
                row = await (
                    await conn.execute(
                        "UPDATE pixelrag_index SET version = version + 1, pages = pages + %s, "
                        "lexical_length = lexical_length + %s RETURNING version, pages",
                        (pages_added - before[0], length_added - before[1]),
                    )
                ).fetchone()
                await _collect_garbage(conn)
        return f"database version {row[0]}", row[1]

    @staticmethod
    async def _has_pages(conn) -> bool:
        return bool((await (await conn.execute("SELECT pages FROM pixelrag_index")).fetchone())[0])


async def _collect_garbage(conn) -> None:
    """Page images and PDFs no page or document refers to any more: removed documents' and old
    versions', and what a build killed before it published had saved. A build still running saved
    its own after its job began, so only rows from before the oldest live job go."""
    horizon = (
        "(SELECT coalesce(min(started), now()) FROM pixelrag_jobs WHERE session IN (SELECT pid FROM pg_stat_activity))"
    )
    await conn.execute(
        f"DELETE FROM pixelrag_images i WHERE i.created < {horizon} AND NOT EXISTS "
        "(SELECT 1 FROM pixelrag_pages p WHERE p.content_hash = i.content_hash)"
    )
    await conn.execute(
        f"DELETE FROM pixelrag_sources s WHERE s.created < {horizon} AND NOT EXISTS "
        "(SELECT 1 FROM pixelrag_documents d WHERE d.record->>'sha256' = s.sha256)"
    )


async def _insert_document(
    conn,
    document: Document,
    pages: Sequence[Page],
    vectors: Sequence[np.ndarray],
    kind: str,
    df: Counter,
    bounds: dict[str, tuple[float, float]],
) -> tuple[int, float]:
    """The document's rows; `df` gains the number of its pages each term is on, `bounds` each term's
    largest tf and shortest page."""
    await conn.execute(
        "INSERT INTO pixelrag_documents (doc_id, scope, record) VALUES (%s, %s, %s)",
        (document.doc_id, document.scope, json.dumps(asdict(document))),
    )
    ids = [
        r[0]
        for r in await (
            await conn.execute("SELECT nextval('pixelrag_pages_id_seq') FROM generate_series(1, %s)", (len(pages),))
        ).fetchall()
    ]
    total_length = 0.0
    async with conn.cursor().copy(
        "COPY pixelrag_pages (id, doc_id, page, content_hash, width_pt, height_pt, words, scope, lexical_length) "
        "FROM STDIN"
    ) as copy:
        terms_of = []
        for page_id, page in zip(ids, pages):
            terms, length = page_lexicon(document.title, page, df, bounds)
            total_length += length
            terms_of.append((page_id, terms, length))
            await copy.write_row(
                (
                    page_id,
                    document.doc_id,
                    page.page,
                    page.content_hash,
                    page.width_pt,
                    page.height_pt,
                    json.dumps([word_row(w) for w in page.words], ensure_ascii=False),
                    document.scope,
                    length,
                )
            )
    async with conn.cursor().copy(
        "COPY pixelrag_terms (term, page_id, doc_id, scope, tf, lexical_length) FROM STDIN"
    ) as copy:
        for page_id, terms, length in terms_of:
            for term, tf in terms.items():
                await copy.write_row((term, page_id, document.doc_id, document.scope, float(tf), length))
    # Binary COPY through pgvector's adapters: writing vectors as text costs more than the database's work.
    from pgvector import HalfVector, Vector
    from pgvector.psycopg import register_vector_async

    await register_vector_async(conn)
    wrap = Vector if kind == "vector" else HalfVector
    async with conn.cursor().copy(
        "COPY pixelrag_vectors (page_id, doc_id, scope, sample, embedding) FROM STDIN WITH (FORMAT BINARY)"
    ) as copy:
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
    # (doc_id, sample): a document's rows to delete, and a scope's page sample read by its documents.
    await conn.execute(f"""
        CREATE TABLE pixelrag_vectors (
            page_id BIGINT NOT NULL, doc_id TEXT NOT NULL, scope TEXT NOT NULL, sample SMALLINT NOT NULL,
            embedding {kind}({dim}) NOT NULL);
        CREATE INDEX pixelrag_vectors_page ON pixelrag_vectors (page_id);
        CREATE INDEX pixelrag_vectors_doc ON pixelrag_vectors (doc_id, sample);""")
    if dim * (4 if kind == "vector" else 2) <= PLAIN_BYTES:
        # Vectors in the rows themselves, not TOASTed: the planner then prices a scan by its real size
        # (TOASTed, a 100k-page scan looked cheaper than the HNSW index and took 120 ms), and scans
        # read no TOAST table.
        await conn.execute("ALTER TABLE pixelrag_vectors ALTER COLUMN embedding SET STORAGE PLAIN")
    await _create_hnsw(conn, kind)


async def _create_hnsw(conn, kind: str) -> None:
    # ef_construction 128, not 64: at 64, tight groups of near-identical pages (a section's pages) were
    # left as islands no search reached, whatever its ef_search (eval/bench_postgres.py).
    await conn.execute(
        f"CREATE INDEX pixelrag_vectors_hnsw ON pixelrag_vectors USING hnsw (embedding {kind}_ip_ops) "
        "WITH (ef_construction = 128)"
    )
