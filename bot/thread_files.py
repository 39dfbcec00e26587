"""Where each bot keeps its SQLite thread memory when no database is configured (the feedback export
and `pixelrag migrate` read them all)."""

from __future__ import annotations

from pathlib import Path

from core import Settings


def sqlite_thread_files(settings: Settings) -> list[Path]:
    """The Slack and Discord bots' and the web chat's thread-memory files that exist."""
    from .discord.settings import threads_db
    from .slack.settings import SlackSettings

    files = (SlackSettings.parse(settings).threads_db, threads_db(settings), web_threads_file(settings))
    return [f for f in files if f.is_file()]


def web_threads_file(settings: Settings) -> Path:
    """`pixelrag web`'s thread memory, which keeps the HTTP API's keys too."""
    return settings.index_dir / "web-threads.sqlite"
