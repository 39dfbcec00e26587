"""Dense page scores: the cosine of the query with each page, the best of the page's rows."""

from __future__ import annotations

import numpy as np


def dense_page_scores(vectors: np.ndarray, row_page: np.ndarray, n_pages: int, query: np.ndarray) -> np.ndarray:
    """Cosine of the query with each page: the best of that page's rows."""
    scores = np.full(n_pages, -np.inf, dtype=np.float32)
    if len(vectors):
        np.maximum.at(scores, row_page, vectors @ query.astype(np.float32))
    return scores


def top_pages(scores: np.ndarray, allowed: np.ndarray, k: int) -> list[int]:
    masked = np.where(allowed, scores, -np.inf)
    k = min(k, int(allowed.sum()))
    if k <= 0:
        return []
    idx = np.argpartition(-masked, k - 1)[:k]
    return [int(i) for i in idx[np.argsort(-masked[idx], kind="stable")] if np.isfinite(masked[i])]
