"""One time budget per question, shared by every remote call made while answering it.

The service opens a budget around an answer; a remote call asks how much is left, so that retries
and timeouts never add up to more than a chat user is willing to wait.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar

_deadline: ContextVar[tuple[float, float] | None] = ContextVar("pixelrag_deadline", default=None)


@contextlib.contextmanager
def budget(seconds: float) -> Iterator[None]:
    """Calls made inside (tasks and worker threads started inside included) share `seconds`."""
    token = _deadline.set((time.monotonic() + seconds, seconds))
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining() -> float | None:
    """Seconds left in the current budget; None outside of one."""
    current = _deadline.get()
    return None if current is None else current[0] - time.monotonic()


def allowed() -> float | None:
    """The whole budget, for messages ("within the 90 s allowed")."""
    current = _deadline.get()
    return None if current is None else current[1]
