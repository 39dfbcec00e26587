"""How the PostgreSQL page index lays pages and vectors out in rows, shared by its search
(page_search.py) and its builds (page_builds.py)."""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..embedded.snapshot_format import word_from_row
from ..ranking.bm25 import lexical_text, page_terms
from ..records import Page

SAMPLE_BUCKETS = 1024  # a page's random bucket; the spread of dense scores is taken over a few buckets


def page_lexicon(title: str, page: Page, df: Counter, bounds: dict[str, tuple[float, float]]) -> tuple[Counter, float]:
    """A page's BM25 terms and length, as lexical_index() makes them (its document's title, then its text);
    `df` gains each of its terms once, `bounds` each term's largest tf and shortest page (page_bm25.py)."""
    terms = page_terms(lexical_text(title, page))
    length = float(sum(terms.values()))
    df.update(terms.keys())
    for term, tf in terms.items():
        top_tf, shortest = bounds.get(term, (0.0, length))
        bounds[term] = (max(top_tf, float(tf)), min(shortest, length))
    return terms, length


def vector_type(dim: int) -> str:
    return "vector" if dim <= 2000 else "halfvec"  # HNSW indexes vector up to 2,000 dimensions, halfvec 4,000


def vector_text(values: np.ndarray) -> str:
    """pgvector's text form: float32 values written so that they read back exactly."""
    return "[" + ",".join(map(str, np.asarray(values, dtype=np.float32).tolist())) + "]"


def page_from_row(row) -> Page:
    """(doc_id, page, content_hash, width_pt, height_pt, words, ...) -> Page."""
    doc_id, page, content_hash, width, height, words = row[:6]
    return Page(doc_id, page, content_hash, width, height, tuple(word_from_row(w) for w in words))
