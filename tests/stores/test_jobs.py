"""The indexing job queue: one contract for both stores (a SQLite file beside the index folder, and
PostgreSQL on a real server): order, batches, leases, takeover, and takers racing for jobs."""

from __future__ import annotations

import asyncio
import time

import pytest

from core import Settings, job_queue, new_jobs
from core.embedded.jobs import EmbeddedJobs
from core.postgres.jobs import PostgresJobs


@pytest.fixture(params=["sqlite", "postgresql"])
def settings(request, tmp_path) -> Settings:
    url = request.getfixturevalue("database_url") if request.param == "postgresql" else None
    return Settings(index_dir=tmp_path / "index", database_url=url)


@pytest.fixture
async def queue(settings):
    made = job_queue(settings)
    assert isinstance(made, PostgresJobs if settings.database_url else EmbeddedJobs)
    await made.open()
    yield made
    await made.close()


async def test_jobs_are_taken_oldest_first_and_by_batch(queue):
    first, jobs = new_jobs(["/a.pdf", "https://example.com/b.pdf"], "shared", ["A"])
    second, later = new_jobs(["/c.pdf"], "slack:T1")
    await queue.add(jobs)
    await queue.add(later)
    taken = await queue.take("w1", 30, batch=second)
    assert (taken.source, taken.scope, taken.state, taken.worker, taken.attempts) == (
        "/c.pdf",
        "slack:T1",
        "running",
        "w1",
        1,
    )
    assert await queue.take("w1", 30, batch=second) is None  # that batch has nothing left to take
    a = await queue.take("w2", 30)
    assert (a.source, a.title, a.batch) == ("/a.pdf", "A", first)
    b = await queue.take("w2", 30)
    assert b.source == "https://example.com/b.pdf" and b.title is None
    assert await queue.take("w3", 30) is None


async def test_a_job_ends_once_and_only_by_its_holder(queue):
    _, jobs = new_jobs(["/a.pdf"], "shared")
    await queue.add(jobs)
    job = await queue.take("w1", 30)
    assert await queue.renew(job.id, "w1", 30, {"stage": "embed", "done": 2, "total": 5})
    assert not await queue.renew(job.id, "w2", 30, {})
    [seen] = await queue.jobs()
    assert seen.state == "running" and seen.progress == {"stage": "embed", "done": 2, "total": 5}
    assert not await queue.finish(job.id, "w2", "done", "", {})
    assert await queue.finish(job.id, "w1", "done", "indexed A", {"pages_total": 3, "documents": []})
    assert not await queue.finish(job.id, "w1", "failed", "twice", {"error": "BadInput"})  # ended already
    [ended] = await queue.jobs()
    assert (ended.state, ended.outcome) == ("done", "indexed A") and ended.finished >= ended.created
    assert ended.result == {"pages_total": 3, "documents": []}
    assert await queue.take("w1", 30) is None  # a done job is never taken again
    assert await queue.jobs(since=time.time() + 60) == []  # ended before then, not waiting: not listed


async def test_a_job_whose_lease_ran_out_is_taken_again_and_its_first_holder_lost_it(queue):
    _, jobs = new_jobs(["/a.pdf"], "shared")
    await queue.add(jobs)
    first = await queue.take("dead", 0.2)
    assert await queue.take("w2", 30) is None  # the lease holds
    await asyncio.sleep(0.3)
    again = await queue.take("w2", 30)
    assert (again.id, again.worker, again.attempts) == (first.id, "w2", 2)
    assert not await queue.renew(first.id, "dead", 30, {})  # the first holder finds it gone
    assert not await queue.finish(first.id, "dead", "done", "", {})
    assert await queue.finish(first.id, "w2", "done", "indexed", {})


async def test_takers_racing_never_get_the_same_job(settings, queue):
    _, jobs = new_jobs([f"/doc-{i}.pdf" for i in range(12)], "shared")
    await queue.add(jobs)
    others = [await job_queue(settings).open() for _ in range(3)]  # other processes' connections
    try:
        takers = [queue, *others]
        taken = await asyncio.gather(*(takers[i % 4].take(f"w{i}", 30) for i in range(16)))
    finally:
        for other in others:
            await other.close()
    ids = [job.id for job in taken if job is not None]
    assert len(ids) == 12 and len(set(ids)) == 12


