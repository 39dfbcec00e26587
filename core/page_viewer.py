"""What a page link opens: the cited page of the version it was made for, from what the index stores.

The link's document must be in the collection it was cited in, exactly: a document removed or moved to
another collection opens nothing. A document re-indexed with new content (the same file name in the
same collection, another PDF) opens the cited version while its PDF is still stored, drawn from it, with
a pointer to the current version; once that PDF is gone the link says the document changed and points
to the current version. Nothing here needs a model.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

from .config import Settings
from .indexing.sources import Source, open_pdf, render_page
from .links import LinkRefused, Links, PageLink, name_key
from .ports import PageStore
from .records import Document

GONE = "The document this link opened is no longer in the collection it was cited in."


@dataclass(frozen=True)
class PageView:
    """One page as the viewer shows it: the version linked, the evidence's box, the neighbours' links."""

    link: PageLink
    document: Document  # the version shown (the cited one)
    current: Document | None  # the current version when the cited one has changed, else None
    current_token: str | None  # a link to the same page of the current version, then
    image: str  # token of this page's image
    previous: str | None  # tokens of the neighbouring pages of the same version
    next: str | None


class PageViewer:
    def __init__(self, settings: Settings, pages: PageStore):
        self.settings, self.pages = settings, pages

    async def view(self, links: Links, token: str, now: float | None = None) -> PageView:
        link, document, current = await self._find(links, token, now)

        def neighbour(page: int) -> str | None:
            return links.token(link.at(page)) if 1 <= page <= document.page_count else None

        now_token = links.token(link_to(current, link)) if current else None
        return PageView(link, document, current, now_token, token, neighbour(link.page - 1), neighbour(link.page + 1))

    async def image(self, links: Links, token: str, now: float | None = None) -> bytes:
        """The page's image: the stored one of the current version, or the cited version's drawn again."""
        link, document, current = await self._find(links, token, now)
        if current is None:
            search = await self.pages.search(document.scope)
            page = await search.page(document.doc_id, link.page) if search else None
            if page is not None:
                return page.jpeg
        pdf = await self._pdf(document)
        return await asyncio.to_thread(self._draw, document, pdf, link.page)

    async def pdf(self, links: Links, token: str, now: float | None = None) -> tuple[Document, bytes]:
        """The cited version's original PDF."""
        _, document, _ = await self._find(links, token, now)
        return document, await self._pdf(document)

    async def _find(self, links: Links, token: str, now: float | None) -> tuple[PageLink, Document, Document | None]:
        """The link, the version it cited, and the current version when that one has changed."""
        link = links.opened(token, time.time() if now is None else now)
        here = [d for d in await self.pages.documents(link.scope) if d.scope == link.scope]
        cited = next((d for d in here if d.sha256 == link.sha), None)
        current = None
        if cited is None:
            current = next((d for d in here if name_key(d.file_name) == link.name), None)
            if current is None:
                raise LinkRefused(410, GONE)
            pdf = await self.pages.source(link.sha)
            if pdf is None:
                raise LinkChanged(links.token(link_to(current, link)), current)
            cited = await asyncio.to_thread(self._earlier, pdf, link, current)
        if not 1 <= link.page <= cited.page_count:
            raise LinkRefused(404, "This link names a page the document does not have.")
        return link, cited, current

    async def _pdf(self, document: Document) -> bytes:
        pdf = await self.pages.source(document.sha256)
        if pdf is None:
            raise LinkRefused(410, "The original PDF of this document is no longer stored; the page image is.")
        return pdf

    def _earlier(self, pdf: bytes, link: PageLink, current: Document) -> Document:
        """The cited version's record, read from its stored PDF."""
        source = Source(pdf, current.file_name, current.source)
        doc = open_pdf(source, self.settings)
        try:
            return Document(
                source.doc_id(link.scope),
                current.title,
                current.file_name,
                link.sha,
                doc.page_count,
                link.scope,
                current.source,
            )
        finally:
            doc.close()

    def _draw(self, document: Document, pdf: bytes, page: int) -> bytes:
        doc = open_pdf(Source(pdf, document.file_name, document.source), self.settings)
        try:
            return render_page(doc, page - 1, document.doc_id, self.settings).jpeg
        finally:
            doc.close()


class LinkChanged(LinkRefused):
    """The cited version is gone; `current_token` opens the same page (or the first) of the current one."""

    def __init__(self, current_token: str, current: Document):
        super().__init__(410, "This document has changed since the link was made, and the cited version is gone.")
        self.current_token, self.current = current_token, current


def link_to(current: Document, link: PageLink) -> PageLink:
    page = link.page if link.page <= current.page_count else 1
    return PageLink(current.sha256, current.scope, link.name, page, None, None, link.expires)
