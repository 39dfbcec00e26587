"""The HTTP API's page search against the search itself: /api/search on a real `pixelrag web` process
(loopback, the local backend, a key of the shared collection) with 1 and with 8 concurrent clients, and
with page images inline, beside the same questions searched in process (Service.answer, retrieve_only).
The techdocs index (index/eval-local) is copied to a temporary folder first, as `pixelrag keys add`
writes web-threads.sqlite beside the index; the questions are the techdocs dev questions that stand
alone (follow-ups left out).

    python eval/bench_api.py [--index index/eval-local] [--questions ../shared/corpora/dev-questions.jsonl]
                             [--rounds 3]

Each client asks every question in turn, --rounds times, after one warm-up round; the 8 clients start
at different questions. Target (docs/api.md): the API's overhead at p50, 1 client, under 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from core import Service, Settings  # noqa: E402
from core.records import Turn  # noqa: E402

CLIENTS = 8
TARGET_MS = 50


@dataclass
class Figures:
    """One row of the table: each request's milliseconds, the phase's wall time, what went wrong."""

    times: list[float] = field(default_factory=list)
    wall: float = 0.0
    sizes: list[int] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    @property
    def p50(self) -> float:
        return statistics.median(self.times)

    @property
    def p99(self) -> float:
        return percentile(self.times, 0.99)

    @property
    def rate(self) -> float:
        return len(self.times) / self.wall


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def load_questions(path: Path) -> list[str]:
    """The questions that stand alone: a follow-up ("And which drivers…?") asked without its thread gets a
    clarifying question and no pages, which measures nothing here."""
    with path.open(encoding="utf-8") as lines:
        records = [json.loads(line) for line in lines if line.strip()]
    return [r["question"] for r in records if not r.get("follow_up_of")]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env() -> dict[str, str]:
    """This environment without PIXELRAG_* (no limits, no database), GEMINI_* or GOOGLE_* (the local
    backend), with the checkout importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_", "PIXELRAG_"))}
    env["PYTHONPATH"] = str(ROOT)
    return env


async def local_search(index: Path, questions: list[str], rounds: int) -> Figures:
    """Each question through Service.answer(retrieve_only=True) in this process, after a warm-up round."""
    figures = Figures()
    async with Service(Settings(index_dir=index, backend="local")) as service:
        await service.warm_up()
        for question in questions:
            await service.answer(Turn(question, (), "shared", "", ()), retrieve_only=True)
        began = time.perf_counter()
        for _ in range(rounds):
            for question in questions:
                start = time.perf_counter()
                answer = await service.answer(Turn(question, (), "shared", "", ()), retrieve_only=True)
                figures.times.append((time.perf_counter() - start) * 1000)
                if not answer.hits:
                    figures.failures.append(f"no pages for {question[:40]!r}")
        figures.wall = time.perf_counter() - began
    return figures


async def ask(session: aiohttp.ClientSession, url: str, key: str, question: str, images: bool, into: Figures) -> None:
    body = {"query": question, "images": True} if images else {"query": question}
    start = time.perf_counter()
    async with session.post(url, json=body, headers={"Authorization": f"Bearer {key}"}) as response:
        data = await response.read()
    into.times.append((time.perf_counter() - start) * 1000)
    into.sizes.append(len(data))
    if response.status != 200:
        into.failures.append(f"HTTP {response.status} for {question[:40]!r}: {data[:200].decode(errors='replace')}")
    elif not json.loads(data).get("results"):
        into.failures.append(f"no results for {question[:40]!r}")


async def api_search(
    session: aiohttp.ClientSession, url: str, key: str, questions: list[str], rounds: int, clients: int, images: bool
) -> Figures:
    """`clients` clients at once, each asking every question in turn `rounds` times (client i from the
    i-th question on, so that they do not ask the same question together)."""
    figures = Figures()

    async def client(i: int) -> None:
        mine = questions[i % len(questions) :] + questions[: i % len(questions)]
        for _ in range(rounds):
            for question in mine:
                await ask(session, url, key, question, images, figures)

    began = time.perf_counter()
    await asyncio.gather(*(client(i) for i in range(clients)))
    figures.wall = time.perf_counter() - began
    return figures


