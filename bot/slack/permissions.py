"""Who may add and remove a workspace's documents: admins and owners, plus SLACK_INDEX_USERS."""

from __future__ import annotations

import logging

from slack_sdk.web.async_client import AsyncWebClient

from .settings import SlackSettings

log = logging.getLogger("pixelrag.slack")

REFUSAL = (
    ":no_entry: Only workspace admins and the users listed in SLACK_INDEX_USERS can add or remove "
    "documents. Ask an admin to do it for you."
)


async def may_index(client: AsyncWebClient, settings: SlackSettings, user: str) -> bool:
    if settings.index_anyone or user in settings.index_users:
        return True
    try:
        info = (await client.users_info(user=user)).get("user") or {}
    except Exception:
        log.exception("users.info for %s failed", user)
        return False  # unknown is refused: indexing is the privileged action
    return bool(info.get("is_admin") or info.get("is_owner") or info.get("is_primary_owner"))
