"""Search latency and memory over synthetic pages: the dense step of Service._search
(dense_page_scores + the top-k selection) over N pages x D dimensions, one row per page; and the
lexical step of the local backend (BM25 built when a snapshot is written, saved with it, and read back
when a process opens it; then scores + coverage per query) over N synthetic pages of 200
Zipf-distributed words.

    python eval/bench_search.py [--sizes 10000,100000,1000000] [--dims 768,3072] [--queries 100]
                                [--lexical-sizes 10000,100000]

Vectors are random unit vectors (float32; latency does not depend on their values). A matrix that
would not fit in the memory left (less than 3 GB headroom) is stored as float16 instead and that is
reported; a float16 matrix is multiplied in float32 blocks, as a real float16 index would be.
"""

from __future__ import annotations

import argparse
import resource
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from core.ranking import bm25_file  # noqa: E402
from core.ranking.bm25 import LexicalIndex  # noqa: E402
from core.ranking.dense import dense_page_scores  # noqa: E402
from core.ranking.fusion import fuse_scores  # noqa: E402

BLOCK = 65536


def available_bytes() -> int:
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    return 8 << 30


def make_matrix(n: int, dim: int, dtype, rng) -> np.ndarray:
    m = np.empty((n, dim), dtype=dtype)
    for start in range(0, n, BLOCK):
        block = rng.standard_normal((min(BLOCK, n - start), dim), dtype=np.float32)
        block /= np.linalg.norm(block, axis=1, keepdims=True)
        m[start : start + len(block)] = block
    return m


def scores_f16(m: np.ndarray, row_page: np.ndarray, n: int, q: np.ndarray) -> np.ndarray:
    out = np.empty(n, dtype=np.float32)
    for start in range(0, len(m), BLOCK):
        out[start : start + BLOCK] = m[start : start + BLOCK].astype(np.float32) @ q
    return out


def bench(n: int, dim: int, queries: int, rng) -> dict:
    need = n * dim * 4
    dtype = np.float32 if need + (3 << 30) < available_bytes() else np.float16
    t0 = time.perf_counter()
    m = make_matrix(n, dim, dtype, rng)
    build_s = time.perf_counter() - t0
    row_page = np.arange(n)
    allowed = np.ones(n, dtype=bool)
    lat = []
    for _ in range(queries):
        q = rng.standard_normal(dim, dtype=np.float32)
        q /= np.linalg.norm(q)
        t = time.perf_counter()
        if dtype == np.float32:
            dense = dense_page_scores(m, row_page, n, q)
        else:
            dense = scores_f16(m, row_page, n, q)
        fuse_scores(dense, None, allowed, 4)
        lat.append((time.perf_counter() - t) * 1000)
    lat = np.array(lat)
    out = {
        "pages": n,
        "dim": dim,
        "dtype": np.dtype(dtype).name,
        "matrix_mb": m.nbytes / 2**20,
        "p50_ms": float(np.percentile(lat, 50)),
        "p99_ms": float(np.percentile(lat, 99)),
        "queries": queries,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "build_s": build_s,
    }
    del m
    return out


def synthetic_pages(n: int, rng, words_per_page: int = 200, vocabulary: int = 50_000) -> tuple[list[str], list[str]]:
    """Pages of letters-only words drawn from a Zipf distribution (a few words everywhere, most rare)."""
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = ["".join(rng.choice(letters, size=rng.integers(4, 11))) for _ in range(vocabulary)]
    ranks = np.minimum(rng.zipf(1.2, size=(n, words_per_page)), vocabulary) - 1
    return [" ".join(vocab[r] for r in row) for row in ranks], vocab


def bench_lexical(n: int, queries: int, rng) -> dict:
    import tempfile

    pages, vocab = synthetic_pages(n, rng)
    t0 = time.perf_counter()
    built = LexicalIndex(pages)
    build_s = time.perf_counter() - t0
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "lexical.npz"
        t0 = time.perf_counter()
        bm25_file.save(built, path)
        save_s = time.perf_counter() - t0
        file_mb = path.stat().st_size / 2**20
        del built
        t0 = time.perf_counter()
        index = bm25_file.load(path)  # what opening a snapshot costs now; its arrays are the file, read whole
        open_s = time.perf_counter() - t0
    # The next build: one 50-page document added, one of the first 50 pages' document removed.
    added, _ = synthetic_pages(50, rng)
    t0 = time.perf_counter()
    index.extended(range(50, n), added)
    update_s = time.perf_counter() - t0
    allowed = np.ones(n, dtype=bool)
    lat = []
    for _ in range(queries):
        # six query words: two common, four from the long tail, as a question's mix tends to be
        picks = list(rng.integers(0, 50, size=2)) + list(rng.integers(50, 5_000, size=4))
        query = " ".join(vocab[i] for i in picks)
        t = time.perf_counter()
        index.scores(query)
        index.coverage(query, allowed)
        lat.append((time.perf_counter() - t) * 1000)
    lat = np.array(lat)
    return {
        "pages": n,
        "build_s": build_s,
        "update_s": update_s,
        "save_s": save_s,
        "open_s": open_s,
        "file_mb": file_mb,
        "p50_ms": float(np.percentile(lat, 50)),
        "p99_ms": float(np.percentile(lat, 99)),
        "queries": queries,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10000,100000,1000000")
    ap.add_argument("--dims", default="768,3072")
    ap.add_argument("--queries", type=int, default=100, help="queries per configuration (fewer for 1M pages)")
    ap.add_argument("--lexical-sizes", default="10000,100000")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    print("## Search latency (dense scoring + top-4 selection, one row per page, 2 cores)\n")
    print("| pages | dim | dtype | matrix | p50 | p99 | queries | peak RSS so far |")
    print("|---|---|---|---|---|---|---|---|")
    for n in (int(s) for s in args.sizes.split(",")):
        for dim in (int(d) for d in args.dims.split(",")):
            q = args.queries if n < 1_000_000 else max(20, args.queries // 5)
            r = bench(n, dim, q, rng)
            print(
                f"| {n:,} | {dim} | {r['dtype']} | {r['matrix_mb']:,.0f} MB | {r['p50_ms']:.1f} ms | "
                f"{r['p99_ms']:.1f} ms | {r['queries']} | {r['peak_rss_mb']:,.0f} MB |",
                flush=True,
            )
    print(
        "\n## Lexical search (local backend: BM25 built and saved when a snapshot is written, read back when a "
        "process opens it; then scores + coverage per query; 200 Zipf-distributed words per page)\n"
    )
    print(
        "| pages | BM25 build (at write) | next build (+50 pages, -50) | save | open (read back whole) | file | "
        "query p50 | query p99 | queries |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for n in (int(s) for s in args.lexical_sizes.split(",") if s):
        r = bench_lexical(n, args.queries, rng)
        print(
            f"| {n:,} | {r['build_s']:.1f} s | {r['update_s']:.1f} s | {r['save_s']:.2f} s | {r['open_s']:.2f} s | "
            f"{r['file_mb']:,.0f} MB | "
            f"{r['p50_ms']:.1f} ms | {r['p99_ms']:.1f} ms | {r['queries']} |",
            flush=True,
        )
    print(
        "\nBefore the index was saved, every process paid the build column each time it opened a snapshot; now "
        "it pays the open column, and the build is paid once, when the snapshot is written (off the event loop). "
        "A later snapshot extends the previous one's index: the next-build column, which tokenizes only the "
        "pages added."
    )


if __name__ == "__main__":
    main()
