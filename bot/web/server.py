"""`pixelrag web`: the browser chat at /, the page viewer its citations open, the HTTP API for agents
(/api/, api.py) and their MCP server (/mcp, mcp.py), and /healthz, /readyz, /metrics; bound to 127.0.0.1
unless told otherwise (docs/web.md says how to open it wider behind the team's sign-in proxy). The chat
searches one collection: the shared one unless --scope names another; an API key names its own."""

from __future__ import annotations

import asyncio
import logging

from aiohttp import web

from core import SHARED_SCOPE, Service, Settings, ThreadMemory, thread_memory

from ..health import add_routes
from ..job_worker import background_worker
from ..thread_files import web_threads_file
from .api import Api
from .chat import MAX_IMAGES, WebChat
from .mcp import McpOverHttp
from .pages import STATIC, chat_page
from .viewer import CSP, add_viewer, html

log = logging.getLogger("pixelrag.web")

# The chat page runs its own script and shows screenshots before they are sent (blob:) and citations'
# images (data:); it still loads nothing from another origin and talks only to this server.
CHAT_CSP = CSP.replace("img-src 'self'", "img-src 'self' data: blob:") + "; script-src 'self'; connect-src 'self'"


def web_threads(settings: Settings) -> ThreadMemory:
    """The web chat's thread memory, which keeps the API's keys too: a file beside the index, or the database."""
    return thread_memory(settings, web_threads_file(settings))


def web_app(service: Service, threads: ThreadMemory | None = None, scope: str = SHARED_SCOPE) -> web.Application:
    """The viewer, the probes and, given a thread memory, the chat."""
    settings = service.settings
    app = web.Application(client_max_size=MAX_IMAGES * settings.max_image_bytes + 1_000_000)
    add_viewer(app, service)
    add_routes(app, service, viewer=False)
    if threads is None:
        return app
    chat = WebChat(service, threads, scope)
    collection = "the shared collection" if scope == SHARED_SCOPE else scope

    async def home(request: web.Request) -> web.Response:
        response = html(chat_page(collection))
        response.headers["Content-Security-Policy"] = CHAT_CSP
        return response

    async def ask(request: web.Request) -> web.StreamResponse:
        # Only this page's script may ask: a form on another site cannot set this header without a CORS
        # preflight, which is never answered, and a browser names the page's origin.
        origin = request.headers.get("Origin")
        if request.headers.get("X-Requested-With") != "pixelrag" or (
            origin and origin != f"{request.scheme}://{request.host}"
        ):
            return web.json_response({"type": "error", "message": "Ask from pixelrag's own page."}, status=403)
        return await chat.ask(request)

    def static(name: str, content_type: str):
        async def serve(request: web.Request) -> web.Response:
            return web.Response(body=STATIC[name], content_type=content_type)

        return serve

    app.router.add_get("/", home)
    app.router.add_post("/chat/ask", ask)
    Api(service, threads).add_routes(app)
    McpOverHttp(service, threads).add_routes(app)
    app.router.add_get("/static/chat.js", static("chat.js", "text/javascript"))
    app.router.add_get("/static/chat.css", static("chat.css", "text/css"))
    return app


async def serve_web(settings: Settings, host: str = "127.0.0.1", port: int = 8080, scope: str = SHARED_SCOPE) -> None:
    """Serve until stopped; `pixelrag web` calls this."""
    threads = await web_threads(settings).open()
    try:
        async with Service(settings, costs=threads) as service, background_worker(settings, service):
            await service.warm_up()
            runner = web.AppRunner(web_app(service, threads, scope))
            await runner.setup()
            try:
                await web.TCPSite(runner, host, port).start()
                shown = "localhost" if host in ("127.0.0.1", "::1") else host
                log.info("pixelrag web on http://%s:%d/", shown, port)
                print(f"pixelrag web: http://{shown}:{port}/ (Ctrl-C stops it)", flush=True)
                await asyncio.Event().wait()
            finally:
                await runner.cleanup()
    finally:
        await threads.close()
