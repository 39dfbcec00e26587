"""Score fusion of dense and BM25 page scores.

Fusion is a weighted sum of normalized scores rather than reciprocal ranks: the quantized e5
cosines are squeezed into a narrow band, so ranks alone turn tiny dense differences into large
ones and break ties by page order. Dense scores are standardized over the visible pages (how far a
page stands out from the collection) and BM25 scores are divided by the best page's, so a page that
both signals single out wins, and a clear lexical match survives a middling dense score. How much
each signal counts depends on the query's lexical coverage (see dense_weight).
"""

from __future__ import annotations

import numpy as np

from .dense import top_pages

# The dense weight follows the lexical coverage of the query: DENSE_BASE when some page holds every
# query term (BM25 is then precise), up to DENSE_BASE + DENSE_GAIN when no page holds any (typically a
# question in another language than the pages: only the multilingual dense model bridges it).
DENSE_BASE = 0.3
DENSE_GAIN = 0.5
DENSE_TEMPERATURE = 2.0


def standardized(scores: np.ndarray, best: float, spread: float, temperature: float = DENSE_TEMPERATURE) -> np.ndarray:
    """exp((z - z_max) / T) of each page's z-score over the visible collection, from the collection's
    best score and standard deviation (`spread`): the best page is 1, a page one standard deviation
    behind it exp(-1/T). Written with the best and the spread alone, so that a store which scores only
    candidates (PostgreSQL) computes what scoring every page would."""
    return np.exp((scores.astype(np.float64) - best) / ((spread + 1e-9) * temperature))


def dense_weight(coverage: float) -> float:
    return DENSE_BASE + DENSE_GAIN * (1.0 - min(1.0, max(0.0, coverage)))


def fused(
    dense: np.ndarray,
    best: float,
    spread: float,
    lexical: np.ndarray | None = None,
    lexical_best: float = 0.0,
    coverage: float = 0.5,
) -> np.ndarray:
    """w * standardized dense + (1 - w) * BM25 / best BM25 of each candidate page, w = dense_weight(coverage);
    `best` and `spread` describe the dense scores of every visible page, `lexical_best` their best BM25."""
    out = standardized(dense, best, spread)
    if lexical is not None:
        w = dense_weight(coverage)
        scaled = lexical.astype(np.float64) / lexical_best if lexical_best > 0 else np.zeros(len(lexical))
        out = w * out + (1 - w) * scaled
    return out


def fuse_scores(
    dense: np.ndarray, lexical: np.ndarray | None, allowed: np.ndarray, k: int, coverage: float = 0.5
) -> list[tuple[int, float]]:
    """The top k allowed pages by fused(), every page a candidate."""
    ok = allowed & np.isfinite(dense)
    if not ok.any():
        return []
    visible = dense[ok].astype(np.float64)
    lexical_best = float(np.where(allowed, lexical, 0.0).max()) if lexical is not None and len(lexical) else 0.0
    scores = np.zeros(len(dense), dtype=np.float64)
    scores[ok] = fused(
        dense[ok],
        float(visible.max()),
        float(visible.std()),
        lexical[ok] if lexical is not None else None,
        lexical_best,
        coverage,
    )
    return [(i, float(scores[i])) for i in top_pages(scores, ok, k)]
