"""PDF intake: fetch and validate sources, render pages to JPEG, read the text layer's words."""

from __future__ import annotations

import asyncio
import functools
import hashlib
import io
import ipaddress
import json
import math
import os
import re
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import numpy as np
from PIL import Image

from ..config import Settings
from ..errors import BadInput, megabytes
from ..records import Document, Page, Word

PDF_MAGIC = b"%PDF-"
# Part of every page hash: bump it when word extraction (text layer or OCR) changes, so that
# incremental builds redo pages instead of reusing words read the old way.
WORDS_VERSION = 3
# The most pixels a page is rendered with (an A1 sheet at 200 dpi): a poster or a drawing of several
# metres would otherwise take gigabytes, and PyMuPDF refuses beyond 2^31 bytes. Bigger pages are
# rendered at the resolution that fits, and the build says so.
PAGE_PIXELS = 24_000_000


@dataclass(frozen=True)
class Source:
    """A PDF's bytes plus where they came from."""

    data: bytes
    name: str  # file name shown to people
    origin: str  # path or URL

    @functools.cached_property  # a build asks for it many times; the file can be 200 MB
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    def doc_id(self, scope: str) -> str:
        """Identity of this PDF within a tenant: the same file indexed by two workspaces is two
        documents (their pages still share vectors through the page hashes)."""
        return hashlib.sha256(f"{scope}\n{self.sha256}".encode()).hexdigest()[:16]


@dataclass(frozen=True)
class RenderedPage:
    page: Page  # words from the text layer only; OCR adds its own later
    jpeg: bytes
    needs_ocr: bool  # some ink on the page is not covered by visible text-layer words
    blank: bool = False  # one flat colour: nothing on it (or nothing left of it, in a damaged PDF)
    dpi: float = 0.0  # what it was rendered at: below the setting for a page beyond PAGE_PIXELS


# An address's user and password, and the values of query parameters named like a credential (an API
# key, a presigned link's signature): what an address may carry that must not be shown.
_USERINFO = re.compile(r"(?i)\b(https?://)[^/?#\s@]*@")
_SECRET_QUERY = re.compile(r"(?i)([?&][^=&#\s]*(?:token|key|sig|secret|pass|auth|cred|session)[^=&#\s]*=)[^&#\s]*")


def hide_credentials(text: str) -> str:
    """`text` (an address, or a message naming some) with the credentials in its http(s) addresses
    replaced by "***": what is shown to people and stored as a name. The origin kept for fetching
    again keeps them."""
    text = _USERINFO.sub(lambda m: m.group(1) + "***@", text)
    return _SECRET_QUERY.sub(lambda m: m.group(1) + "***", text) if "://" in text else text


def is_url(text: str) -> bool:
    return urlsplit(text).scheme.lower() in ("http", "https")  # "HTTP://…" is a URL too


async def read_source(path_or_url: str, settings: Settings) -> Source:
    if is_url(path_or_url):
        return await download(path_or_url, settings)
    if "://" in path_or_url:
        raise BadInput(f"{hide_credentials(path_or_url)}: only http and https URLs can be indexed.")
    return await asyncio.to_thread(read_file, Path(path_or_url), settings)


def read_file(path: Path, settings: Settings) -> Source:
    shown = readable_path(path)
    try:
        if path.is_dir():
            raise BadInput(f"{shown}: a folder, not a PDF file.")
        if not path.is_file():
            raise BadInput(f"{shown}: no such file.")
        size = path.stat().st_size
        if size > settings.max_pdf_bytes:
            raise BadInput(f"{shown}: {size / 1e6:.0f} MB is over the {settings.max_pdf_bytes / 1e6:.0f} MB limit.")
        data = path.read_bytes()
    except OSError as exc:  # a name too long for the file system, a file that cannot be read
        raise BadInput(f"{shown}: {exc.strerror or exc}.") from None
    # Stored and shown as text: a name that is not UTF-8 keeps its other characters.
    return Source(data, readable_path(Path(path.name)), readable_path(path.resolve()))


def readable_path(path: Path) -> str:
    """A path as text that can be stored and shown: bytes of a name that are not UTF-8 (which Python keeps
    as lone surrogates, refused by JSON and PostgreSQL) become U+FFFD."""
    return str(path).encode("utf-8", "surrogateescape").decode("utf-8", "replace")


