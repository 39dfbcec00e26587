"""Opening the embedded index: what a bot process pays before its first answer, at N synthetic pages.

    python eval/bench_open.py [--pages 100000] [--words 150] [--dim 768]

Writes one snapshot through IndexFolder (N pages of Zipf-distributed words with boxes, one 768-d
vector each, 100 documents), then opens it three ways in fresh child processes, each reporting its
time and resident memory:
- "full": every page's words parsed, every source PDF hashed (what a build, `pixelrag status` and,
  before, every bot start did), then BM25 built from the words (what a bot start did before the
  lexical index was saved);
- "serving": what a bot does now (words read per page on demand, sources checked to exist, the saved
  BM25 index read back).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.embedded.index_folder import IndexFolder  # noqa: E402
from core.records import Document, Page, Word  # noqa: E402

CHILD = """
import json, os, sys, time
sys.path.insert(0, {root!r})
from core.embedded.index_folder import IndexFolder
from core.embedded.pages import EmbeddedPages
from core.ranking.bm25 import lexical_index
t = time.perf_counter()
store = IndexFolder(__import__("pathlib").Path({index!r}))
if {mode!r} == "serving":
    snap, lexical = EmbeddedPages(store).snapshot()
else:
    snap = store.open()
    lexical = lexical_index(snap.documents, snap.pages)
seconds = time.perf_counter() - t
rss = int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
page = snap.page(len(snap.pages) // 2)
print(json.dumps({{"seconds": seconds, "rss_mb": rss, "words": len(page.words), "terms": len(lexical.keys)}}))
"""


def build(root: Path, n: int, words_per_page: int, dim: int, rng) -> None:
    letters = np.array(list("abcdefghijklmnopqrstuvwxyz"))
    vocab = ["".join(rng.choice(letters, size=rng.integers(4, 11))) for _ in range(50_000)]
    store = IndexFolder(root)
    per_doc = n // 100
    documents, pages = [], []
    for d in range(100):
        data = f"document {d}".encode() * 1000
        sha = hashlib.sha256(data).hexdigest()
        store.save_source(sha, data)
        doc = Document(f"{d:016x}", f"Manual {d}", f"manual-{d}.pdf", sha, per_doc)
        documents.append(doc)
        image = f"page image {d}".encode()
        content = hashlib.sha256(image).hexdigest()
        store.save_page_image(content, image)
        for p in range(per_doc):
            ranks = np.minimum(rng.zipf(1.2, size=words_per_page), len(vocab)) - 1
            words = tuple(
                Word(vocab[r], (0.1, 0.1 + i / words_per_page / 2, 0.2, 0.12 + i / words_per_page / 2), i // 10)
                for i, r in enumerate(ranks)
            )
            pages.append(Page(doc.doc_id, p + 1, content, 595.0, 842.0, words))
    vectors = rng.standard_normal((len(pages), dim)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    name = store.write_snapshot({"backend": "local", "model": "bench", "dim": dim}, documents, pages, list(vectors))
    store.publish(name)


def open_in_child(index: Path, mode: str) -> dict:
    code = CHILD.format(root=str(ROOT), index=str(index), mode=mode)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=100_000)
    ap.add_argument("--words", type=int, default=150)
    ap.add_argument("--dim", type=int, default=768)
    ap.add_argument("--modes", default="full,serving", help="which opens to time (full takes minutes at 100k pages)")
    args = ap.parse_args()
    modes = args.modes.split(",")
    with tempfile.TemporaryDirectory() as folder:
        index = Path(folder) / "index"
        t = time.perf_counter()
        build(index, args.pages, args.words, args.dim, np.random.default_rng(0))
        write_s = time.perf_counter() - t
        size = sum(f.stat().st_size for f in index.rglob("*") if f.is_file()) / 2**20
        print(
            f"## Opening the embedded index ({args.pages:,} pages x {args.words} words, {args.dim}-d; "
            f"written in {write_s:.0f} s, {size:,.0f} MB on disk)\n"
        )
        print("| open | time | resident memory | as a bot opened it |")
        print("|---|---|---|---|")
        results = {}
        if "full" in modes:
            results["full"] = full = open_in_child(index, "full")
            print(
                f"| full: all words parsed, sources hashed, BM25 built | {full['seconds']:.1f} s | "
                f"{full['rss_mb']:,.0f} MB | before |",
                flush=True,
            )
        if "serving" in modes:
            results["serving"] = serving = open_in_child(index, "serving")
            print(
                f"| serving: words per page on demand, saved BM25 read | {serving['seconds']:.2f} s | "
                f"{serving['rss_mb']:,.0f} MB | now |",
                flush=True,
            )
        assert all(r["words"] == args.words for r in results.values())
        assert len({r["terms"] for r in results.values()}) == 1


if __name__ == "__main__":
    main()
