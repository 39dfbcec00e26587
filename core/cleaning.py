"""Text from a shell or a chat payload made safe to store and show."""

from __future__ import annotations


def clean_text(text: str) -> str:
    """Text as it can be stored and shown: invalid UTF-8 from a shell (surrogate escapes) and lone
    surrogates from a chat payload become "?"; control characters other than whitespace go."""
    text = text.encode("utf-8", "replace").decode("utf-8") if not text.isascii() else text
    return "".join(c for c in text if c.isprintable() or c in "\n\t ")
