"""The end-to-end tests' shared fixture: a real `pixelrag web` serving a keyed index (web_process.py)."""

from __future__ import annotations

import aiohttp
import pytest

from tests.end_to_end.web_process import PER_HOUR, keyed_index, web_process


@pytest.fixture
async def api(tmp_path, brochure_index):
    """The brochure in the shared collection and a channel's own note; `pixelrag web` serving them."""
    index, keys = await keyed_index(tmp_path, brochure_index)
    async with web_process(index, PIXELRAG_USER_QUESTIONS_PER_HOUR=str(PER_HOUR)) as base:
        async with aiohttp.ClientSession() as session:
            yield base, session, keys, index
