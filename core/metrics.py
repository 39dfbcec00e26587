"""What a running bot counts, for Prometheus (prometheus-client's default registry, exposed at /metrics by
bot/health.py): questions by platform and outcome, each stage's time, model requests by service and
status, feedback by rating, the index's size, and the event loop's lag."""

from __future__ import annotations

import asyncio
import time

from prometheus_client import Counter, Gauge, Histogram

QUESTIONS = Counter("pixelrag_questions", "Questions answered, by platform and outcome", ["platform", "outcome"])
STAGE_SECONDS = Histogram(
    "pixelrag_stage_seconds",
    "Time of each answering stage",
    ["stage"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
)
MODEL_REQUESTS = Counter("pixelrag_model_requests", "Requests to model services, by status", ["service", "status"])
FEEDBACK = Counter("pixelrag_feedback", "Ratings people gave answers", ["rating"])
INDEX_DOCUMENTS = Gauge("pixelrag_index_documents", "Documents in the index, every scope")
INDEX_PAGES = Gauge("pixelrag_index_pages", "Pages in the index, every scope")
JOBS = Counter("pixelrag_index_jobs", "Indexing jobs this process's worker ended, by kind and state", ["kind", "state"])
JOB_SECONDS = Histogram(
    "pixelrag_index_job_seconds",
    "How long this process's worker took over an indexing job, by kind",
    ["kind"],
    buckets=(0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600, 1800, 3600),
)
JOBS_WAITING = Gauge("pixelrag_index_jobs_waiting", "Indexing jobs queued, as this process's worker last counted")
LOOP_LAG = Gauge("pixelrag_event_loop_lag_seconds", "How late the event loop last ran a timer")

LAG_EVERY_S = 1.0


def platform_of(thread: str) -> str:
    """ "slack/T1/C1/123" -> "slack"; a question outside any thread (the CLI) is "cli"."""
    return thread.split("/", 1)[0] if thread else "cli"


async def watch_loop_lag(every: float = LAG_EVERY_S) -> None:
    """Until cancelled: how much later than asked a sleep wakes up (a blocked loop shows here)."""
    while True:
        asked = time.perf_counter()
        await asyncio.sleep(every)
        LOOP_LAG.set(max(0.0, time.perf_counter() - asked - every))
