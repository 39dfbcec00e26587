"""Who may add and remove a workspace's documents: admins and owners, plus SLACK_INDEX_USERS."""

from __future__ import annotations

import logging

from slack_sdk.web.async_client import AsyncWebClient

from core import RemoteError, failure_reason

from .settings import SlackSettings
from .stream import error_code

log = logging.getLogger("pixelrag.slack")

REFUSAL = (
    ":no_entry: Only workspace admins and the users listed in SLACK_INDEX_USERS can add or remove "
    "documents. Ask an admin to do it for you."
)


async def may_index(client: AsyncWebClient, settings: SlackSettings, user: str) -> bool:
    """Whether `user` may index; RemoteError when Slack cannot say (nothing is indexed: it is the
    privileged action, but an admin is not told that only admins may)."""
    if settings.index_anyone or user in settings.index_users:
        return True
    try:
        info = (await client.users_info(user=user)).get("user") or {}
    except Exception as exc:
        log.warning("users.info for %s failed: %s", user, error_code(exc) or exc)
        raise RemoteError(
            f"Whether you may add or remove documents could not be checked: Slack did not answer "
            f"(users.info: {error_code(exc) or failure_reason(exc)}). Nothing was changed; try again in a minute."
        ) from None
    return bool(info.get("is_admin") or info.get("is_owner") or info.get("is_primary_owner"))
