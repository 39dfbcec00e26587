"""What `status` says of the indexing queue: jobs waiting and under way (with their progress), those that
failed lately, the workers alive, and each watched source's last check."""

from __future__ import annotations

import time
from pathlib import PurePath

from ..ports import JobQueue
from ..scopes import visible_scopes
from .sources import hide_credentials, is_url
from .worker import shown_source

ALIVE_S = 120.0  # a worker beats at least every quarter lease and every poll; two minutes of silence: gone
FAILED_S = 24 * 3600.0


async def queue_status(queue: JobQueue, scope: str | None = None) -> dict:
    """The queue as `scope` may see it (its collections' jobs and sources), or all of it (None)."""
    now = time.time()
    seen = visible_scopes(scope) if scope is not None else None
    jobs = [j for j in await queue.jobs(since=now - FAILED_S) if seen is None or j.scope in seen]
    sources = [s for s in await queue.sources() if seen is None or s.scope in seen]

    def running(job) -> str:
        doing = progress_said(job.progress, now)
        if scope is None:
            return f"{job.kind} {shown_source(job)} ({job.scope}{doing}) by {job.worker}"
        # A chat is shown what is being indexed, not the machines doing it nor the operator's paths.
        what = shown_source(job)
        if job.kind == "index" and not is_url(job.source):
            what = PurePath(what).name
        elif job.kind == "reindex":
            what = f"re-indexing {job.source or 'every document'}"
        elif job.kind == "check":
            what = "checking a watched source"
        return what + (f" ({doing.removeprefix(', ')})" if doing else "")

    def source_line(s) -> str:
        last = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.checked)) if s.checked else "not yet checked"
        failing = (
            f"FAILING since {time.strftime('%Y-%m-%d %H:%M', time.localtime(s.failing_since))}: " if s.failures else ""
        )
        return f"{hide_credentials(s.location)} ({s.scope}): {last}: {failing}{s.result or '-'}"

    return {
        "jobs_queued": sum(j.state == "queued" for j in jobs),
        "jobs_running": [running(j) for j in jobs if j.state == "running"],
        "jobs_failed_lately": [f"{j.kind} {shown_source(j)}: {j.outcome}" for j in jobs if j.state == "failed"],
        "workers": [name for name, _ in await queue.workers(now - ALIVE_S)],
        "sources": [source_line(s) for s in sources],
    }


def progress_said(step: dict, now: float) -> str:
    """ ", embed 12/40 pages, 3.1 pages/s, about 9 s left" from a job's recorded progress (its stage's
    rate counted from the stage's start), or "" before it has any."""
    total, done = step.get("total") or 0, step.get("done") or 0
    if not total:
        return ""
    said = f", {step.get('stage')} {done}/{total}"
    elapsed = now - (step.get("since") or now)
    if done and elapsed > 0 and done < total:
        rate = done / elapsed
        said += f", {rate:.1f}/s, about {_duration((total - done) / rate)} left"
    return said


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"
