"""Bad documents, URLs and screenshots get clear messages and lose nothing already indexed."""

from __future__ import annotations

import asyncio
import io

import pymupdf
import pytest
from aiohttp import web
from PIL import Image

from core.answering.query_images import validate_query_image
from core.errors import BadInput
from core.indexing.sources import download
from core.records import QueryImage, Turn
from core.service import Service
from tests.conftest import text_pdf


@pytest.fixture
async def indexed(settings, tmp_path) -> Service:
    service = Service(settings)
    await service.index([str(text_pdf(tmp_path / "good.pdf", ["The relay switches 10 A at 250 V AC."]))])
    return service


async def assert_still_answers(service: Service) -> None:
    answer = await service.answer(Turn("relay switching current"), retrieve_only=True)
    assert answer.hits and answer.hits[0].title == "good.pdf"


def encrypted_pdf(path):
    doc = pymupdf.open()
    doc.new_page().insert_text((50, 50), "secret")
    doc.save(path, encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="o", user_pw="u")
    return path


def many_pages_pdf(path, n):
    doc = pymupdf.open()
    for _ in range(n):
        doc.new_page(width=100, height=100)
    doc.save(path)
    return path


ZERO_PAGES = (
    b"%PDF-1.4\n1 0 obj<</Type/Catalog/Pages 2 0 R>>endobj\n"
    b"2 0 obj<</Type/Pages/Kids[]/Count 0>>endobj\ntrailer<</Root 1 0 R>>\n%%EOF\n"
)


@pytest.mark.parametrize(
    "name, make, message",
    [
        ("notes.pdf", lambda p: p.write_bytes(b"just some text, not a PDF"), "not a PDF"),
        ("locked.pdf", encrypted_pdf, "encrypted"),
        ("broken.pdf", lambda p: p.write_bytes(b"%PDF-1.7\n" + bytes(range(256)) * 40), "damaged|no pages"),
        ("empty.pdf", lambda p: p.write_bytes(ZERO_PAGES), "no pages|damaged"),
        ("long.pdf", lambda p: many_pages_pdf(p, 2000), "2000 pages is more than the limit of 1000"),
    ],
)
async def test_bad_pdf_is_refused_and_the_index_survives(indexed, tmp_path, name, make, message):
    path = tmp_path / name
    make(path)
    before = indexed.pages.store.active_name()
    with pytest.raises(BadInput, match=message):
        await indexed.index([str(path)])
    assert indexed.pages.store.active_name() == before
    await assert_still_answers(indexed)


async def test_missing_file_and_duplicates_are_reported(indexed, tmp_path):
    with pytest.raises(BadInput, match="no such file"):
        await indexed.index([str(tmp_path / "nope.pdf")])
    # An unchanged document is up to date: nothing to do, no new snapshot, not a failure.
    before = indexed.pages.store.active_name()
    report = await indexed.index([str(tmp_path / "good.pdf")])
    assert [d.file_name for d in report.unchanged] == ["good.pdf"] and not report.documents and not report.skipped
    assert indexed.pages.store.active_name() == before
    other = text_pdf(tmp_path / "other.pdf", ["Coil voltage 24 V DC."])
    report = await indexed.index([str(other), str(other)])
    assert [d.file_name for d in report.documents] == ["other.pdf"] and not report.skipped  # indexed once
    assert sorted(d.file_name for d in await indexed.documents("shared")) == ["good.pdf", "other.pdf"]
    (tmp_path / "elsewhere").mkdir()
    namesake = text_pdf(tmp_path / "elsewhere" / "good.pdf", ["A different product that is also called good.pdf."])
    await indexed.index([str(namesake)])  # same file name, different place: both are kept
    assert sorted(d.file_name for d in await indexed.documents("shared")) == ["good.pdf", "good.pdf", "other.pdf"]


async def test_a_good_pdf_among_bad_ones_is_indexed_and_the_bad_ones_named(indexed, tmp_path):
    bad = tmp_path / "bad.pdf"
    bad.write_bytes(b"<html>login</html>")
    good = text_pdf(tmp_path / "fine.pdf", ["Ambient temperature range -20 to 60 C."])
    report = await indexed.index([str(bad), str(good)])
    assert [d.file_name for d in report.documents] == ["fine.pdf"]
    assert any("bad.pdf" in s and "not a PDF" in s for s in report.skipped)


