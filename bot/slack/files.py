"""Files people attach in Slack: screenshots read as part of a question, PDFs fetched to be indexed.

Downloads use the bot token, follow redirects by hand (the token goes only to Slack's own hosts),
read the whole body in chunks and enforce the size cap while reading: a file's metadata may omit or
misstate its size.
"""

from __future__ import annotations

import logging
from urllib.parse import urlparse

import aiohttp
from yarl import URL

from core import (
    BadInput,
    PixelragError,
    QueryImage,
    attachment_kind,
    failure_reason,
    looks_like_pdf,
    megabytes,
    validate_query_image,
)

log = logging.getLogger("pixelrag.slack")

REDIRECTS = 5


class AttachmentError(BadInput):
    """An attached file that cannot be used; the message names it."""


def file_name(file: dict) -> str:
    return file.get("name") or file.get("title") or file.get("id") or "attachment"


def is_pdf(file: dict) -> bool:
    return (
        attachment_kind(file.get("mimetype"), file.get("name")) == "pdf"
        or (file.get("filetype") or "").lower() == "pdf"
    )


class SlackFiles:
    def __init__(self, token: str, timeout_s: float, max_image_bytes: int, max_pdf_bytes: int):
        self.token = token
        self.timeout_s = timeout_s
        self.max_image_bytes = max_image_bytes
        self.max_pdf_bytes = max_pdf_bytes

    async def screenshots(self, files: list[dict]) -> tuple[list[QueryImage], list[str]]:
        """Usable screenshots, and one message per attachment that could not be used."""
        images: list[QueryImage] = []
        problems: list[str] = []
        for f in files:
            name = file_name(f)
            try:
                if is_pdf(f):
                    raise AttachmentError(
                        f"{name}: a PDF is not read as a question. "
                        "To add it, mention me with “index this” on the message with the PDF."
                    )
                mime = (f.get("mimetype") or "").lower()
                if attachment_kind(mime, None) in (None, "pdf"):
                    raise AttachmentError(
                        f"{name}: {mime or 'this file type'} can't be used; attach a PNG, JPEG or WebP screenshot."
                    )
                data = await self.download(f, self.max_image_bytes)
                images.append(validate_query_image(QueryImage(data, mime, name), self.max_image_bytes))
            except PixelragError as exc:
                problems.append(str(exc))
            except Exception:
                log.exception("reading attachment %s failed", name)
                problems.append(f"{name}: the attachment could not be downloaded from Slack.")
        return images, problems

    async def pdf(self, file: dict) -> bytes:
        data = await self.download(file, self.max_pdf_bytes)
        if not looks_like_pdf(data):
            raise AttachmentError(f"{file_name(file)}: the file is not a PDF.")
        return data

    async def download(self, file: dict, max_bytes: int) -> bytes:
        name = file.get("name") or file.get("id") or "attachment"
        if file.get("file_access") == "check_file_info" or not (
            file.get("url_private_download") or file.get("url_private")
        ):
            raise AttachmentError(f"{name}: Slack did not share a download link for this file (a Slack Connect file?).")
        limit = f"the {megabytes(max_bytes)} limit"
        if (file.get("size") or 0) > max_bytes:
            raise AttachmentError(f"{name}: {megabytes(file['size'])} is over {limit}.")
        url = file.get("url_private_download") or file["url_private"]
        origin = urlparse(url).hostname
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=self.timeout_s)) as session:
                for _ in range(REDIRECTS):
                    host = urlparse(url).hostname or ""
                    own = host == origin or host.endswith(".slack.com")
                    headers = {"Authorization": f"Bearer {self.token}"} if own else {}
                    async with session.get(url, headers=headers, allow_redirects=False) as response:
                        if response.status in (301, 302, 303, 307, 308) and response.headers.get("Location"):
                            url = str(response.url.join(URL(response.headers["Location"])))
                            continue
                        if response.status != 200:
                            raise AttachmentError(f"{name}: Slack answered HTTP {response.status} when downloading it.")
                        ctype = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
                        if ctype == "text/html":
                            # Slack's answer to a token without files:read: a 200 with its sign-in page.
                            raise AttachmentError(
                                f"{name}: Slack sent its sign-in page instead of the file, so I can't read "
                                "attachments. "
                                "The app needs the files:read scope: an admin should add it and reinstall the app."
                            )
                        if (size := response.content_length or 0) > max_bytes:
                            raise AttachmentError(f"{name}: {megabytes(size)} is over {limit}.")
                        data = bytearray()
                        async for chunk in response.content.iter_chunked(1 << 16):
                            data += chunk
                            if len(data) > max_bytes:
                                raise AttachmentError(f"{name}: it is over {limit}.")
                        return bytes(data)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise AttachmentError(
                f"{name}: the download from Slack failed ({failure_reason(exc)}); try attaching it again."
            ) from exc
        raise AttachmentError(f"{name}: too many redirects while downloading it.")
