"""How the PostgreSQL page index lays pages and vectors out in rows, shared by its search
(page_search.py) and its builds (page_builds.py)."""

from __future__ import annotations

import numpy as np

from ..embedded.snapshot_format import word_from_row
from ..records import Page

SAMPLE_BUCKETS = 1024  # a page's random bucket; the spread of dense scores is taken over a few buckets


def vector_type(dim: int) -> str:
    return "vector" if dim <= 2000 else "halfvec"  # HNSW indexes vector up to 2,000 dimensions, halfvec 4,000


def vector_text(values: np.ndarray) -> str:
    """pgvector's text form: float32 values written so that they read back exactly."""
    return "[" + ",".join(map(str, np.asarray(values, dtype=np.float32).tolist())) + "]"


def page_from_row(row) -> Page:
    """(doc_id, page, content_hash, width_pt, height_pt, words, ...) -> Page."""
    doc_id, page, content_hash, width, height, words = row[:6]
    return Page(doc_id, page, content_hash, width, height, tuple(word_from_row(w) for w in words))
