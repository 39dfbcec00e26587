"""A BM25 index's file: its postings arrays and its terms in one .npz, written with each snapshot."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .bm25 import LexicalIndex


def save(index: LexicalIndex, path: Path) -> None:
    offsets, pages, tf, lengths = index.arrays()
    np.savez(
        path,
        terms=np.frombuffer("\n".join(index.keys).encode("utf-8"), dtype=np.uint8),
        offsets=offsets,
        pages=pages,
        tf=tf,
        lengths=lengths,
        params=np.array([index.k1, index.b], dtype=np.float64),
    )


def load(path: Path) -> LexicalIndex:
    with np.load(path) as data:
        blob = data["terms"].tobytes().decode("utf-8")
        k1, b = (float(v) for v in data["params"])
        return LexicalIndex.from_arrays(
            blob.split("\n") if blob else [], data["offsets"], data["pages"], data["tf"], data["lengths"], k1, b
        )
