"""The page viewer's latency: /view (the page's HTML), /page (its image) and /pdf (the original) for a
40-page PDF indexed with the local backend, served by `pixelrag web`'s app on loopback and asked by one
client at a time, as a person clicking a citation would.

    python eval/bench_viewer.py [--pages 40] [--requests 200]

Targets (issue 50): /view p50 under 150 ms, /pdf p50 under 50 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import pymupdf
from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bot.web.server import web_app  # noqa: E402
from core import Service, Settings  # noqa: E402
from core.records import Highlight  # noqa: E402


def sample_pdf(path: Path, pages: int) -> Path:
    """Pages of a manual: a heading, a paragraph, a table of values and a drawn outline."""
    doc = pymupdf.open()
    for n in range(1, pages + 1):
        page = doc.new_page()
        page.insert_text((60, 80), f"Chapter {n}: the X{n}00 pump", fontsize=18)
        body = " ".join(f"The X{n}00 delivers {n * 7} litres per minute at {n % 5 + 1} bar." for _ in range(12))
        page.insert_textbox(pymupdf.Rect(60, 110, 540, 400), body, fontsize=11)
        for row in range(8):
            page.insert_text((60, 440 + row * 18), f"Setting {row}: {n * row} mm", fontsize=10)
        page.draw_rect(pymupdf.Rect(320, 430, 540, 600), color=(0, 0, 0.6), width=1.5)
    doc.save(path)
    doc.close()
    return path


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def run(pages: int, requests: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        pdf = sample_pdf(Path(tmp) / "pump-manual.pdf", pages)
        settings = Settings(index_dir=Path(tmp) / "index", backend="local", public_url="http://127.0.0.1")
        async with Service(settings) as service:
            began = time.perf_counter()
            await service.index([str(pdf)])
            print(f"indexed {pages} pages in {time.perf_counter() - began:.1f} s")
            [document] = await service.documents("shared")
            links = await service.links()
            tokens = [
                links.token(links.link(document, n, Highlight("exact", (0.1, 0.1, 0.6, 0.2)), time.time()))
                for n in range(1, pages + 1)
            ]
            runner = web.AppRunner(web_app(service))
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            base = f"http://127.0.0.1:{port}"
            try:
                async with aiohttp.ClientSession() as session:
                    for route in ("view", "page", "pdf"):
                        times, size = [], 0
                        for i in range(requests):
                            url = f"{base}/{route}/{tokens[i % pages]}"
                            began = time.perf_counter()
                            async with session.get(url) as response:
                                body = await response.read()
                            times.append((time.perf_counter() - began) * 1000)
                            assert response.status == 200, (route, response.status)
                            size = len(body)
                        p50, p95 = statistics.median(times), percentile(times, 0.95)
                        print(
                            f"/{route:<5} p50 {p50:6.1f} ms   p95 {p95:6.1f} ms   max {max(times):6.1f} ms"
                            f"   ({requests} requests, {size / 1024:.0f} KB each)"
                        )
            finally:
                await runner.cleanup()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=40)
    parser.add_argument("--requests", type=int, default=200)
    args = parser.parse_args()
    asyncio.run(run(args.pages, args.requests))


if __name__ == "__main__":
    main()
