"""The page viewer's routes, added to any aiohttp app (the chat processes' port, `pixelrag web`):

- /view/<token>: the cited page with its evidence marked, its neighbours and the PDF (pages.py);
- /page/<token>: that page's image; /pdf/<token>[/<name>]: the original PDF, shown inline;
- /static/viewer.css.

A token is checked by core before anything is read; no part of a request names a file. Every answer
carries the headers of `secured`: a strict Content-Security-Policy (nothing but this server's own
images and stylesheet; no script), no Referer (a link is a capability), nothing cached.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from urllib.parse import quote

from aiohttp import web

from core import LinkChanged, LinkRefused, PixelragError, Service

from .pages import STATIC, error_page, view_page

log = logging.getLogger("pixelrag.web")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

CSP = (
    "default-src 'none'; img-src 'self'; style-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
HEADERS = {
    "Content-Security-Policy": CSP,
    "Referrer-Policy": "no-referrer",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Cross-Origin-Resource-Policy": "same-origin",
    "Cache-Control": "no-store",
}


@web.middleware
async def secured(request: web.Request, handler) -> web.StreamResponse:
    try:
        response = await handler(request)
    except web.HTTPException as exc:  # aiohttp's own 404 and 405 get the headers too
        for name, value in HEADERS.items():
            exc.headers.setdefault(name, value)
        raise
    for name, value in HEADERS.items():
        response.headers.setdefault(name, value)
    return response


def add_viewer(app: web.Application, service: Service) -> None:
    """The viewer's routes on `app`, and the headers of `secured` on everything it answers."""
    app.middlewares.append(secured)

    async def view(request: web.Request) -> web.Response:
        token = request.match_info["token"]
        page = await service.view_page(token)
        pdf = f"/pdf/{token}/{quote(pdf_name(page.document.file_name))}#page={page.link.page}"
        return html(view_page(page, pdf))

    async def image(request: web.Request) -> web.Response:
        return web.Response(body=await service.page_image(request.match_info["token"]), content_type="image/jpeg")

    async def pdf(request: web.Request) -> web.Response:
        document, data = await service.page_pdf(request.match_info["token"])
        name = pdf_name(document.file_name)
        return web.Response(
            body=data,
            content_type="application/pdf",
            headers={"Content-Disposition": f"inline; filename=\"{ascii_name(name)}\"; filename*=UTF-8''{quote(name)}"},
        )

    async def stylesheet(request: web.Request) -> web.Response:
        return web.Response(body=STATIC["viewer.css"], content_type="text/css")

    app.router.add_get("/view/{token}", refusals_shown(view))
    app.router.add_get("/page/{token}", refusals_shown(image))
    app.router.add_get("/pdf/{token}", refusals_shown(pdf))
    app.router.add_get("/pdf/{token}/{name}", refusals_shown(pdf))  # the name is what a browser saves it as
    app.router.add_get("/static/viewer.css", stylesheet)


def refusals_shown(handler: Handler) -> Handler:
    """A link that opens nothing is a plain page with its status; a failure of the store a 503."""

    async def shown(request: web.Request) -> web.StreamResponse:
        try:
            return await handler(request)
        except LinkChanged as exc:
            return html(error_page(str(exc), exc.current_token), exc.status)
        except LinkRefused as exc:
            return html(error_page(str(exc)), exc.status)
        except PixelragError as exc:
            log.warning("%s %s: %s", request.method, request.path[:80], exc)
            return html(error_page("The index cannot be read right now; try again in a minute."), 503)

    return shown


def html(text: str, status: int = 200) -> web.Response:
    return web.Response(status=status, text=text, content_type="text/html")


def pdf_name(file_name: str) -> str:
    """The name a browser saves the PDF under: the document's, ending in .pdf."""
    name = " ".join(file_name.replace("/", "_").replace("\\", "_").split()) or "document"
    return name if name.lower().endswith(".pdf") else f"{name}.pdf"


def ascii_name(name: str) -> str:
    return "".join(c if c.isascii() and c.isprintable() and c not in '"\\;' else "_" for c in name)
