"""What Discord checks in a message it is asked to create or edit, for the fake (tests/fakes/discord.py).

Components V2 (the IS_COMPONENTS_V2 flag, 1 << 15): no `content`, embeds, stickers or poll beside
it; at most 40 components counting nested ones; at most 4,000 characters across its text displays;
1–10 items per media gallery; "attachment://" media must name a file of the message; the flag can be
set on an edit but never removed. Classic messages: 2,000 characters of content, 10 embeds of 6,000
characters together (titles, descriptions, fields, footers and authors; each part within its own
limit), up to 5 action rows. Both: 10 files, action rows of 1–5 buttons with unique
custom_ids of 1–100 characters and labels of up to 80; a link button (style 5) has a URL of at most 512
characters and no custom_id; URLs are absolute http(s). A refusal is Discord's 400 with its error code
(50035 Invalid Form Body, 50006 empty message).
"""

from __future__ import annotations

import copy
from urllib.parse import urlsplit

V2_FLAG = 1 << 15
MAX_COMPONENTS = 40
MAX_TEXT = 4000
MAX_CONTENT = 2000
MAX_EMBEDS, MAX_EMBED_CHARS = 10, 6000
MAX_FILES = 10
GALLERY_ITEMS = range(1, 11)
TOP_V2 = {1, 9, 10, 12, 13, 14, 17}  # action row, section, text display, gallery, file, separator, container
IN_CONTAINER = {1, 9, 10, 12, 13, 14}


class Refused(Exception):
    def __init__(self, code: int, message: str, errors: dict | None = None, status: int = 400):
        super().__init__(message)
        self.code, self.message, self.errors, self.status = code, message, errors, status


def _form(field: str, code: str, message: str) -> Refused:
    return Refused(50035, "Invalid Form Body", {field: {"_errors": [{"code": code, "message": message}]}})


def walk(components: list[dict]):
    for c in components:
        yield c
        yield from walk(c.get("components") or [])
        if isinstance(c.get("accessory"), dict):
            yield c["accessory"]


def _media_url(c: dict) -> list[str]:
    if c.get("type") == 12:
        return [(item.get("media") or {}).get("url", "") for item in c.get("items") or []]
    if c.get("type") in (11, 13):  # thumbnail, file
        return [(c.get("media") or c.get("file") or {}).get("url", "")]
    return []


def _check_link(url: object, where: str, limit: int, link_base: str | None) -> None:
    """A link button's or an embed's URL: absolute http(s) within its limit; and here, one to the page
    viewer the test set up, when it set one."""
    parts = urlsplit(url) if isinstance(url, str) else None
    if parts is None or parts.scheme not in ("http", "https") or not parts.netloc or len(url) > limit:  # type: ignore[arg-type]
        raise _form(where, "URL_TYPE_INVALID_URL", "Not a well formed URL.")
    if link_base is not None and not url.startswith(f"{link_base}/view/"):  # type: ignore[union-attr]
        raise _form(where, "URL_TYPE_INVALID_URL", f"{url} is not a page viewer link of {link_base}.")


def _check_rows(components: list[dict], link_base: str | None = None) -> None:
    seen: set[str] = set()
    for c in walk(components):
        if c.get("type") == 1:
            buttons = c.get("components") or []
            if not 1 <= len(buttons) <= 5:
                raise _form("components", "BASE_TYPE_BAD_LENGTH", "An action row holds 1 to 5 buttons.")
        if c.get("type") == 2:
            custom_id = c.get("custom_id")
            if c.get("style") == 5:  # a link: a URL of at most 512 characters, and no custom_id
                if custom_id is not None:
                    raise _form("components", "BUTTON_COMPONENT_LINK_HAS_CUSTOM_ID", "A link button has no custom_id.")
                _check_link(c.get("url"), "components", 512, link_base)
            else:  # every button but a link has a custom_id
                if not custom_id or len(custom_id) > 100:
                    raise _form("components", "BASE_TYPE_BAD_LENGTH", "custom_id must be 1 to 100 characters.")
                if custom_id in seen:
                    raise _form("components", "COMPONENT_CUSTOM_ID_DUPLICATED", "custom_ids must be unique.")
                seen.add(custom_id)
            if len(c.get("label") or "") > 80:
                raise _form("components", "BASE_TYPE_MAX_LENGTH", "A button label is at most 80 characters.")


