"""Where state lives, chosen by the settings: embedded files by default, PostgreSQL when
PIXELRAG_DATABASE_URL is set (core/postgres/)."""

from __future__ import annotations

from pathlib import Path

from .config import Settings
from .embedded.index_folder import IndexFolder
from .embedded.jobs import EmbeddedJobs
from .embedded.pages import EmbeddedPages
from .embedded.threads import EmbeddedThreads
from .ports import JobQueue, PageStore, ThreadMemory


def thread_memory(settings: Settings, sqlite_path: Path) -> ThreadMemory:
    """Not yet opened: `await thread_memory(...).open()`."""
    if settings.database_url:
        from .postgres.threads import PostgresThreads

        # The lease outlasts the longest an answer may take, so a live replica's work is never redone.
        return PostgresThreads(settings.database_url, lease_s=settings.answer_timeout_s + 60)
    return EmbeddedThreads(sqlite_path)


def page_store(settings: Settings) -> PageStore:
    """The page index: snapshots under index_dir, or tables in the shared database."""
    if settings.database_url:
        from .postgres.pages import PostgresPages

        return PostgresPages(settings.database_url)
    return EmbeddedPages(IndexFolder(settings.index_dir))


JOBS_FILE = "jobs.sqlite"


def job_queue(settings: Settings) -> JobQueue:
    """The indexing jobs, where the index is: a SQLite file beside the folder, or the database."""
    if settings.database_url:
        from .postgres.jobs import PostgresJobs

        return PostgresJobs(settings.database_url)
    return EmbeddedJobs(settings.index_dir / JOBS_FILE)


def existing_job_queue(settings: Settings) -> JobQueue | None:
    """The job queue, or None where no job was ever queued: reading status creates no file."""
    if not settings.database_url and not (settings.index_dir / JOBS_FILE).exists():
        return None
    return job_queue(settings)
