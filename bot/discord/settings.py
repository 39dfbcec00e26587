"""The Discord adapter's settings: the DISCORD_* variables read once from `Settings.extra`, checked
and typed, so that a mistyped id stops the bot at startup with a message naming the variable."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from core import BadInput, Settings, flag, number


@dataclass(frozen=True)
class DiscordSettings:
    token: str = field(default="", repr=False)  # DISCORD_TOKEN; serve() refuses to start without it
    guild_id: int | None = None  # DISCORD_GUILD_ID: sync commands to this server only (development)
    message_content: bool = True  # DISCORD_MESSAGE_CONTENT: the privileged intent, on unless turned off
    index_role: str = ""  # DISCORD_INDEX_ROLE: role id or name that may also manage documents
    index_users: frozenset[int] = frozenset()  # DISCORD_INDEX_USERS: user ids that may also manage them
    layout_v2: bool = True  # DISCORD_LAYOUT: "v2" (Components V2, the default) or "embeds"
    edit_interval: float = 1.0  # DISCORD_EDIT_INTERVAL: seconds between edits of a streamed answer

    @classmethod
    def parse(cls, extra: Mapping[str, str]) -> DiscordSettings:
        """BadInput, with the variable named, for a value that cannot be used."""
        guild_id = extra.get("DISCORD_GUILD_ID", "").strip()
        if guild_id and not guild_id.isdigit():
            raise BadInput(f"DISCORD_GUILD_ID={guild_id!r} is not a server id (Developer Mode → Copy Server ID).")
        raw_users = [u for u in re.split(r"[\s,]+", extra.get("DISCORD_INDEX_USERS", "")) if u]
        if bad := [u for u in raw_users if not u.isdigit()]:
            raise BadInput(
                f"DISCORD_INDEX_USERS must list numeric user ids (Developer Mode → Copy User ID); "
                f"not ids: {', '.join(bad)}."
            )
        layout = extra.get("DISCORD_LAYOUT", "").strip().lower() or "v2"
        if layout not in ("v2", "embeds"):
            raise BadInput(f"DISCORD_LAYOUT={layout!r}: use v2 (Components V2, the default) or embeds.")
        return cls(
            layout_v2=layout == "v2",
            edit_interval=number(extra, "DISCORD_EDIT_INTERVAL", 1.0, 0.5, 10.0, float),
            token=extra.get("DISCORD_TOKEN", "").strip(),
            guild_id=int(guild_id) if guild_id else None,
            message_content=flag(extra, "DISCORD_MESSAGE_CONTENT", default=True),
            index_role=extra.get("DISCORD_INDEX_ROLE", "").strip(),
            index_users=frozenset(int(u) for u in raw_users),
        )


def threads_db(settings: Settings) -> Path:
    """The Discord bot's thread memory when no database is configured."""
    return settings.index_dir / "discord-threads.sqlite"