def check_message(payload: dict, filenames: set[str], n_files: int, link_base: str | None = None) -> None:
    """Raise Refused for what Discord would refuse; `filenames` are the files the message will have."""
    components = payload.get("components") or []
    if n_files > MAX_FILES:
        raise _form("files", "BASE_TYPE_MAX_LENGTH", "At most 10 files per message.")
    _check_rows(components, link_base)
    if (payload.get("flags") or 0) & V2_FLAG:
        for legacy in ("content", "embeds", "sticker_ids", "poll"):
            if payload.get(legacy):
                raise _form(
                    legacy,
                    "MESSAGE_CANNOT_USE_LEGACY_FIELDS_WITH_COMPONENTS_V2",
                    "The 'content', 'embeds', 'sticker_ids' and 'poll' fields cannot be used with Components V2.",
                )
        if not components:
            raise Refused(50006, "Cannot send an empty message")
        every = list(walk(components))
        if len(every) > MAX_COMPONENTS:
            raise _form("components", "COMPONENT_LAYOUT_TOO_MANY", f"At most {MAX_COMPONENTS} components.")
        for c in components:
            if c.get("type") not in TOP_V2:
                raise _form("components", "UNION_TYPE_CHOICES", f"Component type {c.get('type')} is not allowed here.")
            if c.get("type") == 17 and any(x.get("type") not in IN_CONTAINER for x in c.get("components") or []):
                raise _form("components", "UNION_TYPE_CHOICES", "That component cannot be inside a container.")
        text = sum(len(c.get("content") or "") for c in every if c.get("type") == 10)
        if text > MAX_TEXT:
            raise _form(
                "components",
                "COMPONENT_TEXT_TOO_LONG",
                f"{text} characters of text; at most {MAX_TEXT} across a message's components.",
            )
        for c in every:
            if c.get("type") == 12 and len(c.get("items") or []) not in GALLERY_ITEMS:
                raise _form("components", "BASE_TYPE_BAD_LENGTH", "A media gallery holds 1 to 10 items.")
            for url in _media_url(c):
                if url.startswith("attachment://") and url.removeprefix("attachment://") not in filenames:
                    raise _form(
                        "components",
                        "UNFURLED_MEDIA_ITEM_ATTACHMENT_NOT_FOUND",
                        f"{url} does not name a file of this message.",
                    )
        return
    if any(c.get("type") != 1 for c in components) or len(components) > 5:
        raise _form("components", "UNION_TYPE_CHOICES", "Without Components V2, only up to 5 action rows.")
    content, embeds = payload.get("content") or "", payload.get("embeds") or []
    if len(content) > MAX_CONTENT:
        raise _form("content", "BASE_TYPE_MAX_LENGTH", f"Must be {MAX_CONTENT} or fewer in length.")
    if len(embeds) > MAX_EMBEDS:
        raise _form("embeds", "BASE_TYPE_MAX_LENGTH", "At most 10 embeds.")
    for embed in embeds:
        _check_embed(embed)
        if embed.get("url") is not None:
            _check_link(embed["url"], "embeds.url", 2048, link_base)
    if sum(embed_chars(e) for e in embeds) > MAX_EMBED_CHARS:
        raise _form("embeds", "MAX_EMBED_SIZE_EXCEEDED", "Embed size exceeds maximum size of 6000.")
    if not (content or embeds or n_files or components or payload.get("sticker_ids") or payload.get("poll")):
        raise Refused(50006, "Cannot send an empty message")


# Discord's limits of one embed's parts (developer docs, "Embed Limits").
EMBED_PARTS = {"title": 256, "description": 4096}
MAX_FIELDS, FIELD_NAME, FIELD_VALUE, FOOTER, AUTHOR = 25, 256, 1024, 2048, 256


def embed_chars(embed: dict) -> int:
    """What counts towards the 6,000 characters of a message's embeds: title, description, field
    names and values, footer text and author name."""
    fields = embed.get("fields") or []
    return (
        len(str(embed.get("title") or ""))
        + len(str(embed.get("description") or ""))
        + sum(len(str(f.get("name") or "")) + len(str(f.get("value") or "")) for f in fields)
        + len(str((embed.get("footer") or {}).get("text") or ""))
        + len(str((embed.get("author") or {}).get("name") or ""))
    )


def _check_embed(embed: dict) -> None:
    for part, limit in EMBED_PARTS.items():
        if len(str(embed.get(part) or "")) > limit:
            raise _form(f"embeds.{part}", "BASE_TYPE_MAX_LENGTH", f"Must be {limit} or fewer in length.")
    fields = embed.get("fields") or []
    if len(fields) > MAX_FIELDS or any(
        len(str(f.get("name") or "")) > FIELD_NAME or len(str(f.get("value") or "")) > FIELD_VALUE for f in fields
    ):
        raise _form("embeds.fields", "BASE_TYPE_MAX_LENGTH", "At most 25 fields, names of 256 and values of 1024.")
    if (
        len(str((embed.get("footer") or {}).get("text") or "")) > FOOTER
        or len(str((embed.get("author") or {}).get("name") or "")) > AUTHOR
    ):
        raise _form("embeds", "BASE_TYPE_MAX_LENGTH", "A footer holds 2048 characters, an author name 256.")


def check_edit(old: dict, payload: dict, files: dict, link_base: str | None = None) -> dict:
    """The message after the edit, checked; Refused when Discord would refuse the edit."""
    was_v2 = bool(old["flags"] & V2_FLAG)
    if "flags" in payload and payload["flags"] is not None and was_v2 and not payload["flags"] & V2_FLAG:
        raise _form(
            "flags",
            "MESSAGE_FLAGS_CANNOT_REMOVE_COMPONENTS_V2",
            "The Components V2 flag cannot be removed from a message.",
        )
    merged = copy.deepcopy(old)
    for key in ("content", "embeds", "components"):
        if key in payload:
            merged[key] = payload[key] if payload[key] is not None else ("" if key == "content" else [])
    if payload.get("flags") is not None:
        merged["flags"] = payload["flags"] | (old["flags"] & V2_FLAG)
    if "attachments" in payload:
        kept = {str(a.get("id")) for a in payload["attachments"]}
        names = {a["filename"] for a in old["attachments"] if a["id"] in kept}
        count = len(names) + len(files)
    else:
        names, count = {a["filename"] for a in old["attachments"]}, len(old["attachments"])
    names |= {name for name, _ in files.values()}
    check_message(merged, names, count, link_base)
    return merged
