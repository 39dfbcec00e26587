"""Attachments: sorted into screenshots, PDFs and files that can't be used, and downloaded within
the configured size limits, every failure turned into a message that names the file."""

from __future__ import annotations

import asyncio
from pathlib import Path

import aiohttp
import discord

from core import BadInput, QueryImage, Settings, attachment_kind, failure_reason, megabytes, validate_query_image


def kind(att: discord.Attachment) -> str | None:
    """'pdf', an image MIME type, or None when the file can't be used."""
    return attachment_kind(att.content_type, att.filename)


class Attachments:
    def __init__(self, settings: Settings):
        self.settings = settings

    async def sort(self, attachments) -> tuple[list[QueryImage], list[discord.Attachment], list[str]]:
        """Screenshots are read and checked now; PDFs wait for an index request; the rest is named."""
        images: list[QueryImage] = []
        pdfs: list[discord.Attachment] = []
        problems: list[str] = []
        for att in attachments or ():
            mime = kind(att)
            if mime == "pdf":
                pdfs.append(att)
            elif mime is None:
                what = att.content_type or Path(att.filename).suffix or "unknown"
                problems.append(
                    f"{att.filename}: {what} files can't be used; attach PNG, JPEG or WebP "
                    "screenshots, or a PDF with “index this”."
                )
            else:
                try:
                    images.append(await self.read_image(att, mime))
                except BadInput as exc:
                    problems.append(str(exc))
        return images, pdfs, problems

    async def read_image(self, att: discord.Attachment, mime: str) -> QueryImage:
        data = await self.download(att, self.settings.max_image_bytes, " for screenshots")
        return validate_query_image(QueryImage(data, mime, att.filename), self.settings.max_image_bytes)

    async def download(self, att: discord.Attachment, limit: int, limit_note: str = "") -> bytes:
        """An attachment's bytes, refused before downloading when over `limit`; every failure (an
        expired link, a dropped connection, a timeout) becomes a message that names the file."""
        over = f"over the {megabytes(limit)} limit{limit_note}"
        if att.size > limit:
            raise BadInput(f"{att.filename}: {megabytes(att.size)} is {over}.")
        try:
            async with asyncio.timeout(self.settings.request_timeout_s):
                data = await att.read()
        except discord.NotFound as exc:
            raise BadInput(
                f"{att.filename}: Discord no longer has this file (the message was deleted or "
                "its link expired); attach it again."
            ) from exc
        except (discord.HTTPException, aiohttp.ClientError, TimeoutError) as exc:
            raise BadInput(
                f"{att.filename}: could not be downloaded from Discord ({failure_reason(exc)}); try attaching it again."
            ) from exc
        if len(data) > limit:  # the size Discord reported was wrong
            raise BadInput(f"{att.filename}: {megabytes(len(data))} is {over}.")
        return data
