"""What `status` says of the indexing queue: jobs waiting and under way (with their progress), those that
failed lately, the workers alive, and each watched source's last check."""

from __future__ import annotations

import time

from ..ports import JobQueue
from ..scopes import visible_scopes
from .sources import hide_credentials

ALIVE_S = 120.0  # a worker beats at least every quarter lease and every poll; two minutes of silence: gone
FAILED_S = 24 * 3600.0


async def queue_status(queue: JobQueue, scope: str | None = None) -> dict:
    """The queue as `scope` may see it (its collections' jobs and sources), or all of it (None)."""
    now = time.time()
    seen = visible_scopes(scope) if scope is not None else None
    jobs = [j for j in await queue.jobs(since=now - FAILED_S) if seen is None or j.scope in seen]
    sources = [s for s in await queue.sources() if seen is None or s.scope in seen]

    def running(job) -> str:
        step = job.progress
        doing = f", {step.get('stage')} {step.get('done')}/{step.get('total')}" if step.get("total") else ""
        return f"{job.kind} {hide_credentials(job.source)} ({job.scope}{doing}) by {job.worker}"

    def source_line(s) -> str:
        last = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.checked)) if s.checked else "not yet checked"
        failing = (
            f"FAILING since {time.strftime('%Y-%m-%d %H:%M', time.localtime(s.failing_since))}: " if s.failures else ""
        )
        return f"{hide_credentials(s.location)} ({s.scope}): {last}: {failing}{s.result or '-'}"

    return {
        "jobs_queued": sum(j.state == "queued" for j in jobs),
        "jobs_running": [running(j) for j in jobs if j.state == "running"],
        "jobs_failed_lately": [
            f"{j.kind} {hide_credentials(j.source)}: {j.outcome}" for j in jobs if j.state == "failed"
        ],
        "workers": [name for name, _ in await queue.workers(now - ALIVE_S)] if scope is None else [],
        "sources": [source_line(s) for s in sources],
    }
