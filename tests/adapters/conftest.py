"""Fixtures every adapter test shares."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_waits_before_closing_a_broken_stream(monkeypatch):
    """A broken Slack stream is closed again after 1, 2, 4… s; tests need not wait for the clock."""
    monkeypatch.setattr("bot.slack.stream.CLOSE_RETRY_DELAYS", (0.0,) * 5)