def recorded_path(pdf: Path) -> Path:
    """Where the documents a stored PDF was indexed as are recorded (title, tenant, origin): beside it,
    in the index's sources/, and beside it again when `repair` moves it to recovered/. Indexing a PDF
    that has a record restores those documents."""
    return pdf.with_suffix(".documents.json")


def read_recorded(path: Path) -> list[Document]:
    """The documents recorded there; none when there is no record or it cannot be read."""
    try:
        return [Document(**d) for d in json.loads(path.read_text(encoding="utf-8"))]
    except (OSError, ValueError, TypeError):
        return []


def check_public_url(url: str, settings: Settings) -> str | None:
    """The address to connect to for `url`, checked to be public; None when private URLs are allowed
    (then the HTTP client resolves the name itself). A chat user must not be able to make the bot
    fetch internal services, and connecting to the checked address, not resolving the name a second
    time, keeps a DNS answer that changes between the check and the connection (rebinding) out."""
    parts, shown = urlsplit(url), hide_credentials(url)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise BadInput(f"{shown}: only http and https URLs can be indexed.")
    if settings.allow_private_urls:
        return None
    try:
        infos = socket.getaddrinfo(
            parts.hostname, parts.port or (443 if parts.scheme.lower() == "https" else 80), type=socket.SOCK_STREAM
        )
    except OSError:
        raise BadInput(f"{shown}: the host {parts.hostname} could not be resolved.") from None
    addresses = [ipaddress.ip_address(info[4][0]) for info in infos]
    if not addresses or any(not a.is_global for a in addresses):
        raise BadInput(
            f"{shown}: {parts.hostname} is a private or local address; such URLs are not fetched "
            "(set PIXELRAG_ALLOW_PRIVATE_URLS=1 to allow them)."
        )
    return str(addresses[0])


def pinned(url: str, address: str | None) -> tuple[str, dict, dict]:
    """(URL to request, headers, httpx extensions) that reach `address` while naming the host: the
    Host header for HTTP, and SNI plus certificate checking against the host name for HTTPS."""
    if address is None:
        return url, {}, {}
    parts = urlsplit(url)
    host = f"[{address}]" if ":" in address else address
    userinfo = parts.netloc.rpartition("@")[0]  # a user and password in the address are still sent
    netloc = (f"{userinfo}@" if userinfo else "") + host + (f":{parts.port}" if parts.port else "")
    target = parts._replace(netloc=netloc).geturl()
    extensions = {"sni_hostname": parts.hostname} if parts.scheme.lower() == "https" else {}
    return target, {"Host": parts.netloc.rsplit("@", 1)[-1]}, extensions


async def download(url: str, settings: Settings) -> Source:
    """Stream a PDF from a URL with a size cap and one deadline for all of it (a server that trickles
    its headers or stalls after them included: per-read timeouts never fire while bytes keep coming);
    the type and the %PDF magic are checked, and every redirect hop is checked like the first URL."""
    source, _ = await download_if_changed(url, settings, {})
    assert source is not None  # nothing was asked conditionally
    return source


async def download_if_changed(url: str, settings: Settings, known: dict[str, str]) -> tuple[Source | None, dict]:
    """As download(), asking the server only for a changed PDF when `known` holds the validators of the
    last download ({"etag", "last_modified"}): (None, known) when it answers 304 Not Modified, else
    (the PDF, its validators)."""
    received = [0]  # bytes so far, for the message when the deadline passes
    shown = hide_credentials(url)
    conditions = {}
    if known.get("etag"):
        conditions["If-None-Match"] = known["etag"]
    if known.get("last_modified"):
        conditions["If-Modified-Since"] = known["last_modified"]
    try:
        async with asyncio.timeout(settings.download_timeout_s):
            data, validators = await _fetch(url, settings, received, conditions)
    except TimeoutError:
        raise BadInput(
            f"{shown}: the download took longer than {settings.download_timeout_s:g} s "
            f"({megabytes(received[0])} so far); the server is too slow."
        ) from None
    if data is None:
        return None, known
    if not data.startswith(PDF_MAGIC):
        raise BadInput(f"{shown}: the download is not a PDF (it does not start with %PDF).")
    # The file name is the path's last part: never the host or the user and password before it.
    return Source(data, urlsplit(url).path.rstrip("/").rsplit("/", 1)[-1] or "document.pdf", url), validators


