"""The page viewer over HTTP and in a real browser (Debian's Chromium, driven by Playwright): a citation's
link opens its page with the evidence marked where it is, the PDF opens at the page, a forged or expired
link shows the error page, nothing is loaded from outside or run from a document, and no request path
reaches the file system."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from PIL import Image

from bot.web.server import web_app
from core import Service, Turn
from core.config import Settings
from core.records import Highlight
from tests.conftest import closed_port, text_pdf

CHROMIUM = Path("/usr/bin/chromium")
QUESTION = "What is the mounting hole spacing of the HydroFlow HF-300?"
MARKUP_TITLE = '<script>window.pwned = 1</script><img src=x onerror="window.pwned = 2">**bold** <@U123>'


@pytest.fixture
async def served(tmp_path, brochure_index):
    """The brochure's index behind `pixelrag web`'s app on a loopback port, links made for that address."""
    shutil.copytree(brochure_index, tmp_path / "index")
    port = closed_port()
    base = f"http://127.0.0.1:{port}"
    settings = Settings(index_dir=tmp_path / "index", backend="local", public_url=base)
    async with Service(settings) as service:
        runner = web.AppRunner(web_app(service))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            yield base, service
        finally:
            await runner.cleanup()


async def get(url: str, encoded: bool = False) -> tuple[int, dict, bytes]:
    from yarl import URL

    async with aiohttp.ClientSession() as session:
        async with session.get(URL(url, encoded=encoded), allow_redirects=False) as response:
            return response.status, dict(response.headers), await response.read()


async def cited(service: Service):
    answer = await service.answer(Turn(QUESTION))
    return next(c for c in answer.citations if c.highlight and c.highlight.kind == "exact")


async def test_a_citation_link_opens_its_page_its_image_and_its_pdf(served, brochure):
    base, service = served
    citation = await cited(service)
    assert citation.url.startswith(f"{base}/view/")
    status, headers, body = await get(citation.url)
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert (
        "default-src 'none'" in headers["Content-Security-Policy"]
        and "script-src" not in headers["Content-Security-Policy"]
    )
    assert headers["Referrer-Policy"] == "no-referrer" and headers["Cache-Control"] == "no-store"
    html = body.decode()
    assert f"Page {citation.page} of 4" in html and 'class="mark exact"' in html
    token = citation.url.rsplit("/", 1)[1]
    status, headers, image = await get(f"{base}/page/{token}")
    assert status == 200 and headers["Content-Type"] == "image/jpeg" and image.startswith(b"\xff\xd8\xff")
    pdf_href = html.split('href="/pdf/', 1)[1].split('"', 1)[0]
    assert pdf_href.endswith(f"#page={citation.page}")
    status, headers, pdf = await get(f"{base}/pdf/{pdf_href.split('#')[0]}")
    assert status == 200 and headers["Content-Type"] == "application/pdf"
    assert headers["Content-Disposition"].startswith('inline; filename="hf300-brochure.pdf"')
    assert pdf == brochure.read_bytes()


async def test_no_request_path_reaches_the_file_system(served):
    base, service = served
    token = (await cited(service)).url.rsplit("/", 1)[1]
    for path in (
        "/static/../pyproject.toml",
        "/static/..%2F..%2Fpyproject.toml",
        "/static/viewer.css%00.py",
        "/view/..%2F..%2F..%2Fetc%2Fpasswd",
        "/page/%2Fetc%2Fpasswd",
        "/pdf/..%2Flink-secret",
        "/link-secret",
        "/index/link-secret",
        "/ACTIVE",
    ):
        status, headers, body = await get(base + path, encoded=True)
        assert status == 404, path
        assert b"root:" not in body and b"[project]" not in body and b"pixelrag-link" not in body, path
        assert "default-src 'none'" in headers["Content-Security-Policy"], path  # the error pages too
    # A name after the token is what the browser saves the PDF as; it is never read.
    status, _, body = await get(f"{base}/pdf/{token}/..%2F..%2F..%2Fpyproject.toml", encoded=True)
    assert status == 200 and body.startswith(b"%PDF")


async def test_a_title_with_markup_is_shown_as_text(served, tmp_path):
    base, service = served
    path = text_pdf(tmp_path / "odd.pdf", ["The Z9 blender has a 1.5 litre jar."], title=MARKUP_TITLE)
    await service.index([str(path)])
    [document] = [d for d in await service.documents("shared") if d.file_name == "odd.pdf"]
    links = await service.links()
    status, _, body = await get(links.view_url(links.link(document, 1, None, time.time())))
    html = body.decode()
    assert status == 200 and "<script>" not in html and "<img src=x" not in html
    assert "&lt;script&gt;window.pwned = 1&lt;/script&gt;" in html


# ---- in a real browser ------------------------------------------------------------------------


@pytest.fixture
async def browser():
    if not CHROMIUM.is_file():
        if os.environ.get("PIXELRAG_REQUIRE_BROWSER"):
            pytest.fail(f"{CHROMIUM} is missing; .ci/run installs Debian's chromium")
        pytest.skip(f"no browser at {CHROMIUM} (apt-get install chromium)")
    from playwright.async_api import async_playwright

    async with async_playwright() as playwright:
        chromium = await playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=["--no-sandbox"])
        try:
            yield chromium
        finally:
            await chromium.close()


async def open_page(browser, url: str, base: str):
    """A new page at `url`, with what it asked for from elsewhere and what the browser refused."""
    page = await browser.new_page(viewport={"width": 1000, "height": 1400})
    outside, console = [], []
    # The browser's own PDF viewer loads from chrome-extension://; anything on the network must be ours.
    page.on(
        "request",
        lambda r: outside.append(r.url) if r.url.startswith(("http", "ws")) and not r.url.startswith(base) else None,
    )
    page.on("console", lambda message: console.append(message.text))
    response = await page.goto(url)
    await page.wait_for_load_state("networkidle")
    return page, response, outside, console


async def mark_geometry(page) -> tuple[dict, dict]:
    image = await page.locator("figure.page img").bounding_box()
    mark = await page.locator("rect.mark").bounding_box()
    return image, mark


def edge_colours(shot: bytes, mark: dict, image: dict, tmp_path: Path) -> list[tuple[int, int, int]]:
    """Along the mark's top edge on a screenshot of the page, the most coloured pixel of each column
    within two pixels of the edge (the stroke is centred on it)."""
    path = tmp_path / "shot.png"
    path.write_bytes(shot)
    pixels = Image.open(path).convert("RGB")
    y = round(mark["y"])
    columns = range(round(mark["x"]) + 4, round(mark["x"] + mark["width"]) - 4)
    return [max((pixels.getpixel((x, y + dy)) for dy in range(-2, 3)), key=lambda c: c[0] - c[2]) for x in columns]


def reddish(c) -> bool:
    return c[0] > 170 and c[1] < 110 and c[2] < 110


def orange(c) -> bool:
    return c[0] > 190 and 80 < c[1] < 170 and c[2] < 90


async def test_the_viewer_marks_exact_and_approximate_evidence_where_it_is(served, browser, tmp_path):
    base, service = served
    citation = await cited(service)
    page, response, outside, console = await open_page(browser, citation.url, base)
    assert response.status == 200
    assert await page.locator("h1").text_content() == citation.title
    image, mark = await mark_geometry(page)
    x0, y0, x1, y1 = citation.highlight.box
    assert mark["x"] - image["x"] == pytest.approx(x0 * image["width"], abs=3)
    assert mark["y"] - image["y"] == pytest.approx(y0 * image["height"], abs=3)
    assert mark["width"] == pytest.approx((x1 - x0) * image["width"], abs=4)
    assert mark["height"] == pytest.approx((y1 - y0) * image["height"], abs=4)
    await page.screenshot(path=str(tmp_path / "exact.png"), full_page=True)
    top = edge_colours(await page.screenshot(full_page=True), mark, image, tmp_path)
    assert sum(map(reddish, top)) / len(top) > 0.9  # a solid line
    assert "Solid box" in await page.locator(".legend").text_content()

    # An approximate region: dashed, and labelled so.
    [document] = [d for d in await service.documents("shared")]
    links = await service.links()
    approximate = links.view_url(links.link(document, 2, Highlight("approximate", (0.2, 0.3, 0.8, 0.5)), time.time()))
    page, response, more_outside, more_console = await open_page(browser, approximate, base)
    image, mark = await mark_geometry(page)
    assert mark["x"] - image["x"] == pytest.approx(0.2 * image["width"], abs=3)
    assert mark["y"] - image["y"] == pytest.approx(0.3 * image["height"], abs=3)
    top = edge_colours(await page.screenshot(full_page=True), mark, image, tmp_path)
    share = sum(map(orange, top)) / len(top)
    assert 0.4 < share < 0.85, share  # dashes and gaps
    assert "approximate" in (await page.locator(".legend").text_content()).lower()
    assert outside + more_outside == []  # nothing from anywhere else
    assert not [line for line in console + more_console if "Content Security Policy" in line]


async def test_the_viewer_walks_the_pages_and_opens_the_pdf_at_the_page(served, browser):
    base, service = served
    citation = await cited(service)
    page, _, outside, _ = await open_page(browser, citation.url, base)
    if citation.page < 4:
        await page.click("a[data-rel=next]")
        await page.wait_for_load_state("networkidle")
        assert f"Page {citation.page + 1} of 4" in await page.locator(".where").text_content()
        assert await page.locator("rect.mark").count() == 0
        await page.go_back()
    pdfs = []
    page.on("response", lambda r: pdfs.append(r) if r.url.split("#")[0].split("/")[3] == "pdf" else None)
    href = await page.locator("a[data-rel=pdf]").get_attribute("href")
    assert href.endswith(f"#page={citation.page}")
    try:
        await page.click("a[data-rel=pdf]")
        await page.wait_for_timeout(1000)
    except Exception:  # a browser may take the PDF as a download rather than a page
        pass
    assert pdfs and pdfs[0].status == 200 and pdfs[0].headers["content-type"] == "application/pdf"
    assert outside == []


async def test_a_forged_or_expired_link_shows_the_error_page(served, browser):
    base, service = served
    citation = await cited(service)
    payload, signature = citation.url.rsplit("/", 1)[1].split(".")
    forged = f"{base}/view/{payload}.{signature[:-1]}{'A' if signature[-1] != 'A' else 'B'}"
    [document] = await service.documents("shared")
    links = await service.links()
    expired = links.view_url(links.link(document, 1, None, time.time() - 100 * 86_400))
    for url, status in ((forged, 404), (expired, 410)):
        page, response, outside, _ = await open_page(browser, url, base)
        assert response.status == status
        assert await page.locator("h1").text_content() == "This link opens nothing"
        assert document.title not in await page.content()
        assert await page.locator("img").count() == 0 and outside == []


async def test_markup_from_a_document_never_runs_in_the_browser(served, browser, tmp_path):
    base, service = served
    path = text_pdf(tmp_path / "odd.pdf", ["The Z9 blender has a 1.5 litre jar."], title=MARKUP_TITLE)
    await service.index([str(path)])
    [document] = [d for d in await service.documents("shared") if d.file_name == "odd.pdf"]
    links = await service.links()
    page, response, outside, _ = await open_page(
        browser, links.view_url(links.link(document, 1, None, time.time())), base
    )
    assert response.status == 200
    assert await page.locator("h1").text_content() == document.title
    assert await page.evaluate("window.pwned") is None
    assert outside == []