async def serve(index: Path, cwd: Path, log: Path) -> tuple[subprocess.Popen, str]:
    """`pixelrag web` on a free loopback port, once /readyz answers 200; (process, base URL)."""
    port = free_port()
    with log.open("wb") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "web", "--index", str(index), "--port", str(port)],
            cwd=cwd, env=clean_env(), stdout=subprocess.DEVNULL, stderr=stderr,
        )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    began = time.perf_counter()
    async with aiohttp.ClientSession() as session:
        while time.perf_counter() - began < 180:
            if process.poll() is not None:
                raise SystemExit(f"pixelrag web exited with {process.returncode}:\n{log.read_text()[-3000:]}")
            try:
                async with session.get(f"{base}/readyz") as response:
                    if response.status == 200:
                        print(f"pixelrag web ready in {time.perf_counter() - began:.1f} s")
                        return process, base
            except aiohttp.ClientConnectionError:
                pass
            await asyncio.sleep(0.1)
    stop(process)
    raise SystemExit(f"pixelrag web was not ready within 180 s:\n{log.read_text()[-3000:]}")


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        print("pixelrag web did not stop within 30 s of SIGTERM; killed")
        process.kill()
        process.wait()


def add_key(index: Path, cwd: Path) -> str:
    made = subprocess.run(
        [sys.executable, "-m", "bot.cli", "keys", "add", "bench", "--scope", "shared", "--index", str(index)],
        capture_output=True, text=True, env=clean_env(), cwd=cwd, timeout=120,
    )  # fmt: skip
    if made.returncode != 0:
        raise SystemExit(f"pixelrag keys add failed ({made.returncode}):\n{made.stderr}")
    return made.stdout.strip().splitlines()[-1]


async def run(source: Path, questions: list[str], rounds: int) -> None:
    print(f"{len(questions)} questions x {rounds} rounds; index {source}; {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="bench-api-") as tmp:
        index = Path(tmp) / "index"
        # a web-threads.sqlite of the source's (its keys) would make the name "bench" taken: left behind
        shutil.copytree(source, index, ignore=shutil.ignore_patterns("web-threads.sqlite*"))
        local = await local_search(index, questions, rounds)
        log = Path(tmp) / "web.log"
        process, base = await serve(index, Path(tmp), log)
        try:
            key = add_key(index, Path(tmp))
            url = f"{base}/api/search"
            connector = aiohttp.TCPConnector(limit=CLIENTS * 2)
            async with aiohttp.ClientSession(connector=connector) as session:
                warm = await api_search(session, url, key, questions, 1, 1, False)
                one = await api_search(session, url, key, questions, rounds, 1, False)
                many = await api_search(session, url, key, questions, rounds, CLIENTS, False)
                images = await api_search(session, url, key, questions, rounds, 1, True)
        finally:
            stop(process)
        logged = log.read_text(errors="replace")

    rows = [
        ("local search (in process)", local),
        ("/api/search, 1 client", one),
        (f"/api/search, {CLIENTS} clients", many),
        ("/api/search with images, 1 client", images),
    ]
    print()
    print("| | p50 ms | p99 ms | req/s |")
    print("|---|---:|---:|---:|")
    for name, figures in rows:
        print(f"| {name} | {figures.p50:.1f} | {figures.p99:.1f} | {figures.rate:.1f} |")
    print()
    overhead = one.p50 - local.p50
    print(f"API overhead at p50, 1 client: {overhead:.1f} ms (target: under {TARGET_MS} ms)")
    plain = statistics.mean(one.sizes + many.sizes)
    print(
        f"mean response: {plain / 1024:.1f} KB without images, {statistics.mean(images.sizes) / 1024:.1f} KB with"
        f" images (1 client p50 {images.p50:.1f} ms)"
    )
    failures = Counter(f for _, figures in rows for f in figures.failures + (warm.failures if figures is one else []))
    if failures:
        print(f"NOT every response was 200 with results: {sum(failures.values())} failure(s) (warm-up included):")
        for failure, times in failures.most_common(10):
            print(f"  {times} x {failure}")
    else:
        print("every response was 200 with results (and every local search found pages)")
    if "Traceback" in logged:
        print(f"pixelrag web logged a traceback:\n{logged[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, default=ROOT / "index" / "eval-local")
    parser.add_argument("--questions", type=Path, default=ROOT.parent / "shared" / "corpora" / "dev-questions.jsonl")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if not args.index.is_dir():
        parser.error(f"{args.index}: no such index folder")
    asyncio.run(run(args.index, load_questions(args.questions), args.rounds))


if __name__ == "__main__":
    main()