@functools.cache
def _tls_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """httpx's default TLS context, made once (for the CA settings of the environment): loading the CA
    bundle for every download was most of the work of a watched address's unchanged check."""
    return httpx.create_ssl_context()


async def _fetch(
    url: str, settings: Settings, received: list[int], conditions: dict[str, str]
) -> tuple[bytes | None, dict[str, str]]:
    """(the body, or None for 304 Not Modified; the response's validators: etag, last_modified)."""
    limit, shown = megabytes(settings.max_pdf_bytes), hide_credentials(url)
    chunks: list[bytes] = []
    tls = _tls_context(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    async with httpx.AsyncClient(timeout=settings.request_timeout_s, verify=tls) as client:
        try:
            current = url
            for _ in range(6):  # follow redirects by hand so every hop is checked
                address = await asyncio.to_thread(check_public_url, current, settings)
                target, headers, extensions = pinned(current, address)
                async with client.stream(
                    "GET", target, headers=headers | conditions, extensions=extensions
                ) as response:
                    if response.is_redirect and response.headers.get("location"):
                        current = str(httpx.URL(current).join(response.headers["location"]))
                        continue
                    validators = {
                        "etag": response.headers.get("etag", ""),
                        "last_modified": response.headers.get("last-modified", ""),
                    }
                    if response.status_code == 304 and conditions:
                        return None, validators
                    if response.status_code != 200:
                        raise BadInput(f"{shown}: the server answered HTTP {response.status_code}.")
                    ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
                    if ctype and ctype not in ("application/pdf", "application/octet-stream", "binary/octet-stream"):
                        raise BadInput(f"{shown}: that is {ctype}, not a PDF.")
                    declared = int(response.headers.get("content-length") or 0)
                    if declared > settings.max_pdf_bytes:
                        raise BadInput(f"{shown}: {megabytes(declared)} is over the {limit} limit.")
                    async for chunk in response.aiter_bytes():
                        received[0] += len(chunk)
                        if received[0] > settings.max_pdf_bytes:
                            raise BadInput(f"{shown}: the download passed the {limit} limit.")
                        chunks.append(chunk)
                    return b"".join(chunks), validators
            raise BadInput(f"{shown}: too many redirects.")
        except httpx.HTTPError as exc:
            raise BadInput(f"{shown}: could not download it ({type(exc).__name__}).") from exc


def looks_like_pdf(data: bytes) -> bool:
    """The %PDF header near the start (some writers put a few bytes before it)."""
    return PDF_MAGIC in data[:4096].lstrip()[:1024]  # a slice first: the file can be 200 MB


def open_pdf(source: Source, settings: Settings):
    """Open and validate; raises BadInput with a message a person understands."""
    import pymupdf

    if not looks_like_pdf(source.data):
        raise BadInput(f"{source.name}: not a PDF.")
    try:
        doc = pymupdf.open(stream=source.data, filetype="pdf")
    except Exception as exc:  # PyMuPDF raises several types for damaged files
        raise BadInput(f"{source.name}: the PDF is damaged and cannot be opened ({exc}).") from exc
    if doc.needs_pass or doc.is_encrypted:
        doc.close()
        raise BadInput(f"{source.name}: the PDF is encrypted; upload a copy without a password.")
    if doc.page_count == 0:
        repaired = doc.is_repaired
        doc.close()
        if repaired:
            raise BadInput(
                f"{source.name}: the PDF is damaged (perhaps cut short in a download): no page could be "
                "read. Get the complete file again."
            )
        raise BadInput(f"{source.name}: the PDF has no pages.")
    if doc.page_count > settings.max_pages:
        count = doc.page_count
        doc.close()
        raise BadInput(f"{source.name}: {count} pages is more than the limit of {settings.max_pages} pages.")
    return doc


def document_title(doc, source: Source) -> str:
    title = (doc.metadata or {}).get("title", "").strip()
    if title and title.lower() not in ("untitled", "new output", "microsoft word"):
        return title
    return source.name


def invisible_rects(page) -> list[tuple[float, float, float, float]]:
    """Text drawn with render mode 3 (invisible): hidden designators, old OCR layers."""
    return [tuple(span["bbox"]) for span in page.get_texttrace() if span.get("type") == 3]


def text_words(page) -> list[Word]:
    """The text layer's visible words, normalized boxes, grouped into lines."""
    width, height = page.rect.width, page.rect.height
    hidden = invisible_rects(page)
    words: list[Word] = []
    line_ids: dict[tuple[int, int], int] = {}
    for x0, y0, x1, y1, text, block, line, _ in page.get_text("words", sort=True):
        if any(_mostly_overlap((x0, y0, x1, y1), h) for h in hidden):
            continue
        lid = line_ids.setdefault((block, line), len(line_ids))
        box = (max(0.0, x0 / width), max(0.0, y0 / height), min(1.0, x1 / width), min(1.0, y1 / height))
        words.append(Word(text, box, lid, "text"))
    return words


def _mostly_overlap(a, b) -> bool:
    """Half of the smaller box lies inside the other (span boxes are tighter than word boxes)."""
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    if w <= 0 or h <= 0:
        return False
    smaller = min((a[2] - a[0]) * (a[3] - a[1]), (b[2] - b[0]) * (b[3] - b[1]))
    return w * h >= 0.5 * max(smaller, 1e-6)


def page_dpi(width_pt: float, height_pt: float, dpi: float) -> float:
    """`dpi`, or less for a page that would have more than PAGE_PIXELS at it (checked before rendering;
    a little less still, as a pixmap's sides are rounded up)."""
    pixels = (width_pt / 72 * dpi) * (height_pt / 72 * dpi)
    return dpi if pixels <= PAGE_PIXELS else dpi * math.sqrt(PAGE_PIXELS / pixels) * 0.999


def render_page(doc, index: int, doc_id: str, settings: Settings) -> RenderedPage:
    import pymupdf

    page = doc[index]
    dpi = page_dpi(page.rect.width, page.rect.height, settings.render_dpi)
    pix = page.get_pixmap(matrix=pymupdf.Matrix(dpi / 72, dpi / 72))
    # The hash covers the pixels and the render settings: equal hashes mean equal page images.
    digest = hashlib.sha256(pix.samples_mv)
    digest.update(f"{WORDS_VERSION}:{settings.render_dpi}:{settings.jpeg_quality}:{pix.w}x{pix.h}".encode())
    jpeg = _jpeg(pix, settings.jpeg_quality)
    words = text_words(page)
    record = Page(doc_id, index + 1, digest.hexdigest(), page.rect.width, page.rect.height, tuple(words))
    blank = not words and _one_colour(pix)
    return RenderedPage(record, jpeg, needs_ocr=not blank and has_uncovered_ink(page, words), blank=blank, dpi=dpi)


def _one_colour(pix) -> bool:
    """Whether every pixel is the same: a blank page. PyMuPDF's Pixmap.is_unicolor takes seconds on a page."""
    rows = np.frombuffer(pix.samples_mv, dtype=np.uint8).reshape(pix.h, pix.stride)[:, : pix.w * pix.n]
    pixels = rows.reshape(-1, pix.n)
    return bool((pixels == pixels[0]).all())


def _jpeg(pix, quality: int) -> bytes:
    """The page as JPEG: Pillow's libjpeg-turbo encodes a page several times faster than MuPDF's own writer.
    Colour is kept at full resolution, as MuPDF keeps it: halved (Pillow's default), thin coloured lines
    and labels blur, and OCR of drawings read from the image lost answers."""
    image = Image.frombuffer("RGB", (pix.w, pix.h), pix.samples_mv, "raw", "RGB", pix.stride, 1)
    out = io.BytesIO()
    image.save(out, format="JPEG", quality=quality, subsampling=0)
    return out.getvalue()


def page_pixels(jpeg: bytes, dpi: float, at_dpi: float) -> Image.Image:
    """A page's image (`jpeg`, drawn at `dpi`) at `at_dpi` for OCR, never enlarged: enlarging adds no
    detail, only memory. OCR reads the picture every other reader sees; drawn afresh at the lower
    resolution, thin strokes come out fainter and the retrieval and reading figures lost."""
    image = Image.open(io.BytesIO(jpeg)).convert("RGB")
    scale = min(1.0, at_dpi / dpi)
    size = (max(1, int(image.width * scale)), max(1, int(image.height * scale)))
    return image if image.size == size else image.resize(size, Image.Resampling.LANCZOS)


def has_uncovered_ink(page, words: list[Word]) -> bool:
    """True when the page shows images or vector drawings, or has no visible text at all."""
    if not words:
        return True
    if page.get_images(full=False):
        return True
    # Many small vector paths usually mean a drawing whose labels may be outlines, not text.
    return len(page.get_drawings()) > 40
