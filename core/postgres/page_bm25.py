"""BM25 in the PostgreSQL page index for one query: the top candidates, the best page's score and the
query's coverage (LexicalIndex.scores and .coverage over the visible pages), exact, without summing
every posting of the common terms.

Each term's row in pixelrag_term_pages bounds what one page can gain from it (the term's largest tf
on its shortest page: BM25 grows with tf and shrinks with length). Terms are read whole from the
highest bound down (MaxScore): once the pages holding the terms read are scored in full (the other
terms looked up on just those pages) and the last of the top candidates scores more than the bounds
of the unread terms add up to, no page without a read term can enter the top, nor cover more of
the query; else one more term is read. A query of common words only still reads everything.
The search may also stop once the best page and the coverage are certain, with a bound on what the
pages left out may score: page_search.py then checks that none of them could enter the fused top k.
"""

from __future__ import annotations

from collections import defaultdict

from ..language.tokens import search_terms
from ..ranking.bm25 import bm25_term, idf, term_weights

MAYBE_LIMIT = 2000  # pages to look the unread terms up on, at most, before reading one more instead
COMMON = 10  # a term on more than this many times `count` visible pages is not read first
POSTINGS = "SELECT term, page_id, tf, lexical_length FROM pixelrag_terms WHERE term = ANY(%s) AND scope = ANY(%s)"


class QueryBm25:
    """One query's terms, their idf and bounds (read once), and its BM25 over the visible pages."""

    def __init__(
        self, conn, scopes: list[str], text: str, stats: dict, n_pages: int, avg_length: float, visible_share: float
    ):
        self.conn, self.scopes = conn, scopes
        self.avg = max(avg_length, 1e-6)
        self.visible_share = visible_share
        self.idf = {t: idf(n_pages, stats[t][0] if t in stats else 0) for t in search_terms(text)}  # coverage's
        self.weights = term_weights(text, self.idf.__getitem__)  # BM25's: a name of several words counts once
        self.total = sum(self.idf.values())
        self.df = {t: stats[t][0] for t in self.idf if t in stats and stats[t][0] > 0}
        self.bound = {t: self.part(t, stats[t][1], stats[t][2]) for t in self.df}

    @classmethod
    async def open(
        cls, conn, text: str, scopes: list[str], n_pages: int, avg_length: float, visible_share: float
    ) -> QueryBm25:
        terms = sorted(search_terms(text))
        rows = (
            await (
                await conn.execute(
                    "SELECT term, pages, max_tf, min_length FROM pixelrag_term_pages WHERE term = ANY(%s)", (terms,)
                )
            ).fetchall()
            if terms
            else []
        )
        return cls(conn, scopes, text, {r[0]: r[1:] for r in rows}, n_pages, avg_length, visible_share)

    def part(self, term: str, tf: float, length: float) -> float:
        return bm25_term(self.weights[term], tf, length, self.avg)

    async def _read(self, sql: str, terms: list[str], *params) -> dict[int, dict[str, float]]:
        found: dict[int, dict[str, float]] = defaultdict(dict)
        if terms:
            for term, page_id, tf, length in await (
                await self.conn.execute(sql, (terms, self.scopes, *params))
            ).fetchall():
                found[page_id][term] = self.part(term, tf, length)
        return found

    async def of(self, pages: list[int]) -> dict[int, float]:
        """The BM25 of these visible pages (0 for a page with none of the terms)."""
        found = await self._read(POSTINGS + " AND page_id = ANY(%s)", list(self.df), pages)
        return {p: sum(found[p].values()) if p in found else 0.0 for p in pages}

    async def top(self, count: int, exact: bool = True) -> tuple[dict[int, float], float, float, float]:
        """The `count` best pages' BM25 (ties to the lower page id), the coverage, the best BM25, and a bound
        on the BM25 of every page not returned. `exact=False` may stop before the `count` are the best
        ones: once the best page and the coverage are certain, the bound says what the rest may hold."""
        order = sorted(self.df, key=lambda t: (-self.bound[t], t))
        if not order:
            return {}, 0.0, 0.0, 0.0
        # Start with the fewest terms likely to hold `count` visible pages, short of a common one (a guess:
        # only speed depends on it).
        read, expected = 0, 0.0
        while read < len(order) and (read == 0 or expected < 2 * count):
            rows = self.df[order[read]] * self.visible_share
            if read and rows > COMMON * count:
                break
            expected += rows
            read += 1
        essential: dict[int, dict[str, float]] = defaultdict(dict)
        done = 0
        while True:
            for page, parts in (await self._read(POSTINGS, order[done:read])).items():
                essential[page].update(parts)
            done = read
            rest = order[read:]
            scores = {p: sum(parts.values()) for p, parts in essential.items()}
            covers = {p: sum(self.idf[t] for t in parts) for p, parts in essential.items()}
            rest_bound = rest_cover = 0.0
            if rest:
                rest_bound = sum(self.bound[t] for t in rest)
                rest_cover = sum(self.idf[t] for t in rest)
                # Pages that might still be among the top, or the best-covered, once the rest is added.
                floor = sorted(scores.values(), reverse=True)[count - 1] if len(scores) >= count else float("-inf")
                best_cover = max(covers.values(), default=0.0)
                maybe = [p for p in scores if scores[p] + rest_bound >= floor or covers[p] + rest_cover >= best_cover]
                if len(maybe) > MAYBE_LIMIT:  # looking the rest up on so many pages costs more than reading a term
                    read += 1
                    continue
                for page, parts in (await self._read(POSTINGS + " AND page_id = ANY(%s)", rest, maybe)).items():
                    scores[page] += sum(parts.values())
                    covers[page] += sum(self.idf[t] for t in parts)
                scores = {p: scores[p] for p in maybe}
            # A page without a term read scores at most rest_bound and covers at most rest_cover.
            ranked = sorted(scores, key=lambda p: (-scores[p], p))[:count]
            full = len(ranked) == count
            certain = bool(ranked) and scores[ranked[0]] > rest_bound and max(covers.values()) >= rest_cover
            if not rest or (certain and (not exact or (full and scores[ranked[-1]] > rest_bound))):
                coverage = max(covers.values(), default=0.0) / self.total if self.total else 0.0
                beyond = max(rest_bound, scores[ranked[-1]] if full else 0.0)
                return {p: scores[p] for p in ranked}, coverage, scores[ranked[0]] if ranked else 0.0, beyond
            read += 1
