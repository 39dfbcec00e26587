"""Gemini backend: Gemini Embedding 2 for pages and queries, a Gemini reader and follow-up rewriter.
Its models see pixels, so it keeps the base policies of core/ports.py (no OCR, dense ranking)."""

from __future__ import annotations

from ...config import Settings
from ..base import Backend
from .calls import GeminiCalls
from .context import GeminiContextResolver
from .embedder import GeminiEmbedder
from .reader import GeminiReader


class GeminiBackend(Backend):
    name = "gemini"


def gemini_backend(settings: Settings) -> GeminiBackend:
    calls = GeminiCalls(settings)
    return GeminiBackend(GeminiEmbedder(calls), GeminiReader(calls), GeminiContextResolver(calls))
