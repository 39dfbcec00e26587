"""What one scope sees at one version of the PostgreSQL page index, kept per process so that a
question reads one row (the version) instead of every visible document and a page sample.

A view holds the scope's documents and the vectors of a fixed random sample of its pages, from
which a question's dense spread (the standard deviation of its scores over the visible pages,
core/ranking/fusion.fused) is computed in memory. Every publication bumps the version, so a view is never
used after another process has changed what the scope sees.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from ..records import Document
from ..scopes import visible_scopes
from .page_rows import SAMPLE_BUCKETS

SPREAD_SAMPLE = 1000  # pages the spread is estimated from (its standard error is then about 2 %)
VIEW_BYTES = 256 << 20  # the samples kept per process: about 80 scopes at 768-d, 20 at 3,072-d


@dataclass(frozen=True)
class ScopeView:
    version: int
    scopes: list[str]  # the scope's own and the shared one
    documents: dict[str, Document]
    sample: np.ndarray  # (rows, dim) float32: every row of the sampled pages
    sample_page: np.ndarray  # each row's page, numbered 0..n-1 within the sample

    def spread(self, query: np.ndarray) -> float:
        """The standard deviation of the sampled pages' dense scores (a page's best row), as stddev_pop."""
        if not len(self.sample):
            return 0.0
        best = np.full(int(self.sample_page[-1]) + 1, -np.inf, dtype=np.float32)
        np.maximum.at(best, self.sample_page, self.sample @ query.astype(np.float32))
        return float(best.astype(np.float64).std())


class ScopeViews:
    """The latest views of the most recently asked scopes (least recently asked dropped first)."""

    def __init__(self):
        self._views: OrderedDict[str, ScopeView] = OrderedDict()

    async def get(self, conn, scope: str, version: int) -> ScopeView:
        view = self._views.get(scope)
        if view is None or view.version != version:
            view = await _load(conn, scope, version)
            self._views[scope] = view
        self._views.move_to_end(scope)
        while len(self._views) > 1 and sum(v.sample.nbytes for v in self._views.values()) > VIEW_BYTES:
            self._views.popitem(last=False)
        return view


async def _load(conn, scope: str, version: int) -> ScopeView:
    # Read after the version: what is read is that version or a newer one, and a newer one makes the
    # next question's version differ, so it loads again.
    scopes = visible_scopes(scope)
    rows = await (
        await conn.execute("SELECT record FROM pixelrag_documents WHERE scope = ANY(%s) ORDER BY position", (scopes,))
    ).fetchall()
    documents = {d.doc_id: d for d in (Document(**r[0]) for r in rows)}
    visible = sum(d.page_count for d in documents.values())
    buckets = min(SAMPLE_BUCKETS, math.ceil(SAMPLE_BUCKETS * SPREAD_SAMPLE / max(1, visible)))
    rows = []
    if documents:
        from pgvector.psycopg import register_vector_async

        await register_vector_async(conn)
        rows = await (
            await conn.execute(  # in binary: 1,000 vectors as text take seconds to parse in Python
                "SELECT page_id, embedding FROM pixelrag_vectors WHERE doc_id = ANY(%s) AND sample < %s ORDER BY "
                "page_id",
                (list(documents), buckets),
                binary=True,
            )
        ).fetchall()
    ids = np.array([r[0] for r in rows], dtype=np.int64)
    sample = np.array([_floats(r[1]) for r in rows], dtype=np.float32) if rows else np.zeros((0, 1), np.float32)
    sample_page = np.unique(ids, return_inverse=True)[1].astype(np.int64)  # ordered by page_id
    return ScopeView(version, scopes, documents, sample, sample_page)


def _floats(embedding) -> np.ndarray:
    return embedding.to_numpy() if hasattr(embedding, "to_numpy") else np.asarray(embedding)  # halfvec / vector
