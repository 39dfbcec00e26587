"""API keys for the HTTP API (bot/web/api.py): made here, shown once, kept only as their sha256. A key
belongs to one collection and sees exactly what a chat in that collection sees."""

from __future__ import annotations

import hashlib
import re
import secrets
import time

from .errors import BadInput
from .ports import ThreadMemory

PREFIX = "prk_"
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


async def add_key(threads: ThreadMemory, name: str, scope: str) -> str:
    """A new key for `scope`, named `name` (unique); the key itself, which nothing keeps."""
    if not NAME.fullmatch(name):
        raise BadInput(f"{name!r} is not a key name: use up to 64 letters, digits, dots, dashes or underscores.")
    key = PREFIX + secrets.token_urlsafe(32)
    if not await threads.add_key(name, scope, digest(key), time.time()):
        raise BadInput(f"A key named {name!r} exists (or was revoked); choose another name.")
    return key


async def revoke_key(threads: ThreadMemory, name: str) -> None:
    """The key named `name` no longer opens anything; BadInput when there is no such active key."""
    if not await threads.revoke_key(name, time.time()):
        raise BadInput(f"No active API key is named {name!r} (pixelrag keys list shows them).")


async def key_scope(threads: ThreadMemory, authorization: str | None) -> tuple[str, str] | None:
    """(name, scope) of the key an `Authorization: Bearer …` header carries, or None (none, unknown or
    revoked)."""
    scheme, _, key = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not key.strip().startswith(PREFIX):
        return None
    return await threads.key(digest(key.strip()))
