"""`pixelrag web`'s browser chat, end to end with the local backend: in headless Chromium (Debian's, driven
by Playwright) a question, a follow-up in the same conversation and a screenshot question are answered,
the found pages show before the answer, citations open the viewer, and markup never runs; over HTTP the
endpoint refuses what it must (another site, a question sent twice, nothing to ask, a bad image)."""

from __future__ import annotations

import io
import shutil
import uuid

import aiohttp
import pytest
from aiohttp import web
from PIL import Image

from bot.web.server import web_app
from core import EmbeddedThreads, Service
from core.config import Settings
from tests.adapters.test_web_viewer import browser, open_page  # noqa: F401  (the browser fixture)
from tests.conftest import closed_port

FIRST = "What is the mounting hole spacing of the HydroFlow HF-300?"


@pytest.fixture
async def chat(tmp_path, brochure_index):
    """The brochure's index behind the whole `pixelrag web` app on a loopback port."""
    shutil.copytree(brochure_index, tmp_path / "index")
    port = closed_port()
    settings = Settings(index_dir=tmp_path / "index", backend="local")
    threads = await EmbeddedThreads(tmp_path / "web-threads.sqlite").open()
    async with Service(settings, costs=threads) as service:
        runner = web.AppRunner(web_app(service, threads))
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", port).start()
        try:
            yield f"http://127.0.0.1:{port}", service, threads
        finally:
            await runner.cleanup()
            await threads.close()


def form(question: str = FIRST, conversation: str | None = None, message: str | None = None, image=None):
    data = aiohttp.FormData(default_to_multipart=True)  # as a browser sends a FormData
    data.add_field("conversation", conversation or uuid.uuid4().hex)
    data.add_field("message", message or uuid.uuid4().hex)
    data.add_field("question", question)
    if image is not None:
        name, payload, mime = image
        data.add_field("image", payload, filename=name, content_type=mime)
    return data


async def post(base: str, data, headers=None) -> tuple[int, list[dict]]:
    import json

    async with aiohttp.ClientSession() as session:
        async with session.post(
            f"{base}/chat/ask", data=data, headers={"X-Requested-With": "pixelrag", **(headers or {})}
        ) as response:
            body = await response.text()
    lines = [json.loads(line) for line in body.splitlines() if line.strip()]
    return response.status, lines


