"""`pixelrag slack`: the bot until it is stopped, over Socket Mode or the Events API (HTTP)."""
from __future__ import annotations

import asyncio
import logging

from core import BadInput, Service, Settings, thread_memory

from .app import build_app
from .settings import SlackSettings

log = logging.getLogger("pixelrag.slack")

DRAIN_S = 30.0  # on shutdown, answers already being written get this long to be posted


async def serve(settings: Settings, *, http: bool = False, port: int = 3000) -> None:
    slack = SlackSettings.parse(settings)
    if not slack.bot_token:
        raise BadInput("SLACK_BOT_TOKEN is not set (the xoxb- token from OAuth & Permissions).")
    if http and not slack.signing_secret:
        raise BadInput("SLACK_SIGNING_SECRET is required with --http (Basic Information → Signing Secret).")
    if not http and not slack.app_token:
        raise BadInput("SLACK_APP_TOKEN is not set (an xapp- token with connections:write) — or use --http.")
    threads = await thread_memory(settings, slack.threads_db).open()
    service = Service(settings)
    await service.warm_up()
    app, bot = build_app(settings, service, threads)
    try:
        if http:
            await serve_http(app, port)
        else:
            from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

            handler = AsyncSocketModeHandler(app, slack.app_token)
            log.info("Slack Socket Mode connecting")
            try:
                await handler.start_async()
            finally:
                await handler.close_async()
    finally:
        try:
            await asyncio.wait_for(bot.drain(), DRAIN_S)
        except (TimeoutError, asyncio.CancelledError):
            log.warning("stopped with work still running; Slack's redelivery picks it up after a restart")
        await threads.close()


async def serve_http(app, port: int) -> None:
    from aiohttp import web

    runner = web.AppRunner(app.web_app(path="/slack/events", port=port))
    await runner.setup()
    await web.TCPSite(runner, "0.0.0.0", port).start()
    log.info("Slack Events API on :%d/slack/events", port)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
