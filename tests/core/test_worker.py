"""The indexing worker over a real queue (SQLite): how a job ends, what the metrics count, and the due
sources it queues checks for."""

from __future__ import annotations

import time

from prometheus_client import REGISTRY

from core import BadInput, Worker, new_jobs
from core.embedded.jobs import EmbeddedJobs
from core.records import WatchedSource


def counted(kind: str, state: str) -> float:
    return REGISTRY.get_sample_value("pixelrag_index_jobs_total", {"kind": kind, "state": state}) or 0.0


async def test_a_job_ends_done_or_failed_with_its_outcome_and_is_counted(tmp_path):
    queue = await EmbeddedJobs(tmp_path / "jobs.sqlite").open()
    try:
        _, jobs = new_jobs(["/good.pdf", "/bad.pdf", "/broken.pdf"], "shared")
        await queue.add(jobs)

        async def run(job, heard):
            if job.source == "/bad.pdf":
                raise BadInput("/bad.pdf: the PDF is encrypted.")
            if job.source == "/broken.pdf":
                raise RuntimeError("a bug")
            return f"indexed {job.source}", {"pages_total": 1}

        before = {state: counted("index", state) for state in ("done", "failed")}
        assert await Worker(queue, run, name="w").work(batch=jobs[0].batch) == 3
        ended = {j.source: (j.state, j.outcome) for j in await queue.jobs()}
        assert ended["/good.pdf"][0] == "done" and ended["/good.pdf"][1].startswith("indexed /good.pdf")
        assert ended["/bad.pdf"] == ("failed", "/bad.pdf: the PDF is encrypted.")
        assert ended["/broken.pdf"] == ("failed", "Something went wrong (RuntimeError); it was logged.")
        results = {j.source: j.result for j in await queue.jobs()}
        assert results == {
            "/good.pdf": {"pages_total": 1},
            "/bad.pdf": {"error": "BadInput"},
            "/broken.pdf": {"error": "PixelragError"},
        }
        assert counted("index", "done") - before["done"] == 1 and counted("index", "failed") - before["failed"] == 2
    finally:
        await queue.close()


async def test_due_sources_get_one_check_job_each(tmp_path):
    queue = await EmbeddedJobs(tmp_path / "jobs.sqlite").open()
    try:
        now = time.time()
        await queue.add_source(WatchedSource("due", "/srv/a", "shared", 3600, created=now, next_check=now - 1))
        await queue.add_source(WatchedSource("later", "/srv/b", "shared", 3600, created=now, next_check=now + 600))
        worker = Worker(queue, None, name="w")  # type: ignore[arg-type]  (scheduling only)
        await worker.schedule()
        await worker.schedule()  # held ahead: not queued twice
        assert [(j.kind, j.source) for j in await queue.jobs()] == [("check", "due")]
    finally:
        await queue.close()


async def test_a_path_that_is_not_utf8_is_kept_as_it_is_and_shown_readably(tmp_path):
    import os

    from core import queue_status, shown_source
    from core.indexing.worker import source_of

    odd = os.fsdecode(b"/srv/manuals/caf\xe9.pdf")  # Latin-1 bytes in a name: a lone surrogate in Python
    queue = await EmbeddedJobs(tmp_path / "jobs.sqlite").open()
    try:
        _, jobs = new_jobs([odd], "shared")
        await queue.add(jobs)
        held = await queue.take("w", 30)
        assert source_of(held) == odd  # what the worker opens: the very file
        assert shown_source(held) == "/srv/manuals/caf\ufffd.pdf"
        assert (await queue_status(queue))["jobs_running"] == ["index /srv/manuals/caf\ufffd.pdf (shared) by w"]
        assert (await queue_status(queue, "slack:T1"))["jobs_running"] == ["caf\ufffd.pdf"]  # no path, no host
    finally:
        await queue.close()