def page_crop(service_index, page: int = 3) -> bytes:
    """A cut of a stored page image, as a person's screenshot of the drawing would be."""
    [jpeg] = sorted((service_index / "pages").glob("*.jpg"), key=lambda p: p.stat().st_size)[-1:]
    image = Image.open(jpeg).convert("RGB")
    w, h = image.size
    out = io.BytesIO()
    image.crop((w // 8, h // 8, w * 7 // 8, h // 2)).save(out, "PNG")
    return out.getvalue()


async def test_the_endpoint_answers_as_json_lines_and_refuses_what_it_must(chat):
    base, service, threads = chat
    status, lines = await post(base, form())
    assert status == 200
    kinds = [line["type"] for line in lines]
    assert kinds[0] == "step" and "pages" in kinds and kinds[-1] == "answer"
    assert kinds.index("pages") < kinds.index("answer")
    answer = lines[-1]
    assert "148" in answer["html"] and answer["citations"]
    assert all(c["view"].startswith("/view/") for c in answer["citations"])
    assert answer["citations"][0]["crop"].startswith("data:image/png;base64,")
    # the same question id again: answered once
    message = uuid.uuid4().hex
    assert (await post(base, form(message=message)))[0] == 200
    status, lines = await post(base, form(message=message))
    assert status == 409 and "answered already" in lines[0]["message"]
    # from another site, or without the page's header
    assert (await post(base, form(), {"Origin": "https://evil.example"}))[0] == 403
    async with aiohttp.ClientSession() as session:
        async with session.post(f"{base}/chat/ask", data=form()) as response:
            assert response.status == 403
    # nothing to ask, a PDF as a screenshot, a damaged image, too many characters
    for data, words in (
        (form(""), "Type a question"),
        (form("which page?", image=("a.pdf", b"%PDF-1.7\n", "application/pdf")), "only PNG, JPEG or WebP"),
        (form("which page?", image=("a.png", b"\x89PNG\r\n\x1a\nbroken", "image/png")), "a.png"),
        (form("x" * 4001), "longer than 4000"),
    ):
        status, lines = await post(base, data)
        assert status == 400 and words in lines[0]["message"], lines
    assert len(await threads.history(("web", "browser", "x" * 32, "x" * 32))) == 0


async def test_a_question_a_follow_up_and_a_screenshot_in_the_browser(chat, browser, tmp_path):  # noqa: F811
    base, service, threads = chat
    page, response, outside, console = await open_page(browser, base + "/", base)
    assert response.status == 200 and "script-src 'self'" in response.headers["content-security-policy"]
    await page.fill("#question", FIRST)
    await page.press("#question", "Enter")
    await page.wait_for_selector(".turn .question")  # shown at once, before the server answers
    await page.wait_for_selector(".turn .answer .markdown", timeout=60_000)
    first = page.locator(".turn").nth(0)
    assert "148" in await first.locator(".answer").text_content()
    assert await first.locator(".pages a").count() >= 1  # the found pages, shown before the answer
    assert await first.locator(".steps li.complete").count() >= 2
    view = await first.locator(".citation a").first.get_attribute("href")
    assert view.startswith("/view/")

    # A follow-up in the same conversation: the thread's history is used.
    await page.fill("#question", "How much does it weigh without water?")
    await page.press("#question", "Enter")
    await page.locator(".turn .answer .markdown").nth(1).wait_for(timeout=60_000)
    second = page.locator(".turn").nth(1)
    assert await second.locator(".citation").count() >= 1
    conversation = await page.evaluate("conversation")  # the page's id for this conversation
    assert len(await threads.history(("web", "browser", conversation, conversation))) == 2

    # A screenshot question: the cut's page is cited.
    shot = tmp_path / "shot.png"
    shot.write_bytes(page_crop(tmp_path / "index"))
    await page.set_input_files("#file", str(shot))
    await page.wait_for_selector("#shots img")
    await page.fill("#question", "Which part is this?")
    await page.press("#question", "Enter")
    await page.locator(".turn .answer .markdown").nth(2).wait_for(timeout=60_000)
    third = page.locator(".turn").nth(2)
    assert await third.locator(".question img").count() == 1
    assert await third.locator(".citation").count() >= 1

    # The citation opens the viewer.
    await page.goto(base + view)
    assert await page.locator("rect.mark").count() == 1
    assert outside == [] and not [line for line in console if "Content Security Policy" in line]


async def test_markup_in_a_question_is_shown_as_text_and_errors_are_visible(chat, browser):  # noqa: F811
    base, service, threads = chat
    page, _, outside, _ = await open_page(browser, base + "/", base)
    await page.fill("#question", '<img src=x onerror="window.pwned=1"> what is the warranty?')
    await page.press("#question", "Enter")
    await page.wait_for_selector(".turn .answer .markdown, .turn .error", timeout=60_000)
    assert "<img src=x" in await page.locator(".turn .question").text_content()
    assert await page.evaluate("window.pwned") is None
    # Nothing to ask: said at once, nothing sent.
    await page.press("#question", "Enter")
    assert "Type a question" in await page.locator("#form-error").text_content()
    # The server gone: the turn says so.
    await page.route("**/chat/ask", lambda route: route.abort())
    await page.fill("#question", "is it still there?")
    await page.press("#question", "Enter")
    await page.wait_for_selector(".turn:nth-child(2) .error")
    assert "cannot be reached" in await page.locator(".turn:nth-child(2) .error").text_content()
    assert outside == []
