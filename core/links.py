"""Links to a cited page: capabilities signed with a secret pixelrag keeps.

A link names the document by its content hash and its collection, the page, the evidence's box and
its kind, and an expiry. It is signed (HMAC-SHA256), not encrypted: whoever holds it can read what it
names, and nobody can change a byte of it or make one for another document without the secret. So a
link made in one channel opens that channel's page only, and a document moved to another collection
or re-indexed with new content is never shown under an old link as if it were the cited one.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import re
from dataclasses import dataclass

from .errors import PixelragError
from .records import Box, Document, Highlight

TOKEN = re.compile(r"[A-Za-z0-9_-]{1,1800}\.[A-Za-z0-9_-]{43}")  # payload.signature, both base64url
KINDS = {"exact": "e", "approximate": "a"}
VERSION = 1


class LinkRefused(PixelragError):
    """A link that opens nothing: `status` is the HTTP status to answer with; the message says why in
    words that name no document."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class PageLink:
    """What a link names: a page of one version of a document, in the collection it was cited in."""

    sha: str  # the PDF's sha256
    scope: str
    name: str  # name_key of the document's file name: finds the current version when this one has changed
    page: int
    box: Box | None
    kind: str | None  # "exact", "approximate" or None
    expires: int  # Unix seconds

    def at(self, page: int, box: Box | None = None, kind: str | None = None) -> PageLink:
        """Another page of the same version, expiring when this link does."""
        return PageLink(self.sha, self.scope, self.name, page, box, kind, self.expires)


class Links:
    """Makes and opens links under one secret; `base` is the public address the viewer is served at."""

    def __init__(self, secret: bytes, base: str = "", days: int = 90):
        if len(secret) < 16:
            raise ValueError("a link secret needs at least 16 bytes")
        self.secret, self.base, self.days = secret, base.rstrip("/"), days

    def link(self, document: Document, page: int, highlight: Highlight | None, now: float) -> PageLink:
        box = tuple(round(v, 4) for v in highlight.box) if highlight else None
        return PageLink(
            document.sha256,
            document.scope,
            name_key(document.file_name),
            page,
            box,  # type: ignore[arg-type]  # four floats, as Box
            highlight.kind if highlight else None,
            int(now) + self.days * 86_400,
        )

    def token(self, link: PageLink) -> str:
        fields = [
            VERSION,
            link.sha,
            link.scope,
            link.name,
            link.page,
            link.box,
            KINDS.get(link.kind or ""),
            link.expires,
        ]
        payload = _encode(json.dumps(fields, separators=(",", ":")).encode())
        return f"{payload}.{self._signature(payload)}"

    def view_url(self, link: PageLink) -> str:
        return f"{self.base}/view/{self.token(link)}"

    def opened(self, token: str, now: float) -> PageLink:
        """The link a token names, or LinkRefused (404: not a link of ours; 410: expired)."""
        if not TOKEN.fullmatch(token):
            raise LinkRefused(404, "This is not a pixelrag link.")
        payload, signature = token.split(".")
        if not hmac.compare_digest(signature, self._signature(payload)):
            raise LinkRefused(404, "This link is not valid: it was changed, or made by another pixelrag.")
        try:
            version, sha, scope, name, page, box, kind, expires = json.loads(_decode(payload))
        except (ValueError, TypeError, binascii.Error):  # signed by us, so only an older format lands here
            raise LinkRefused(404, "This link's format is not known to this pixelrag.") from None
        if version != VERSION:
            raise LinkRefused(404, "This link's format is not known to this pixelrag.")
        if expires < now:
            raise LinkRefused(410, "This link has expired. Ask the question again for a fresh one.")
        kinds = {v: k for k, v in KINDS.items()}
        return PageLink(sha, scope, name, page, tuple(box) if box else None, kinds.get(kind), expires)

    def _signature(self, payload: str) -> str:
        mac = hmac.new(self.secret, f"pixelrag-link-v{VERSION}.{payload}".encode(), hashlib.sha256)
        return _encode(mac.digest())


def name_key(file_name: str) -> str:
    """A file name as a link carries it: short (Discord takes link buttons of up to 512 characters)."""
    return hashlib.sha256(file_name.encode()).hexdigest()[:12]


def _encode(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
