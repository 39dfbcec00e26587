"""The Slack adapter's settings: read once from the SLACK_* environment variables, checked, typed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from core import Settings, flag, number

DEFAULT_API_URL = "https://slack.com/api/"


@dataclass(frozen=True)
class SlackSettings:
    bot_token: str = ""
    app_token: str = ""  # Socket Mode only
    signing_secret: str = ""  # the Events API over HTTP only
    api_url: str = DEFAULT_API_URL
    command: str = "/pixelrag"
    index_users: frozenset[str] = frozenset()
    index_anyone: bool = False
    progress_interval_s: float = 2.0  # Slack rate-limits chat.update to about one per second
    streaming: bool = True  # answers streamed (chat.startStream); off: posted when done
    stream_interval_s: float = 0.6  # between appends to a stream: chat.appendStream is Tier 4 (100+ a minute)
    threads_db: Path = Path("index/slack-threads.sqlite")

    @classmethod
    def parse(cls, settings: Settings) -> SlackSettings:
        """BadInput, with the variable named, for a value that cannot be used."""
        extra = settings.extra
        return cls(
            bot_token=extra.get("SLACK_BOT_TOKEN", "").strip(),
            app_token=extra.get("SLACK_APP_TOKEN", "").strip(),
            signing_secret=extra.get("SLACK_SIGNING_SECRET", "").strip(),
            api_url=(extra.get("SLACK_API_URL") or DEFAULT_API_URL).rstrip("/") + "/",
            command=extra.get("SLACK_COMMAND") or "/pixelrag",
            index_users=frozenset(u.strip() for u in extra.get("SLACK_INDEX_USERS", "").split(",") if u.strip()),
            index_anyone=flag(extra, "SLACK_INDEX_ANYONE"),
            progress_interval_s=number(extra, "SLACK_PROGRESS_INTERVAL", 2.0, 0.01, 60, float),
            streaming=flag(extra, "SLACK_STREAMING", True),
            stream_interval_s=number(extra, "SLACK_STREAM_INTERVAL", 0.6, 0.0, 10, float),
            threads_db=Path(extra.get("SLACK_THREADS_DB") or settings.index_dir / "slack-threads.sqlite"),
        )
