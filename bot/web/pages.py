"""The viewer's HTML, written here and escaped here: a document's title, file name and every message
are text (html.escape), never markup; the page's mark is an SVG rectangle over the page image. The
stylesheet is read once at start from the package (STATIC): no request path names a file."""

from __future__ import annotations

from html import escape
from importlib.resources import files

from core import PageView

STATIC = {name: (files("bot.web") / "static" / name).read_bytes() for name in ("viewer.css", "chat.css", "chat.js")}
LEGEND = {
    "exact": '<span class="exact">Solid box</span>: the quoted text, found on the page.',
    "approximate": '<span class="approximate">Dashed box, approximate</span>: where the reader placed the '
    "evidence; the page itself may say it elsewhere.",
}


def document_page(title: str, body: str, stylesheet: str = "viewer.css", script: str = "") -> str:
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{escape(title)}</title>"
        f'<link rel="stylesheet" href="/static/{stylesheet}">'
        + (f'<script src="/static/{script}" defer></script>' if script else "")
        + f"</head><body>{body}</body></html>\n"
    )


def chat_page(collection: str) -> str:
    """The browser chat (its script, static/chat.js, does the rest)."""
    body = (
        '<header class="bar"><h1>pixelrag</h1>'
        f"<p>Ask about the documents of {escape(collection)}; paste or drop a screenshot to search with it.</p>"
        '<button id="new" type="button">New conversation</button></header>'
        '<main id="log" aria-live="polite"></main>'
        '<form id="ask"><div id="shots"></div><div class="row">'
        '<textarea id="question" rows="2" aria-label="Your question" '
        'placeholder="Ask a question (Enter sends, Shift+Enter starts a new line)"></textarea>'
        '<label class="file">Add a screenshot<input id="file" type="file" accept="image/png,image/jpeg,image/webp" '
        'multiple></label><button type="submit">Ask</button></div>'
        '<p id="form-error" class="error" role="alert"></p></form>'
    )
    return document_page("pixelrag", body, "chat.css", "chat.js")


def view_page(view: PageView, pdf_href: str) -> str:
    link, document = view.link, view.document
    where = f"Page {link.page} of {document.page_count} · {escape(document.file_name)}"
    nav = " ".join(
        [
            _nav(f"/view/{view.previous}" if view.previous else None, "← Previous page", "previous"),
            _nav(f"/view/{view.next}" if view.next else None, "Next page →", "next"),
            _nav(pdf_href, "Open the original PDF at this page", "pdf"),
        ]
    )
    notice = ""
    if view.current is not None:
        notice = (
            '<p class="notice">This is the version of the document the answer cited. It has been indexed '
            f'again since, with other content: <a href="/view/{view.current_token}">open the current '
            "version</a>.</p>"
        )
    mark = legend = ""
    if link.box and link.kind in LEGEND:
        x0, y0, x1, y1 = link.box
        mark = (
            '<svg viewBox="0 0 1 1" preserveAspectRatio="none" aria-hidden="true">'
            f'<rect class="mark {link.kind}" x="{x0:.4f}" y="{y0:.4f}" width="{x1 - x0:.4f}" '
            f'height="{y1 - y0:.4f}" vector-effect="non-scaling-stroke"/></svg>'
        )
        legend = f'<p class="legend">{LEGEND[link.kind]}</p>'
    alt = f"Page {link.page} of {document.title}"
    body = (
        f'<header><h1>{escape(document.title)}</h1><p class="where">{where}</p><nav>{nav}</nav></header>'
        f'{notice}<main>{legend}<figure class="page"><img src="/page/{view.image}" alt="{escape(alt)}">'
        f"{mark}</figure></main>"
    )
    return document_page(f"{document.title} — page {link.page}", body)


def error_page(message: str, current_token: str | None = None) -> str:
    more = (
        f'<p><a href="/view/{current_token}">Open the current version of the document.</a></p>' if current_token else ""
    )
    body = f'<main class="error"><h1>This link opens nothing</h1><p>{escape(message)}</p>{more}</main>'
    return document_page("pixelrag: link not available", body)


def _nav(href: str | None, label: str, rel: str) -> str:
    if href is None:
        return f'<span aria-disabled="true">{escape(label)}</span>'
    return f'<a href="{escape(href)}" data-rel="{rel}">{escape(label)}</a>'
