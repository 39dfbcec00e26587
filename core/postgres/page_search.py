"""One question's search in the PostgreSQL page index (PageSearch in core/ports.py).

The dense candidates come from the HNSW index filtered by scope (iterative scans, so a filter never
leaves fewer than asked), the lexical ones from the BM25 postings; both are scored on their union
and fused as the embedded store fuses every page (core/search.py), with the dense scores' spread
over the visible collection taken from a fixed random sample of pages (all of them, for
collections under SPREAD_SAMPLE pages).
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..errors import IndexProblem
from ..records import Document, Hit, ReaderPage
from ..search import absent_words, fill_gaps, fused, gap_pages, idf, presence_probe, probed_words, query_terms
from .page_rows import SAMPLE_BUCKETS, page_from_row, vector_text, vector_type

CANDIDATES = 40  # per signal; the fused top k comes from their union
SPREAD_SAMPLE = 1000  # pages the spread is estimated from (its standard error is then about 2 %)
EF_SEARCH = 100  # HNSW candidate list: recall@4 ≥ 0.95 with the scope filter (eval/bench_postgres.py)
K1, B = 1.2, 0.75  # BM25, as LexicalIndex


class PostgresSearch:
    """One question's search: candidates from the HNSW index and the postings, fused."""

    def __init__(self, pages, index: tuple[dict, int, float], documents: dict[str, Document],
                 scopes: list[str]):
        self.pages, self.documents, self.scopes = pages, documents, scopes
        self.built_with, self.n_pages, lexical_length = index
        self.avg_length = lexical_length / self.n_pages if self.n_pages else 1.0
        self.visible_pages = sum(d.page_count for d in documents.values())
        self.vector_type = vector_type(int(self.built_with["dim"]))

    async def rank(self, text: str, vector: np.ndarray, k: int, lexical: bool) -> list[Hit]:
        if not self.documents:
            return []
        query = vector_text(vector)
        cast = self.vector_type
        async with await self.pages.connection() as conn:
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
            ranked = [(*rows[ids[j]][:2], float(scores[j])) for j in order]
            hashes = {(doc_id, page): content_hash for doc_id, page, content_hash in rows.values()}
            if gaps := gap_pages(ranked):  # the middle pages fill_gaps() may put in (search.fill_gaps)
                hashes.update(await self._content_hashes(conn, gaps))
            ranked = fill_gaps(ranked, lambda key: key in hashes)
        return [Hit(doc_id, self.documents[doc_id].title, page, round(score, 6), hashes[(doc_id, page)])
                for doc_id, page, score in ranked]

    async def _content_hashes(self, conn, keys: set[tuple[str, int]]) -> dict[tuple[str, int], str]:
        pairs = sorted(keys)
        rows = await (await conn.execute(
            "SELECT doc_id, page, content_hash FROM pixelrag_pages "
            "WHERE (doc_id, page) IN (SELECT * FROM unnest(%s::text[], %s::int[]))",
            ([d for d, _ in pairs], [p for _, p in pairs]))).fetchall()
        return {(r[0], r[1]): r[2] for r in rows}

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
        async with await self.pages.connection() as conn:
            rows = await (await conn.execute(
                "SELECT p.word FROM unnest(%s::text[], %s::bool[], %s::text[]) AS p(word, exact, term) WHERE EXISTS ("
                " SELECT 1 FROM pixelrag_terms t WHERE t.scope = ANY(%s) AND CASE WHEN p.exact THEN t.term = p.term"
                " ELSE t.term >= p.term AND t.term < p.term || chr(1114111) END)",
                (probes, [e for e, _ in looked_up], [t for _, t in looked_up], self.scopes))).fetchall()
        present = {r[0] for r in rows}
        return absent_words(question, lambda word: word in present)

    async def read(self, hits: Sequence[Hit]) -> list[ReaderPage]:
        async with await self.pages.connection() as conn:
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
            out.append(ReaderPage(h, page_from_row(r), bytes(r[6])))
        return out