async def test_a_chat_can_index_urls_only_never_a_file_of_the_bots_machine(indexed, tmp_path):
    # Before: Discord's /index url:/srv/secret/plan.pdf indexed that file of the host into the server.
    secret = text_pdf(tmp_path / "plan.pdf", ["Internal plan: launch on 3 March."])
    with pytest.raises(BadInput, match="only http and https URLs can be indexed from a chat"):
        await indexed.index([str(secret)], scope="discord:42")
    assert [d.file_name for d in await indexed.documents("discord:42")] == ["good.pdf"]  # the shared one only
    report = await indexed.index([str(secret)])  # the operator's command line may
    assert [d.file_name for d in report.documents] == ["plan.pdf"]


@pytest.fixture
async def pdf_server(tmp_path):
    pdf = text_pdf(tmp_path / "remote.pdf", ["Remote datasheet: the sensor range is 0 to 500 mm."]).read_bytes()
    routes = web.RouteTableDef()

    @routes.get("/doc.pdf")
    async def doc(request):
        return web.Response(body=pdf, content_type="application/pdf")

    @routes.get("/login")
    async def login(request):
        return web.Response(text="<html>please sign in</html>", content_type="text/html")

    @routes.get("/fake.pdf")
    async def fake(request):
        return web.Response(body=b"GIF89a....", content_type="application/pdf")

    @routes.get("/slow.pdf")
    async def slow(request):  # one byte every 0.2 s: no single read ever times out
        response = web.StreamResponse(headers={"Content-Type": "application/pdf"})
        await response.prepare(request)
        try:
            for byte in pdf:
                await response.write(bytes([byte]))
                await asyncio.sleep(0.2)
        except ConnectionError:
            pass
        return response

    @routes.get("/huge.pdf")
    async def huge(request):
        response = web.StreamResponse(headers={"Content-Type": "application/pdf"})
        await response.prepare(request)
        for _ in range(64):
            await response.write(b"%PDF" + b"0" * 65536)
        return response

    app = web.Application()
    app.add_routes(routes)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    await runner.cleanup()


async def test_urls_on_private_networks_are_refused_by_default(indexed, pdf_server):
    with pytest.raises(BadInput, match="private or local address"):
        await indexed.index([f"{pdf_server}/doc.pdf"])
    with pytest.raises(BadInput, match="only http and https"):
        await indexed.index(["ftp://example.org/doc.pdf"])


async def test_url_download_checks_type_magic_and_size(pdf_server, settings, tmp_path):
    settings = settings.with_(allow_private_urls=True)  # the test server is on loopback
    indexed = Service(settings)
    report = await indexed.index([f"{pdf_server}/doc.pdf"])
    assert report.documents[0].file_name == "doc.pdf"
    assert report.documents[0].source == f"{pdf_server}/doc.pdf"
    answer = await indexed.answer(Turn("sensor range"), retrieve_only=True)
    assert answer.hits[0].title == "doc.pdf"

    for path, message in [("/login", "text/html, not a PDF"), ("/fake.pdf", "not a PDF"), ("/missing", "HTTP 404")]:
        with pytest.raises(BadInput, match=message):
            await download(pdf_server + path, settings)
    with pytest.raises(BadInput, match="limit"):
        await download(pdf_server + "/huge.pdf", settings.with_(max_pdf_bytes=1_000_000))


def png_bytes(size, mode="RGB", fmt="PNG") -> bytes:
    buf = io.BytesIO()
    Image.new(mode, size, "white").save(buf, fmt)
    return buf.getvalue()


def test_screenshot_validation():
    ok = validate_query_image(QueryImage(png_bytes((200, 100)), "", "a.png"), 5_000_000)
    assert ok.mime_type == "image/png"
    assert (
        validate_query_image(QueryImage(png_bytes((20, 10), fmt="WEBP"), "", "w.webp"), 5_000_000).mime_type
        == "image/webp"
    )
    with pytest.raises(BadInput, match="GIF images are not supported"):
        validate_query_image(QueryImage(png_bytes((20, 10), "P", "GIF"), "", "a.gif"), 5_000_000)
    with pytest.raises(BadInput, match="not a readable"):
        validate_query_image(QueryImage(b"not an image", "", "x.png"), 5_000_000)
    with pytest.raises(BadInput, match="too large to read"):  # a decompression bomb: tiny file, huge canvas
        validate_query_image(QueryImage(png_bytes((10_000, 10_000), "1"), "", "bomb.png"), 5_000_000)
    with pytest.raises(BadInput, match="40 MB is over the 5 MB limit"):
        validate_query_image(QueryImage(b"0" * 40_000_000, "", "big.png"), 5_000_000)
    for size in ((1, 60000), (60000, 1)):  # Before: rapidocr's ResizeImgError, the file not named
        with pytest.raises(BadInput, match=r"sliver\.png: .* is a sliver, not a screenshot"):
            validate_query_image(QueryImage(png_bytes(size), "", "sliver.png"), 5_000_000)


