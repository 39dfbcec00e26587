"""/pixelrag: list, status and help answered at once; index, reindex, remove, scope, indexing, watch and
unwatch acknowledged at once and run in the background, with their replies sent privately through the
command's response_url. A command works in its channel's collections (core/scopes.py)."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from slack_sdk.web.async_client import AsyncWebClient

from core import (
    BadInput,
    PixelragError,
    Service,
    Settings,
    channel_of,
    channel_scope,
    choose_indexing_place,
    collection,
    hide_credentials,
    indexing_place,
    indexing_scope,
    job_queue,
    own_scopes,
    tenant,
    unwatch,
    usage_summary,
    watch_address,
)

from ..background import BackgroundTasks
from ..job_worker import queue_summary
from . import render
from .indexing import SlackIndexing, notify_of
from .middleware import AUTOINDEX
from .permissions import REFUSAL, may_index
from .replies import Thread
from .settings import SlackSettings
from .stream import error_code

log = logging.getLogger("pixelrag.slack")

JOBS = ("index", "reindex", "remove", "scope", "indexing", "watch", "unwatch", "autoindex")


class SlackCommands:
    def __init__(
        self, settings: SlackSettings, service: Service, indexing: SlackIndexing, tasks: BackgroundTasks, threads
    ):
        self.settings = settings
        self.service = service
        self.threads = threads  # each workspace's usage, for status
        self.indexing = indexing
        self.tasks = tasks

    async def __call__(self, ack, command: dict, client: AsyncWebClient, respond, context) -> None:
        text = (command.get("text") or "").strip()
        sub, _, arg = text.partition(" ")
        sub, arg = sub.lower(), arg.strip()
        workspace = f"slack:{command.get('team_id') or context.team_id or ''}"
        scope = channel_scope(workspace, command.get("channel_id"))
        if sub == "list":
            await ack(text=render.documents_text(await self.service.documents(scope), scope))
        elif sub == "status":
            status = await self.service.status(scope)
            status["chat indexing goes to"] = f"the {await indexing_place(self.threads, scope)}"
            status.update(await usage_summary([self.threads], *tenant(scope)))
            status.update(await watched_status(self.service.settings, scope))
            await ack(text=render.status_text(status))
        elif sub in JOBS and (arg or sub == "reindex"):
            await ack(text=f"Working on `{render.escape(hide_credentials(text))}`…")
            self.tasks.spawn(
                self.job(client, private_reply(respond, client, command), command, sub, arg, scope),
                f"{self.settings.command} {sub}",
            )
        else:
            # Unknown subcommands, `help` and missing arguments all get the help text.
            await ack(text=render.HELP)

    async def job(self, client: AsyncWebClient, respond, command: dict, sub: str, arg: str, scope: str) -> None:
        channel = Thread(client, command.get("channel_id", ""), None)
        try:
            if not await may_index(client, self.settings, command.get("user_id", "")):
                await respond(REFUSAL)
            elif sub == "remove":
                removed = await self.service.remove(scope, arg)
                await respond(f":wastebasket: Removed {render.escape(removed.title)}.")
                await self.indexing.changed(client, scope)
            elif sub == "indexing":
                await choose_indexing_place(self.threads, scope, arg.lower())
                await respond(render.indexing_place_text(arg.lower()))
            elif sub == "scope":
                document, _, place = arg.rpartition(" ")
                if not document.strip():
                    raise BadInput(
                        f"Name a document and where it goes: `{self.settings.command} scope <document> "
                        "channel` or `… workspace`."
                    )
                to = collection(scope, place.lower())
                report = await self.service.move(scope, document, to)
                await respond(render.moved_text(report, place.lower()))
                await self.indexing.changed(client, scope)
            elif sub == "autoindex":
                if arg.lower() not in ("on", "off"):
                    raise BadInput(f"Say `{self.settings.command} autoindex on` or `… off`.")
                _, team = tenant(scope)
                await self.threads.choose("slack", team, f"{AUTOINDEX}:{command.get('channel_id')}", arg.lower())
                await respond(render.autoindex_text(arg.lower() == "on", self.settings.command))
            elif sub in ("watch", "unwatch"):
                await respond(
                    await watch(
                        self.service.settings,
                        self.threads,
                        sub,
                        arg,
                        scope,
                        self.settings.command,
                        command.get("channel_id", ""),
                    )
                )
            elif sub == "index":
                target, _, place = arg.partition(" ")
                url = target.strip("<>").split("|")[0]
                if not url.startswith(("http://", "https://")):
                    raise BadInput(f"`{arg}` is not a URL. Use `{self.settings.command} index https://…/file.pdf`.")
                into = await indexing_scope(self.threads, scope, place.strip().lower() or None)
                told = notify_of(channel, into)
                await self.indexing.run(
                    channel,
                    hide_credentials(url),
                    lambda p: self.service.requests.index([url], scope=into, progress=p, notify=told),
                    "Indexed",
                    respond,
                    scope=into,
                )
            else:
                await self.indexing.run(
                    channel,
                    arg or "this channel's and workspace's documents",
                    lambda p: self.service.requests.reindex(scope, arg or None, p, notify_of(channel, scope)),
                    "Reindexed",
                    respond,
                    scope=scope,
                )
        except PixelragError as exc:
            await respond(f":warning: {render.escape(str(exc))}")
        except Exception:
            log.exception("%s %s failed", self.settings.command, sub)
            await respond(f":warning: `{self.settings.command} {sub}` failed. The details are in the bot's log.")


async def watch(settings: Settings, threads, sub: str, arg: str, scope: str, command: str, channel: str) -> str:
    """`watch <url> [channel|workspace]`: the address kept current in that collection (checked daily by
    the workers); `unwatch <url or id>`: no longer (its document stays: `remove` removes it)."""
    target, _, place = arg.partition(" ")
    url = target.strip("<>").split("|")[0]
    queue = await job_queue(settings).open()
    try:
        if sub == "unwatch":
            source = await unwatch(queue, own_scopes(scope), url)
            shown = render.escape(hide_credentials(source.location))
            return f":no_bell: No longer watching {shown}; its document stays."
        if not url.startswith(("http://", "https://")):
            raise BadInput(f"`{arg}` is not a URL. Use `{command} watch https://…/file.pdf`.")
        into = await indexing_scope(threads, scope, place.strip().lower() or None)
        await watch_address(queue, url, into, notify=f"slack:{tenant(scope)[1]}:{channel}")
    finally:
        await queue.close()
    where = "this channel" if channel_of(into) else "this workspace"
    return (
        f":eyes: Watching {render.escape(hide_credentials(url))} for {where}: it is indexed now and checked every "
        f"day; a new version replaces the old. `{command} status` shows its last check."
    )


async def watched_status(settings: Settings, scope: str) -> dict:
    """The watched sources and jobs of this channel's collections, for `status`."""
    found = await queue_summary(settings, scope)
    if found is None:
        return {}
    running = found["jobs_running"]
    return {
        "watched sources": "; ".join(found["sources"]) or "none",
        "indexing jobs": f"{found['jobs_queued']} waiting, {len(running)} under way"
        + (f": {'; '.join(running)}" if running else ""),
        "indexing workers alive": len(found["workers"]),
    }


def private_reply(respond, client: AsyncWebClient, command: dict) -> Callable[[str], Awaitable[None]]:
    """Bolt's respond() as a one-argument ephemeral reply. The response_url takes 5 messages within
    30 minutes and then refuses them with a non-200 status that respond() does not raise; then the
    reply goes as an ephemeral message in the channel, and where the bot cannot post there, to the
    person's messages with the app: a command's outcome is never lost without a word."""
    channel, user = command.get("channel_id", ""), command.get("user_id", "")

    async def reply(text: str) -> None:
        try:
            response = await respond(text=text, response_type="ephemeral")
            refused = f"HTTP {getattr(response, 'status_code', 200)}"
        except Exception as exc:  # the response_url's host unreachable
            refused = type(exc).__name__
        if refused == "HTTP 200":
            return
        log.warning("response_url refused a reply (%s); sending it another way", refused)
        try:
            await client.chat_postEphemeral(channel=channel, user=user, text=text)
            return
        except Exception as exc:
            log.warning("an ephemeral reply in %s was refused (%s)", channel, error_code(exc) or exc)
        try:
            await client.chat_postMessage(channel=user, text=text)  # the app's direct messages with them
        except Exception:
            log.exception("a reply to %s could not be delivered in any way", user)

    return reply
