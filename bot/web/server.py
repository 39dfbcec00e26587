"""`pixelrag web`: the page viewer (and /healthz, /readyz, /metrics) on its own, bound to 127.0.0.1
unless told otherwise: put it behind the team's sign-in proxy to open it wider (docs/web.md)."""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from core import Service, Settings

from ..health import add_routes
from .pages import document_page
from .viewer import add_viewer, html

log = logging.getLogger("pixelrag.web")

HOME = document_page(
    "pixelrag",
    "<main><h1>pixelrag</h1><p>The pages cited in answers open here, from the links in Slack, Discord "
    "and <code>pixelrag ask</code>.</p></main>",
)


def web_app(service: Service) -> web.Application:
    app = web.Application()
    add_viewer(app, service)
    add_routes(app, service, viewer=False)

    async def home(request: web.Request) -> web.Response:
        return html(HOME)

    app.router.add_get("/", home)
    return app


async def serve_web(settings: Settings, host: str = "127.0.0.1", port: int = 8080) -> None:
    """Serve until stopped; `pixelrag web` calls this."""
    async with Service(settings) as service:
        await service.warm_up()
        runner = web.AppRunner(web_app(service))
        await runner.setup()
        try:
            await web.TCPSite(runner, host, port).start()
            shown = "localhost" if host in ("127.0.0.1", "::1") else host
            log.info("pixelrag web on http://%s:%d/", shown, port)
            print(f"pixelrag web: http://{shown}:{port}/ (Ctrl-C stops it)", flush=True)
            await asyncio.Event().wait()
        finally:
            await runner.cleanup()