async def test_a_trickling_download_meets_its_total_deadline(pdf_server, settings):
    settings = settings.with_(allow_private_urls=True, download_timeout_s=1.0, request_timeout_s=5.0)
    with pytest.raises(BadInput, match="took longer than 1 s"):
        await download(pdf_server + "/slow.pdf", settings)


@pytest.fixture
async def stalling_server():
    """A raw HTTP server whose /trickle sends its headers a byte at a time, for ever, and whose /stall
    sends its headers and the first bytes of a PDF, then nothing."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        request = await reader.readline()
        try:
            if b"/trickle" in request:
                writer.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
                while True:
                    writer.write(b"a")
                    await writer.drain()
                    await asyncio.sleep(0.2)
            writer.write(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/pdf\r\nContent-Length: 100000\r\n\r\n%PDF-1.7\n"
            )
            await writer.drain()
            await asyncio.sleep(3600)
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    server.close()


@pytest.mark.parametrize("path", ["/trickle", "/stall"])
async def test_a_download_that_trickles_its_headers_or_stalls_meets_its_deadline(stalling_server, settings, path):
    # Before: /trickle ran on past 150 s with the deadline at 8 s (the deadline was checked between
    # body chunks only), and /stall ended after the 60 s read timeout.
    settings = settings.with_(allow_private_urls=True, download_timeout_s=1.0, request_timeout_s=60.0)
    with pytest.raises(BadInput, match="took longer than 1 s"):
        await asyncio.wait_for(download(stalling_server + path, settings), 30)


async def test_a_url_with_its_scheme_in_capitals_is_a_url(pdf_server, settings):
    source = await download(
        pdf_server.replace("http://", "HTTP://") + "/doc.pdf", settings.with_(allow_private_urls=True)
    )
    assert source.data.startswith(b"%PDF")


async def test_the_download_connects_to_the_address_that_was_checked(pdf_server, settings, monkeypatch):
    """DNS rebinding: the name resolves to an allowed address for the check, then elsewhere."""
    import socket
    from types import SimpleNamespace
    from urllib.parse import urlsplit

    import core.indexing.sources as documents

    port = urlsplit(pdf_server).port
    real = socket.getaddrinfo
    answers = iter(["127.0.0.1"] + ["10.255.255.1"] * 10)  # checked first, then "rebound"

    def resolve(host, *args, **kwargs):
        if host == "rebind.test":
            return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]
        return real(host, *args, **kwargs)

    class Public:  # the test server is on loopback: let the check take it for a public address
        def __init__(self, text):
            self.text, self.is_global = text, True

        def __str__(self):
            return self.text

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    monkeypatch.setattr(documents, "ipaddress", SimpleNamespace(ip_address=Public))
    settings = settings.with_(request_timeout_s=3.0)
    source = await download(f"http://rebind.test:{port}/doc.pdf", settings)
    assert source.data.startswith(b"%PDF") and source.origin == f"http://rebind.test:{port}/doc.pdf"


def test_credentials_in_an_address_are_hidden_when_shown_and_still_sent():
    from core.indexing.sources import hide_credentials, pinned

    shown = hide_credentials(
        "index https://u:p%40ss@files.example/a.pdf?X-Amz-Signature=abc&X-Amz-Credential=def&v=2 and "
        "http://host/b.pdf?api_key=k1"
    )
    assert shown == (
        "index https://***@files.example/a.pdf?X-Amz-Signature=***&X-Amz-Credential=***&v=2 and "
        "http://host/b.pdf?api_key=***"
    )
    assert hide_credentials("/srv/docs/key@2x.pdf") == "/srv/docs/key@2x.pdf"  # a path is left alone
    # Connecting to the checked address keeps the user and password the address gave.
    target, headers, _ = pinned("http://admin:hunter2@example.com:8080/x.pdf", "93.184.216.34")
    assert target == "http://admin:hunter2@93.184.216.34:8080/x.pdf" and headers == {"Host": "example.com:8080"}
