"""How much of a thread the follow-up resolvers read."""

from __future__ import annotations

from collections.abc import Sequence

from ..records import Exchange


def trim_history(history: Sequence[Exchange], exchanges: int = 4, chars: int = 12_000) -> list[Exchange]:
    """The latest `exchanges` exchanges whose text fits in `chars`, oldest first."""
    kept, used = [], 0
    for ex in reversed(history[-exchanges:] if exchanges else []):
        size = len(ex.question) + len(ex.interpreted) + len(ex.answer)
        if used + size > chars:
            break
        kept.append(ex)
        used += size
    return list(reversed(kept))
