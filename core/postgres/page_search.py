"""One question's search in the PostgreSQL page index (PageSearch in core/ports.py).

The dense candidates come from the HNSW index filtered by scope (iterative scans, so a filter never
leaves fewer than asked), with their pages' rows in the same query; the lexical ones from the BM25
postings (page_bm25.py), read only until no page left out could enter the fused top k; both are
scored on their union and fused as the embedded store fuses every page (core/ranking/), with the
dense scores' spread over the visible collection computed from the scope's page sample held in
memory (scope_views.py).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..errors import IndexProblem
from ..ranking.absent_words import absent_words, presence_probe, probed_words
from ..ranking.fusion import fused
from ..ranking.gaps import fill_gaps, gap_pages
from ..records import Hit, ReaderPage
from .database import retried
from .page_bm25 import QueryBm25
from .page_rows import page_from_row, vector_text, vector_type
from .scope_views import ScopeView

CANDIDATES = 40  # per signal; the fused top k comes from their union
EF_SEARCH = 100  # HNSW candidate list (eval/bench_postgres.py measures recall@4 against exact search)
ITERATIVE_SCAN = "relaxed_order"  # the candidates are re-sorted by their exact scores anyway


async def configure(conn) -> None:
    """The HNSW settings of every pooled connection, set once when it opens rather than per question."""
    await conn.execute(f"SET hnsw.ef_search = {EF_SEARCH}")
    await conn.execute(f"SET hnsw.iterative_scan = {ITERATIVE_SCAN}")


class PostgresSearch:
    """One question's search: candidates from the HNSW index and the postings, fused."""

    def __init__(self, pages, index: tuple[dict, int, float], view: ScopeView):
        self.pages, self.view = pages, view
        self.documents, self.scopes = view.documents, view.scopes
        self.built_with, self.n_pages, lexical_length = index
        self.avg_length = lexical_length / self.n_pages if self.n_pages else 1.0
        self.visible_pages = sum(d.page_count for d in self.documents.values())
        self.vector_type = vector_type(int(self.built_with["dim"]))

    @retried
    async def rank(
        self, text: str, vector: np.ndarray, k: int, lexical: bool, answered: int | None = None
    ) -> list[Hit]:
        if not self.documents:
            return []
        query = vector_text(vector)
        async with await self.pages.connection() as conn:
            rows = await self._pages(
                conn,
                (
                    "SELECT page_id, max(score) AS score FROM (SELECT page_id, -(embedding <#> "
                    f"%s::{self.vector_type}) "
                    "AS score FROM pixelrag_vectors WHERE scope = ANY(%s) ORDER BY embedding <#> "
                    f"%s::{self.vector_type} "
                    "LIMIT %s) c GROUP BY page_id"
                ),
                (query, self.scopes, query, CANDIDATES),
            )
            dense = {i: r[3] for i, r in rows.items()}
            spread = self.view.spread(vector)
            if not lexical:
                return await self._hits(
                    conn,
                    fused(np.array(list(dense.values())), max(dense.values(), default=0.0), spread),
                    list(dense),
                    rows,
                    k,
                    answered,
                )
            # A page outside the dense candidates scores at most the last of them (HNSW taken as exact).
            dense_floor = min(dense.values(), default=float("-inf"))
            terms = await QueryBm25.open(
                conn, text, self.scopes, self.n_pages, self.avg_length, self.visible_pages / max(1, self.n_pages)
            )
            for exact in (False, True):
                bm25, coverage, best_bm25, beyond = await terms.top(CANDIDATES, exact)
                if missing := [p for p in bm25 if p not in dense]:
                    more = await self._pages(
                        conn,
                        (
                            f"SELECT page_id, max(-(embedding <#> %s::{self.vector_type})) AS score FROM "
                            "pixelrag_vectors "
                            "WHERE page_id = ANY(%s) GROUP BY page_id"
                        ),
                        (query, missing),
                    )
                    rows.update(more)
                    dense.update((i, r[3]) for i, r in more.items())
                if missing := [p for p in dense if p not in bm25]:
                    bm25.update(await terms.of(missing))
                ids = list(dense)
                best = max(dense.values(), default=0.0)
                scores = fused(
                    np.array([dense[i] for i in ids]),
                    best,
                    spread,
                    np.array([bm25[i] for i in ids]),
                    best_bm25,
                    coverage,
                )
                # Any other page scores at most this: done if the top k beat it (always, once BM25 is exact).
                ceiling = fused(np.array([dense_floor]), best, spread, np.array([beyond]), best_bm25, coverage)[0]
                if exact or (len(ids) >= k and np.sort(scores)[-k] > ceiling):
                    return await self._hits(conn, scores, ids, rows, k, answered)
            raise AssertionError("unreachable: the exact pass always returns")

    async def _pages(self, conn, scored: str, params) -> dict[int, tuple]:
        """Pages scored by the query `scored` (page_id, score): id -> (doc_id, page, content_hash, score)."""
        return {
            r[0]: r[1:]
            for r in await (
                await conn.execute(
                    f"SELECT p.id, p.doc_id, p.page, p.content_hash, s.score FROM ({scored}) s "
                    "JOIN pixelrag_pages p ON p.id = s.page_id",
                    params,
                )
            ).fetchall()
        }

    async def _hits(
        self, conn, scores: np.ndarray, ids: list[int], rows: dict[int, tuple], k: int, answered: int | None
    ) -> list[Hit]:
        """The top k, with the gaps filled as the embedded store fills them (search.fill_gaps)."""
        order = sorted(range(len(ids)), key=lambda j: -scores[j])[:k]
        ranked = [(*rows[ids[j]][:2], float(scores[j])) for j in order]
        hashes = {(doc_id, page): content_hash for doc_id, page, content_hash, _ in rows.values()}
        if gaps := gap_pages(ranked) - hashes.keys():  # middle pages not among the candidates
            hashes.update(await self._content_hashes(conn, gaps))
        return [
            Hit(doc_id, self.documents[doc_id].title, page, round(score, 6), hashes[(doc_id, page)])
            for doc_id, page, score in fill_gaps(ranked, lambda key: key in hashes, answered)
        ]

    async def _content_hashes(self, conn, keys: set[tuple[str, int]]) -> dict[tuple[str, int], str]:
        pairs = sorted(keys)
        rows = await (
            await conn.execute(
                "SELECT doc_id, page, content_hash FROM pixelrag_pages "
                "WHERE (doc_id, page) IN (SELECT * FROM unnest(%s::text[], %s::int[]))",
                ([d for d, _ in pairs], [p for _, p in pairs]),
            )
        ).fetchall()
        return {(r[0], r[1]): r[2] for r in rows}

    @retried
    async def absent_words(self, question: str) -> list[str]:
        probes = sorted(probed_words(question))
        if not probes:
            return []
        looked_up = [presence_probe(w) for w in probes]
        async with await self.pages.connection() as conn:
            rows = await (
                await conn.execute(
                    "SELECT p.word FROM unnest(%s::text[], %s::bool[], %s::text[]) AS p(word, exact, term) WHERE "
                    "EXISTS ("
                    " SELECT 1 FROM pixelrag_terms t WHERE t.scope = ANY(%s) AND CASE WHEN p.exact THEN t.term = p.term"
                    " ELSE t.term >= p.term AND t.term < p.term || chr(1114111) END)",
                    (probes, [e for e, _ in looked_up], [t for _, t in looked_up], self.scopes),
                )
            ).fetchall()
        present = {r[0] for r in rows}
        return absent_words(question, lambda word: word in present)

    async def page(self, doc_id: str, page: int) -> ReaderPage | None:
        document = self.documents.get(doc_id)
        if document is None or not 1 <= page <= document.page_count:
            return None
        return (await self.read([Hit(doc_id, document.title, page, 0.0, "")]))[0]

    @retried
    async def read(self, hits: Sequence[Hit]) -> list[ReaderPage]:
        async with await self.pages.connection() as conn:
            rows = await (
                await conn.execute(
                    "SELECT p.doc_id, p.page, p.content_hash, p.width_pt, p.height_pt, p.words, i.jpeg FROM "
                    "pixelrag_pages p "
                    "JOIN pixelrag_images i ON i.content_hash = p.content_hash "
                    "WHERE (p.doc_id, p.page) IN (SELECT * FROM unnest(%s::text[], %s::int[]))",
                    ([h.doc_id for h in hits], [h.page for h in hits]),
                )
            ).fetchall()
        found = {(r[0], r[1]): r for r in rows}
        out = []
        for h in hits:
            r = found.get((h.doc_id, h.page))
            if r is None:
                raise IndexProblem(f"{h.title} p. {h.page} was replaced while it was being read; ask again.")
            out.append(ReaderPage(h, page_from_row(r), bytes(r[6])))
        return out