async def test_workers_say_they_are_alive(queue):
    now = time.time()
    await queue.beat("w1", now - 600)
    await queue.beat("w2", now)
    await queue.beat("w1", now - 500)
    assert [w for w, _ in await queue.workers(now - 120)] == ["w2"]
    await queue.beat("w1", now)
    assert [w for w, _ in await queue.workers(now - 120)] == ["w1", "w2"]


async def test_a_failing_source_is_told_once_per_failure(queue):
    from core import watch_address

    source = await watch_address(queue, "https://vendor.example/x9.pdf", "slack:T1", notify="slack:T1:C9")
    now = time.time()
    assert not await queue.tell_once(source.id, now)  # not failing
    await queue.checked(source.id, {"failures": 2, "failing_since": now - 90000, "result": "HTTP 404."})
    assert await queue.tell_once(source.id, now)
    assert not await queue.tell_once(source.id, now + 1)  # told already
    [kept] = await queue.sources()
    assert (kept.notify, kept.told, kept.result) == ("slack:T1:C9", now, "HTTP 404.")


async def test_an_upload_is_kept_with_its_job_until_it_ends(queue):
    _, jobs = new_jobs(["manual.pdf"], "slack:T1:C1", kind="upload", notify="slack:T1:C1:1.2")
    await queue.add(jobs, {jobs[0].id: b"%PDF-1.7 \x00\xff"})
    job = await queue.take("w1", 30)
    assert (job.kind, job.source, job.notify) == ("upload", "manual.pdf", "slack:T1:C1:1.2")
    assert await queue.upload(job.id) == b"%PDF-1.7 \x00\xff"
    assert not await queue.finish(job.id, "w2", "done", "", {})
    assert await queue.upload(job.id) is not None  # not its holder: nothing let go of
    assert await queue.finish(job.id, "w1", "failed", "not a PDF", {"error": "BadInput"})
    assert await queue.upload(job.id) is None


async def test_a_request_is_told_once(queue):
    batch, jobs = new_jobs(["/a.pdf", "/b.pdf"], "shared", notify="discord:G1:C1:M1")
    await queue.add(jobs)
    assert await queue.claim_telling(batch, time.time())
    assert not await queue.claim_telling(batch, time.time())
    assert all(j.told > 0 for j in await queue.jobs(batch))


async def test_a_queue_file_from_before_results_gets_their_columns(tmp_path):
    import sqlite3

    path = tmp_path / "jobs.sqlite"
    with sqlite3.connect(path) as db:  # the table as the first release made it
        db.execute(
            "CREATE TABLE jobs (id TEXT PRIMARY KEY, source TEXT NOT NULL, scope TEXT NOT NULL, title TEXT,"
            " batch TEXT NOT NULL, state TEXT NOT NULL, worker TEXT NOT NULL DEFAULT '', lease_until REAL NOT NULL"
            " DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0, created REAL NOT NULL, finished REAL NOT NULL DEFAULT"
            " 0, progress TEXT NOT NULL DEFAULT '{}', outcome TEXT NOT NULL DEFAULT '', kind TEXT NOT NULL DEFAULT"
            " 'index')"
        )
        db.execute("INSERT INTO jobs (id, source, scope, batch, state, created) VALUES ('b-1', '/a.pdf', 'shared',"
                   " 'b', 'queued', 1)")  # fmt: skip
    queue = await EmbeddedJobs(path).open()
    try:
        job = await queue.take("w1", 30)
        assert (job.id, job.result, job.notify) == ("b-1", {}, "")
        assert await queue.finish(job.id, "w1", "done", "ok", {"pages_total": 1})
        assert (await queue.jobs())[0].result == {"pages_total": 1}
    finally:
        await queue.close()
