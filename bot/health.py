"""Liveness and readiness over HTTP, for load balancers and Kubernetes probes: `/healthz` answers while
the process runs; `/readyz` answers 200 only when the bot can answer (its index or database reachable,
its platform connected), else 503 with the reason. The Events API serves them on its own port; Socket
Mode and Discord serve them on `--health-port`."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from core import Service

log = logging.getLogger("pixelrag.health")

# Why the bot cannot answer now, or None when it can.
Check = Callable[[], Awaitable[str | None]]


def readiness(service: Service, connected: Check | None = None) -> Check:
    """The store's readiness, then the platform's (`connected`: why it is not, or None)."""

    async def check() -> str | None:
        return await service.readiness() or (await connected() if connected else None)

    return check


def add_routes(app: web.Application, ready: Check) -> None:
    async def healthz(request: web.Request) -> web.Response:
        return web.Response(text="ok\n")

    async def readyz(request: web.Request) -> web.Response:
        reason = await ready()
        return web.Response(text="ready\n") if reason is None else web.Response(status=503, text=f"{reason}\n")

    app.router.add_get("/healthz", healthz)
    app.router.add_get("/readyz", readyz)


async def serve_health(port: int, ready: Check) -> web.AppRunner:
    """The two routes alone on `port` (all interfaces, as a probe reaches a container); the caller
    cleans the runner up."""
    app = web.Application()
    add_routes(app, ready)
    runner = web.AppRunner(app)
    await runner.setup()
    await web.TCPSite(runner, "0.0.0.0", port).start()
    log.info("health checks on :%d/healthz and /readyz", port)
    return runner
