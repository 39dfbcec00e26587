"""The commands of indexing as jobs: `index --detach`, `worker`, `sources` (watched folders and
addresses) and `jobs` (bot/cli.py dispatches to them)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from core import SHARED_SCOPE, BadInput, Service, Settings, hide_credentials, is_url, shown_source

from .cli_settings import settings_of as _settings
from .terminal import printable


def located(sources: list[str]) -> list[str]:
    """Paths made absolute, as a job may be done by a worker elsewhere; one that is not there stays as
    given, so that its message names it as it was typed."""
    return [str(Path(s).resolve()) if not is_url(s) and _exists(s) else s for s in sources]


def _exists(path: str) -> bool:
    try:
        return Path(path).exists()
    except OSError:  # a name too long for the file system
        return False


async def queue_index(settings, sources: list[str], titles, as_json: bool) -> int:
    """`index --detach`: a job per PDF for the workers; paths made absolute, as a worker may run elsewhere."""
    from core import job_queue, new_jobs

    batch, jobs = new_jobs(located(sources), SHARED_SCOPE, titles)
    queue = await job_queue(settings).open()
    try:
        await queue.add(jobs)
    finally:
        await queue.close()
    if as_json:
        print(json.dumps({"batch": batch, "jobs": [{"id": j.id, "source": shown_source(j)} for j in jobs]}, indent=2))
    else:
        print("\n".join(f"queued: {j.id} {printable(shown_source(j))}" for j in jobs))
        print(f"{len(jobs)} job(s) queued; `pixelrag worker` does them, `pixelrag jobs` shows them.")
    return 0


async def cmd_worker(args) -> int:
    """Jobs until SIGTERM or Ctrl-C, which let the current job finish first."""
    import signal

    from core import Worker, job_queue, job_runner

    settings = _settings(args, existing=False)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    queue = await job_queue(settings).open()
    try:
        async with Service(settings) as service:
            await service.warm_up_indexing()  # alive only once ready: its first job costs what the others do
            worker = Worker(queue, job_runner(service, queue), name=args.name, lease_s=settings.job_lease_s)
            print(f"pixelrag worker {worker.name}: taking jobs (Ctrl-C stops after the current one)", file=sys.stderr)
            done = await worker.work(stop)
    finally:
        await queue.close()
    print(f"pixelrag worker {worker.name}: stopped after {done} job(s)", file=sys.stderr)
    return 0


async def cmd_sources(args) -> int:
    """Watched folders and addresses: add, list, check now, remove."""
    from core import Worker, job_queue, job_runner, new_jobs, new_source, schedule_seconds, watched_named

    settings = _settings(args, existing=False)
    queue = await job_queue(settings).open()
    try:
        watched = await queue.sources()
        if args.action == "add":
            if not args.location:
                raise BadInput("pixelrag sources add PATH_OR_URL: give a folder or the address of a PDF.")
            source = new_source(args.location, args.scope, schedule_seconds(args.every), args.recursive)
            if not await queue.add_source(source):
                raise BadInput(f"{hide_credentials(source.location)} is watched in {source.scope} already.")
            print(printable(f"watching {hide_credentials(source.location)} in {source.scope} (id {source.id})"))
            print("`pixelrag sources check` checks it now; a worker checks it on its schedule.")
        elif args.action == "list":
            _print_sources(watched, args.json)
        elif args.action == "check":
            chosen = [watched_named(watched, args.location)] if args.location else watched
            if not chosen:
                raise BadInput("No sources are watched yet: pixelrag sources add PATH_OR_URL.")
            batch, jobs = new_jobs([s.id for s in chosen], SHARED_SCOPE, kind="check")
            await queue.add(jobs)
            async with Service(settings) as service:
                await Worker(queue, job_runner(service, queue), lease_s=settings.job_lease_s).work(batch=batch)
            ended = await queue.jobs(batch=batch)
            for job, source in zip(ended, chosen):
                print(printable(f"{hide_credentials(source.location)} ({source.scope}): {job.state}: {job.outcome}"))
            return 1 if any(j.state != "done" for j in ended) else 0
        else:
            return await _remove_source(settings, queue, watched_named(watched, args.location or ""), args.yes)
    finally:
        await queue.close()
    return 0


async def _remove_source(settings: Settings, queue, source, confirmed: bool) -> int:
    """The source, and the documents it brought, after a confirmation."""
    async with Service(settings) as service:
        inside = [
            d
            for d in await service.documents(source.scope)
            if d.scope == source.scope
            and (d.source == source.location or d.source.startswith(source.location.rstrip("/") + "/"))
        ]
        shown = hide_credentials(source.location)
        if not confirmed:
            if not sys.stdin.isatty():
                raise BadInput(f"Removing {shown} removes its {len(inside)} document(s): add --yes to confirm.")
            answer = input(f"Stop watching {shown} and remove its {len(inside)} document(s)? [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                print("Nothing was removed.")
                return 1
        await queue.remove_source(source.id)
        for document in inside:
            await service.remove(source.scope, document.doc_id)
    print(printable(f"no longer watching {shown}; {len(inside)} document(s) removed"))
    return 0


def _print_sources(watched, as_json: bool) -> None:
    if as_json:
        print(json.dumps([asdict(s) | {"location": hide_credentials(s.location)} for s in watched], indent=2))
        return
    for s in watched:
        last = time.strftime("%Y-%m-%d %H:%M", time.localtime(s.checked)) if s.checked else "never"
        state = (
            f"FAILING since {time.strftime('%Y-%m-%d %H:%M', time.localtime(s.failing_since))}" if s.failures else "ok"
        )
        print(printable(f"{s.id}  {hide_credentials(s.location)}  ({s.scope}, every {s.every_s / 60:g} min)"))
        print(printable(f"    last check {last}: {state}: {s.result or '-'}"))
    if not watched:
        print("No sources are watched: pixelrag sources add PATH_OR_URL [--every 1h].")


async def cmd_jobs(args) -> int:
    import time

    from core import job_queue

    queue = await job_queue(_settings(args, existing=False)).open()
    try:
        now = time.time()
        jobs = await queue.jobs(since=now - args.hours * 3600)
        workers = await queue.workers(now - 120)
    finally:
        await queue.close()
    if args.json:
        print(json.dumps({"jobs": [asdict(j) for j in jobs], "workers": [w for w, _ in workers]}, indent=2))
        return 0
    for j in jobs:
        step = j.progress
        doing = (
            f" — {step.get('stage')} {step.get('done')}/{step.get('total')}" if j.state == "running" and step else ""
        )
        held = f" by {j.worker}" if j.state == "running" else ""
        ended = f": {j.outcome}" if j.outcome else ""
        print(printable(f"{j.id}\t{j.state}{held}{doing}\t{shown_source(j)}{ended}"))
    print(f"{len(jobs)} job(s); workers alive: {', '.join(w for w, _ in workers) or 'none'}")
    return 0
