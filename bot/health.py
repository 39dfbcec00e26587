"""Liveness, readiness and metrics over HTTP, for load balancers, Kubernetes probes and Prometheus:
`/healthz` answers while the process runs; `/readyz` answers 200 only when the bot can answer (its index
or database reachable, its platform connected), else 503 with the reason; `/metrics` is the Prometheus
text format (core/metrics.py). The Events API serves them on its own port; Socket Mode and Discord
serve them on `--health-port`."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web
from aiohttp.http_exceptions import HttpProcessingError
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from core import Service, watch_loop_lag

from .web.viewer import add_viewer

log = logging.getLogger("pixelrag.health")

# Why the bot cannot answer now, or None when it can.
Check = Callable[[], Awaitable[str | None]]


def readiness(service: Service, connected: Check | None = None) -> Check:
    """The store's readiness, then the platform's (`connected`: why it is not, or None)."""

    async def check() -> str | None:
        return await service.readiness() or (await connected() if connected else None)

    return check


class BadRequestsInOneLine(logging.Filter):
    """aiohttp logs a request it cannot parse (a header over its 8 KB, say) as an error with a traceback;
    the client has its 400 already, so one warning line says it."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if isinstance(error, HttpProcessingError) and record.name == "aiohttp.server":
            record.levelno, record.levelname = logging.WARNING, "WARNING"
            record.msg, record.args = "refused a malformed HTTP request (%s)", (error.message,)
            record.exc_info = record.exc_text = None
        return True


def quiet_bad_requests() -> None:
    server_log = logging.getLogger("aiohttp.server")
    if not any(isinstance(f, BadRequestsInOneLine) for f in server_log.filters):
        server_log.addFilter(BadRequestsInOneLine())


def add_routes(app: web.Application, service: Service, connected: Check | None = None, viewer: bool = True) -> None:
    """The probes' routes; and the page viewer's when citations carry links (PIXELRAG_PUBLIC_URL), so
    that the port a chat process opens anyway serves them."""
    ready = readiness(service, connected)
    if viewer and service.settings.public_url:
        add_viewer(app, service)

    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(request: web.Request) -> web.Response:
        reason = await ready()
        return web.Response(text="ready\n") if reason is None else web.Response(status=503, text=f"{reason}\n")

    async def metrics(request: web.Request) -> web.Response:
        await service.count_index()
        return web.Response(body=generate_latest(), headers={"Content-Type": CONTENT_TYPE_LATEST})

    async def watch(app: web.Application):
        lag = asyncio.create_task(watch_loop_lag())
        yield
        lag.cancel()

    quiet_bad_requests()
    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)
    app.router.add_get("/metrics", metrics)
    app.cleanup_ctx.append(watch)


async def serve_health(port: int, service: Service, connected: Check | None = None) -> web.AppRunner:
    """The routes alone on `port` (all interfaces, as a probe reaches a container); the caller cleans the
    runner up."""
    app = web.Application()
    add_routes(app, service, connected)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "0.0.0.0", port).start()
    log.info("health checks on :%d/healthz, /readyz and /metrics", port)
    return runner
