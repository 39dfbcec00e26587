"""A BM25 index's file: its postings arrays and its terms in one .npz, written with each snapshot."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np

from . import bm25
from .bm25 import LexicalIndex


class StaleTerms(ValueError):
    """The file's terms were made by another version of page_terms()."""


def save(index: LexicalIndex, path: Path) -> None:
    path.write_bytes(encoded(index))


def encoded(index: LexicalIndex) -> bytes:
    """The file's bytes."""
    offsets, pages, tf, lengths = index.arrays()
    buffer = io.BytesIO()
    np.savez(
        buffer,
        terms=np.frombuffer("\n".join(index.keys).encode("utf-8"), dtype=np.uint8),
        offsets=offsets,
        pages=pages,
        tf=tf,
        lengths=lengths,
        params=np.array([index.k1, index.b], dtype=np.float64),
        version=np.array([bm25.TERMS_VERSION]),
    )
    return buffer.getvalue()


def load(path: Path) -> LexicalIndex:
    with np.load(path) as data:
        version = int(data["version"][0]) if "version" in data else 1  # files before versions were version 1
        if version != bm25.TERMS_VERSION:
            raise StaleTerms(f"terms of version {version}, this pixelrag makes {bm25.TERMS_VERSION}")
        blob = data["terms"].tobytes().decode("utf-8")
        k1, b = (float(v) for v in data["params"])
        return LexicalIndex.from_arrays(
            blob.split("\n") if blob else [], data["offsets"], data["pages"], data["tf"], data["lengths"], k1, b
        )
