"""Words compared the way people type them: without case or diacritics."""

from __future__ import annotations

import unicodedata


def fold(text: str) -> str:
    """Lowercase and strip diacritics, so 'Größe' ~ 'grosse' and 'łącze' ~ 'lacze'."""
    if text.isascii():  # most pages: nothing to strip, and much faster
        return text.lower()
    text = text.lower().replace("ß", "ss").replace("ł", "l")
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
