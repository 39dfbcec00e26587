"""Where each bot keeps its SQLite thread memory when no database is configured (the feedback export
and `pixelrag migrate` read them all)."""

from __future__ import annotations

from pathlib import Path

from core import Settings


def sqlite_thread_files(settings: Settings) -> list[Path]:
    """The Slack and Discord bots' thread-memory files that exist."""
    from .discord.settings import threads_db
    from .slack.settings import SlackSettings

    return [f for f in (SlackSettings.parse(settings).threads_db, threads_db(settings)) if f.is_file()]
