"""`pixelrag slack`: the bot until it is stopped, over Socket Mode or the Events API (HTTP)."""

from __future__ import annotations

import asyncio
import json
import logging
from urllib.parse import parse_qs

from core import BadInput, Service, Settings, thread_memory

from ..health import Check, add_routes, serve_health
from ..job_worker import background_worker
from .app import build_app
from .render import escape
from .settings import SlackSettings

log = logging.getLogger("pixelrag.slack")

DRAIN_S = 30.0  # on shutdown, answers already being written get this long to be posted


async def serve(settings: Settings, *, http: bool = False, port: int = 3000, health_port: int | None = None) -> None:
    slack = SlackSettings.parse(settings)
    if not slack.bot_token:
        raise BadInput("SLACK_BOT_TOKEN is not set (the xoxb- token from OAuth & Permissions).")
    if http and not slack.signing_secret:
        raise BadInput("SLACK_SIGNING_SECRET is required with --http (Basic Information → Signing Secret).")
    if not http and not slack.app_token:
        raise BadInput("SLACK_APP_TOKEN is not set (an xapp- token with connections:write) — or use --http.")
    threads = await thread_memory(settings, slack.threads_db).open()
    service = Service(settings, costs=threads)  # a workspace's indexing costs are kept with its questions'
    await service.warm_up()
    app, bot = build_app(settings, service, threads)
    await bot.identity.check()  # a refused token is logged now; deliveries wait until Slack takes it

    async def tell(target: str, text: str) -> None:
        channel, _, thread_ts = target.partition(":")
        await app.client.chat_postMessage(channel=channel, thread_ts=thread_ts or None, text=escape(text))

    try:
        async with background_worker(settings, service, ("slack", tell)):
            if http:
                await serve_http(app, port, service, bot.identity.readiness)
            else:
                from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

                handler = AsyncSocketModeHandler(app, slack.app_token)

                async def connected() -> str | None:
                    if not await handler.client.is_connected():
                        return "not connected to Slack"
                    return await bot.identity.readiness()

                probes = await serve_health(health_port, service, connected) if health_port else None
                log.info("Slack Socket Mode connecting")
                try:
                    await handler.start_async()
                finally:
                    await handler.close_async()
                    if probes:
                        await probes.cleanup()
    finally:
        try:
            await asyncio.wait_for(bot.drain(), DRAIN_S)
        except (TimeoutError, asyncio.CancelledError):
            log.warning("stopped with work still running; Slack's redelivery picks it up after a restart")
        await bot.identity.close()
        await threads.close()
        await service.close()


def unsigned(headers) -> str | None:
    """Why a request's signature headers are not Slack's (Bolt would fail on a timestamp that is not a
    number with a 500, which invites retries), or None."""
    stamp = headers.get("X-Slack-Request-Timestamp")
    if stamp is not None and not (stamp.isascii() and stamp.isdigit()):
        return "the request timestamp is not a number"
    return None


def malformed(body: bytes, content_type: str) -> str | None:
    """Why a request is not one Slack sends (so Bolt, which would fail on it with a traceback and a
    500, is not given it), or None. Slack posts a JSON object (events), or a form: a slash command's
    fields, or an interaction's `payload` holding a JSON object."""
    try:
        if content_type == "application/json":
            data = json.loads(body)
            if not isinstance(data, dict):
                return "the JSON body is not an object"
            event = data.get("event")
            if data.get("type") == "event_callback" and not isinstance(event, dict):
                return "the event is not an object"
            if (
                isinstance(event, dict)
                and event.get("type") in ("message", "app_mention")
                and not (isinstance(event.get("ts"), str) and isinstance(event.get("channel"), str))
            ):
                return "the message event has no ts or channel"
            return None
        form = parse_qs(body.decode("utf-8"), strict_parsing=bool(body), max_num_fields=100)
        if "payload" in form and not isinstance(json.loads(form["payload"][0]), dict):
            return "the payload is not a JSON object"
        return None
    except RecursionError:
        return "the JSON is nested too deeply"
    except (ValueError, UnicodeDecodeError) as exc:
        return f"the body cannot be read ({type(exc).__name__})"


async def serve_http(app, port: int, service: Service, connected: Check) -> None:
    from aiohttp import web

    @web.middleware
    async def refuse_malformed(request: web.Request, handler):
        if request.method == "POST" and (
            reason := unsigned(request.headers) or malformed(await request.read(), request.content_type)
        ):
            log.warning("refused a request to %s that Slack would not send: %s", request.path, reason)
            return web.Response(status=400, text=reason)
        return await handler(request)  # the body read here is kept for Bolt to read again

    web_app = app.web_app(path="/slack/events", port=port)
    web_app.middlewares.append(refuse_malformed)
    add_routes(web_app, service, connected)
    runner = web.AppRunner(web_app)
    await runner.setup()
    await web.TCPSite(runner, "0.0.0.0", port).start()
    log.info("Slack Events API on :%d/slack/events", port)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()
