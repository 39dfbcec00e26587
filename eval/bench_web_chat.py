"""The browser chat's responsiveness with the local backend: from pressing Enter to the first visible
change (the question shown, "Sending the question…"), to the server's first stage, to the found pages,
and to the whole answer; headless Chromium (Debian's) driven by Playwright, the sample brochure indexed.

    python eval/bench_web_chat.py [--questions 10]

Target (issue 50): the first visible change within 300 ms of pressing Enter.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from aiohttp import web

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bot.web.server import web_app  # noqa: E402
from core import EmbeddedThreads, Service, Settings  # noqa: E402
from eval.sample_document import build  # noqa: E402

QUESTIONS = [
    "What is the mounting hole spacing of the HydroFlow HF-300?",
    "How much does the HF-300 weigh?",
    "Which connection thread does the pump take?",
    "What are the service intervals?",
    "What is the overall length?",
]


async def run(n: int) -> None:
    from playwright.async_api import async_playwright

    with tempfile.TemporaryDirectory() as tmp:
        pdf = build(Path(tmp) / "hf300-brochure.pdf")
        settings = Settings(index_dir=Path(tmp) / "index", backend="local")
        threads = await EmbeddedThreads(Path(tmp) / "web-threads.sqlite").open()
        async with Service(settings, costs=threads) as service:
            await service.index([str(pdf)])
            await service.warm_up()
            runner = web.AppRunner(web_app(service, threads))
            await runner.setup()
            site = web.TCPSite(runner, "127.0.0.1", 0)
            await site.start()
            port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            marks: dict[str, list[float]] = {"first visible change": [], "first stage": [], "pages": [], "answer": []}
            async with async_playwright() as playwright:
                browser = await playwright.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
                page = await browser.new_page()
                await page.goto(f"http://127.0.0.1:{port}/")
                for i in range(n):
                    await page.click("#new")  # each question on its own, as a first question
                    await page.fill("#question", QUESTIONS[i % len(QUESTIONS)])
                    began = time.perf_counter()
                    await page.press("#question", "Enter")
                    turn = page.locator(".turn").last
                    for name, selector in (
                        ("first visible change", ".question"),
                        ("first stage", ".steps li:not([data-key=send])"),
                        ("pages", ".pages a"),
                        ("answer", ".answer .markdown"),
                    ):
                        await turn.locator(selector).first.wait_for(timeout=120_000)
                        marks[name].append((time.perf_counter() - began) * 1000)
                await browser.close()
            await runner.cleanup()
        await threads.close()
    for name, times in marks.items():
        print(f"{name:<22} p50 {statistics.median(times):7.1f} ms   max {max(times):7.1f} ms   ({n} questions)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--questions", type=int, default=10)
    asyncio.run(run(parser.parse_args().questions))


if __name__ == "__main__":
    main()
