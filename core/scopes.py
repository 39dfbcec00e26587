"""Which collection a document belongs to, as a listing shows it."""

from __future__ import annotations

from collections.abc import Sequence

from .records import Document


def own_and_shared(documents: Sequence[Document], scope: str) -> tuple[list[Document], list[Document]]:
    """A scope's listing in two groups: its own documents, then the ones it sees from elsewhere."""
    return [d for d in documents if d.scope == scope], [d for d in documents if d.scope != scope]
