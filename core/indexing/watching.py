"""Watched sources: a folder (with or without its subfolders) or the address of a PDF, kept current in a
collection. Each check is a job (core/indexing/worker.py), queued when the source is due:

- a folder: PDFs whose size or modification time changed since the last check are indexed (a changed
  one re-indexed, only its changed pages embedded), PDFs gone from it leave the index, the others are not
  even read;
- an address: asked with If-None-Match / If-Modified-Since, so an unchanged one costs one 304 and nothing
  else; a new version is indexed in place of the old.

A failing check (the folder gone, 404, a timeout, an HTML page where the PDF was) keeps the documents of
the last good one, says why in `sources list`, and is tried again sooner, waiting twice as long each time
up to the source's own schedule.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import BadInput, PixelragError
from ..ports import JobQueue
from ..records import IndexReport, Progress, WatchedSource
from .sources import download_if_changed, hide_credentials, is_url

if TYPE_CHECKING:
    from ..service import Service

MIN_EVERY_S = 60.0
FIRST_RETRY_S = 60.0  # after a failed check; doubled after each further one, up to the source's schedule
UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def schedule_seconds(text: str) -> float:
    """ "30m", "1h", "2d" or seconds -> seconds; BadInput for anything else or under a minute."""
    text = text.strip().lower()
    try:
        seconds = float(text[:-1]) * UNITS[text[-1]] if text and text[-1] in UNITS else float(text)
    except ValueError:
        raise BadInput(f"{text!r} is not a schedule: say 30m, 1h, 1d or a number of seconds.") from None
    if seconds < MIN_EVERY_S:
        raise BadInput("A source is checked at most once a minute: give --every 1m or more.")
    return seconds


def new_source(location: str, scope: str, every_s: float, recursive: bool = False) -> WatchedSource:
    """A source to add, checked at once; a folder is named by its absolute path."""
    if is_url(location):
        if recursive:
            raise BadInput("--recursive is for folders; an address names one PDF.")
    elif "://" in location:
        raise BadInput(f"{hide_credentials(location)}: only http and https addresses can be watched.")
    else:
        folder = Path(location).expanduser().resolve()
        if not folder.is_dir():
            raise BadInput(f"{location}: not a folder. Watch a folder of PDFs, or the http(s) address of a PDF.")
        location = str(folder)
    now = time.time()
    source_id = hashlib.sha256(f"{scope}\n{location}".encode()).hexdigest()[:10]
    return WatchedSource(source_id, location, scope, every_s, recursive, created=now, next_check=now)


WATCH_EVERY_S = 24 * 3600.0  # an address a chat watches is asked once a day: a new revision is not urgent


TELL_AFTER_S = 24 * 3600.0  # a source failing this long is told to the channel that added it, once


async def watch_address(queue: JobQueue, url: str, scope: str, notify: str = "") -> WatchedSource:
    """A chat's `watch <url>`: the address kept current in `scope`, checked daily by the workers; `notify`
    names the channel to tell if it keeps failing."""
    if not url.startswith(("http://", "https://")):
        raise BadInput(f"{hide_credentials(url)} is not the http(s) address of a PDF.")
    source = replace(new_source(url, scope, WATCH_EVERY_S), notify=notify)
    if not await queue.add_source(source):
        raise BadInput(f"{hide_credentials(url)} is watched here already.")
    return source


async def unwatch(queue: JobQueue, own: list[str], name: str) -> WatchedSource:
    """A chat's `unwatch <url or id>`, among the sources of the collections it may change (`own`); its
    documents stay (removing one is `remove`'s)."""
    source = watched_named([s for s in await queue.sources() if s.scope in own], name)
    await queue.remove_source(source.id)
    return source


async def failing_to_tell(queue: JobQueue, platform: str, now: float | None = None) -> list[WatchedSource]:
    """The sources added from `platform`'s channels that have failed for a day and whose channel has not
    been told of this failure: each marked told (once, whichever process gets there first)."""
    now = time.time() if now is None else now
    out = []
    for source in await queue.sources():
        failing_long = source.failures and source.failing_since <= now - TELL_AFTER_S
        if source.notify.startswith(f"{platform}:") and failing_long and await queue.tell_once(source.id, now):
            out.append(source)
    return out


def watched_named(sources: list[WatchedSource], name: str) -> WatchedSource:
    """The source `name` names: its id, or its location as added."""
    found = [s for s in sources if name in (s.id, s.location) or hide_credentials(s.location) == name]
    if not found:
        raise BadInput(f"No watched source is {name!r}: `pixelrag sources list` shows their ids.")
    if len(found) > 1:
        raise BadInput(f"{name!r} is watched in {len(found)} collections; name one by its id.")
    return found[0]


async def check(
    service: Service, queue: JobQueue, source_id: str, heard: Callable[[Progress], None] | None = None
) -> str:
    """Check the source now and record what was found; the result line. A failure is recorded (with
    its retry) and raised, so that the job says it failed and why."""
    source = next((s for s in await queue.sources() if s.id == source_id), None)
    if source is None:
        return "the source was removed before its check"
    started = time.time()
    try:
        if is_url(source.location):
            result, seen = await _check_address(service, source, heard)
        else:
            result, seen = await _check_folder(service, source, heard)
    except PixelragError as exc:
        failures = source.failures + 1
        retry = min(source.every_s, FIRST_RETRY_S * 2 ** (failures - 1))
        await queue.checked(
            source.id,
            {
                "checked": time.time(),
                "result": str(exc),
                "failures": failures,
                "failing_since": source.failing_since or started,
                "next_check": time.time() + retry,
            },
        )
        raise
    await queue.checked(
        source.id,
        {
            "checked": time.time(),
            "result": result,
            "failures": 0,
            "failing_since": 0.0,
            "next_check": started + source.every_s,
            "seen": seen,
        },
    )
    return result


async def _check_folder(service: Service, source: WatchedSource, heard) -> tuple[str, dict]:
    folder = Path(source.location)
    if not folder.is_dir():
        raise BadInput(f"{folder}: the folder is gone or cannot be read; its documents are kept until it is back.")
    found = sorted(
        p for p in (folder.rglob("*") if source.recursive else folder.iterdir()) if p.suffix.lower() == ".pdf"
    )
    now_seen = {}
    for pdf in found:
        try:
            stat = pdf.stat()
        except OSError:  # gone between the listing and now: the next check sees it gone
            continue
        if pdf.is_file():
            now_seen[str(pdf.resolve())] = [stat.st_size, stat.st_mtime_ns]
    changed = [path for path, mark in now_seen.items() if source.seen.get(path) != mark]
    gone = [path for path in source.seen if path not in now_seen]
    report, refused = None, ""
    if changed:
        try:
            report = await service.index(changed, scope=source.scope, progress=heard, operator=True)
        except BadInput as exc:  # every changed PDF refused (damaged, encrypted): retried once it changes
            refused = f"skipped {exc}"
    removed = 0
    if gone:
        documents = await service.documents(source.scope)
        for document in documents:
            if document.scope == source.scope and document.source in gone:
                await service.remove(source.scope, document.doc_id)
                removed += 1
    parts = [f"{len(now_seen)} PDFs"]
    if report is not None:
        parts.append(_built(report))
    if refused:
        parts.append(refused)
    parts.append(f"{removed} removed" if gone else "none removed")
    return "; ".join(parts), now_seen


async def _check_address(service: Service, source: WatchedSource, heard) -> tuple[str, dict]:
    fetched, validators = await download_if_changed(source.location, service.settings, source.seen)
    if fetched is None:
        return "unchanged (304 Not Modified)", source.seen
    report = await service.index_fetched(fetched, source.scope, progress=heard)
    return _built(report), validators


def _built(report: IndexReport) -> str:
    parts = []
    if report.documents:
        parts.append(
            "indexed "
            + ", ".join(f"{d.title} ({d.page_count} pages)" for d in report.documents)
            + f": {report.pages_embedded} pages embedded, {report.pages_reused} reused"
        )
    if report.unchanged:
        parts.append(f"{len(report.unchanged)} unchanged")
    parts += [f"skipped {message}" for message in report.skipped]
    return "; ".join(parts) or "nothing new"
