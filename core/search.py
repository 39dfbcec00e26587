"""Page retrieval: dense vectors (max over a page's rows), BM25 over page words, rank fusion."""
from __future__ import annotations

import math
from collections import Counter

import numpy as np

from .text import content_tokens, stem

RRF_K = 60


class LexicalIndex:
    """BM25 (k1=1.2, b=0.75) over one text per page, on crude stems."""

    def __init__(self, texts: list[str], k1: float = 1.2, b: float = 0.75):
        self.k1, self.b = k1, b
        self.postings: dict[str, list[tuple[int, int]]] = {}
        lengths = []
        for i, text in enumerate(texts):
            counts = Counter(stem(t) for t in content_tokens(text))
            lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                self.postings.setdefault(term, []).append((i, tf))
        self.lengths = np.asarray(lengths, dtype=np.float32)
        self.avg = float(self.lengths.mean()) if len(lengths) else 1.0
        self.n = len(texts)

    def idf(self, term: str) -> float:
        df = len(self.postings.get(term, ()))
        return math.log(1 + (self.n - df + 0.5) / (df + 0.5))

    def scores(self, query: str) -> np.ndarray:
        out = np.zeros(self.n, dtype=np.float32)
        for term in set(stem(t) for t in content_tokens(query)):
            idf = self.idf(term)
            for i, tf in self.postings.get(term, ()):
                norm = tf + self.k1 * (1 - self.b + self.b * self.lengths[i] / max(self.avg, 1e-6))
                out[i] += idf * tf * (self.k1 + 1) / norm
        return out


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


def fuse(rankings: list[tuple[list[int], float]], k: int) -> list[tuple[int, float]]:
    """Weighted reciprocal-rank fusion: sum of weight / (RRF_K + rank)."""
    fused: dict[int, float] = {}
    for ranking, weight in rankings:
        for rank, page in enumerate(ranking, start=1):
            fused[page] = fused.get(page, 0.0) + weight / (RRF_K + rank)
    return sorted(fused.items(), key=lambda kv: -kv[1])[:k]
