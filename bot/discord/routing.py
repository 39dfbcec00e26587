"""Which messages are for the bot, and where their answers, memory and documents belong: the
collection a server or DM searches, the thread key its memory is kept under, the place a reply goes."""

from __future__ import annotations

import logging
import re
from collections.abc import Iterable

import discord

from core import SHARED_SCOPE, ThreadKey, channel_scope

log = logging.getLogger("pixelrag.discord")


AUTOINDEX = "autoindex"  # a channel's choice (ThreadMemory.choice): index every PDF shared there


def scope_for(guild_id: int | None, channel: object = None) -> str:
    """A server channel sees its own documents, the server's and the shared ones (a thread its parent
    channel's); DMs see only the operator's shared collection."""
    if not guild_id:
        return SHARED_SCOPE
    return channel_scope(f"discord:{guild_id}", home_channel(channel) or None)


def thread_key(channel: object, guild_id: int | None) -> ThreadKey:
    workspace = str(guild_id) if guild_id else "dm"
    return ("discord", workspace, home_channel(channel), str(getattr(channel, "id", "")))


def home_channel(channel: object) -> str:
    """The channel a message's place belongs to: a thread's parent, else the channel itself ("" for none)."""
    if isinstance(channel, discord.Thread) and channel.parent_id:
        return str(channel.parent_id)
    return str(getattr(channel, "id", ""))


def strip_mentions(text: str, me: discord.abc.User, role_ids: Iterable[int] = frozenset()) -> str:
    text = re.sub(rf"<@!?{me.id}>", " ", text or "")
    for rid in role_ids:
        text = text.replace(f"<@&{rid}>", " ")
    return re.sub(r"[ \t]+", " ", text).strip()


def bot_role_ids(message: discord.Message, me: discord.abc.User) -> set[int]:
    # "@pixelrag" sometimes resolves to the bot's managed role instead of the bot user
    found = set()
    for role in message.role_mentions or ():
        tags = role.tags
        if tags is not None and tags.bot_id == me.id:
            found.add(role.id)
    return found


def is_addressed(message: discord.Message, me: discord.abc.User) -> bool:
    """DMs, mentions (user or the bot's role), threads the bot owns, and replies to the bot."""
    channel = message.channel
    if isinstance(channel, discord.DMChannel):
        return True
    if any(u.id == me.id for u in message.mentions):
        return True
    if bot_role_ids(message, me):
        return True
    if isinstance(channel, discord.Thread) and channel.owner_id == me.id:
        return True
    ref = message.reference
    resolved = ref.resolved if ref is not None else None
    return isinstance(resolved, discord.Message) and resolved.author.id == me.id


async def reply_place(message: discord.Message, question: str) -> discord.abc.Messageable:
    """A thread started from the message in text channels; in place in threads and DMs."""
    channel = message.channel
    if not isinstance(channel, discord.TextChannel):
        return channel
    name = (question.splitlines()[0] if question else "") or "Question about the documents"
    try:
        return await message.create_thread(name=name[:100], auto_archive_duration=1440)
    except discord.HTTPException:
        log.warning("could not create a thread in channel %s; replying in place", channel.id, exc_info=True)
        return channel


def upload_limit(guild: discord.Guild | None) -> int:
    """The largest file a message may carry there: the server's boost level decides."""
    return guild.filesize_limit if guild is not None else discord.utils.DEFAULT_FILE_SIZE_LIMIT_BYTES
