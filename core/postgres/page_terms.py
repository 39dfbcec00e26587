"""BM25 terms written by another version of the tokenizer (stopwords, tokens, stems: bm25.TERMS_VERSION)
are rebuilt from the stored words, once, before the store serves: terms of two versions would not match
each other's queries. The same rule as an index folder's lexical.npz (embedded/pages.py)."""

from __future__ import annotations

import logging
from collections import Counter

from ..ranking import bm25
from .database import MIGRATION_LOCK, unbounded
from .page_rows import page_from_row, page_lexicon

log = logging.getLogger(__name__)
BATCH_PAGES = 500


async def refresh_terms(pool) -> int:
    """Rebuild every page's terms when they are of another version; the pages rebuilt (0: none stale).
    One transaction under the migration lock: another process waits, then finds them current."""
    async with pool.connection() as conn, conn.transaction():
        await unbounded(conn)
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATION_LOCK,))
        row = await (await conn.execute("SELECT terms_version FROM pixelrag_index")).fetchone()
        if row is None or row[0] == bm25.TERMS_VERSION:
            return 0
        log.warning("Rebuilding the database's BM25 terms (version %s -> %s)", row[0], bm25.TERMS_VERSION)
        titles = {
            r[0]: r[1]
            for r in await (await conn.execute("SELECT doc_id, record->>'title' FROM pixelrag_documents")).fetchall()
        }
        await conn.execute("DELETE FROM pixelrag_terms")
        await conn.execute("DELETE FROM pixelrag_term_pages")
        df: Counter = Counter()
        bounds: dict[str, tuple[float, float]] = {}
        lengths: list[tuple[int, float]] = []
        # A batch of pages at a time through a server-side cursor: a large index's words never all in memory.
        async with conn.cursor(name="pixelrag_terms_rebuild") as pages:
            await pages.execute(
                "SELECT id, scope, doc_id, page, content_hash, width_pt, height_pt, words FROM pixelrag_pages"
            )
            while batch := await pages.fetchmany(BATCH_PAGES):
                async with conn.cursor().copy(
                    "COPY pixelrag_terms (term, page_id, doc_id, scope, tf, lexical_length) FROM STDIN"
                ) as copy:
                    for page_id, scope, *rest in batch:
                        page = page_from_row(rest)
                        terms, length = page_lexicon(titles.get(page.doc_id, ""), page, df, bounds)
                        lengths.append((page_id, length))
                        for term, tf in terms.items():
                            await copy.write_row((term, page_id, page.doc_id, scope, float(tf), length))
        async with conn.cursor() as cur:
            await cur.executemany(
                "UPDATE pixelrag_pages SET lexical_length = %s WHERE id = %s",
                [(length, page_id) for page_id, length in lengths],
            )
        async with conn.cursor().copy("COPY pixelrag_term_pages (term, pages, max_tf, min_length) FROM STDIN") as copy:
            for term, pages_with in df.items():
                await copy.write_row((term, pages_with, *bounds[term]))
        await conn.execute(
            "UPDATE pixelrag_index SET lexical_length = %s, terms_version = %s",
            (sum(length for _, length in lengths), bm25.TERMS_VERSION),
        )
        return len(lengths)
