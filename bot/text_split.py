"""Cutting long replies into chat-sized pieces (and clipping), shared by the Slack and Discord renderers."""

from __future__ import annotations

BREAKS = ("\n\n", "\n", " ")  # paragraph, line, word: the preferred cut comes first


def clip(text: str, limit: int) -> str:
    """At most `limit` characters, with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def split_text(text: str, limit: int) -> list[str]:
    """Pieces of at most `limit` characters. Cut at the last paragraph break, else line break, else
    space that keeps the piece at least a third full; failing that at any break; else hard."""
    pieces: list[str] = []
    rest = text.strip()
    while len(rest) > limit:
        window = rest[: limit + 1]  # a break right after the limit still ends a full piece
        cut = next((c for c in (window.rfind(b) for b in BREAKS) if c >= limit // 3), -1)
        if cut <= 0:
            cut = max(window.rfind(b) for b in BREAKS)
        if cut <= 0:
            cut = limit
        pieces.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    if rest:
        pieces.append(rest)
    return pieces
