"""What one question costs, counted where the requests are made and stored per workspace by the
conversation (ThreadMemory.add_usage): Gemini requests and tokens (each response's usage metadata),
TypeSafe requests. A contextvar holds the question's counter: the stages' tasks inherit it."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING

from ..scopes import tenant

if TYPE_CHECKING:
    from ..ports import ThreadMemory

_counter: ContextVar[Counter | None] = ContextVar("pixelrag_usage", default=None)

QUESTIONS, GEMINI_REQUESTS, GEMINI_TOKENS, TYPESAFE_REQUESTS = (
    "questions",
    "gemini_requests",
    "gemini_tokens",
    "typesafe_requests",
)
SHOWN = (
    (QUESTIONS, "questions"),
    (GEMINI_REQUESTS, "Gemini requests"),
    (GEMINI_TOKENS, "Gemini tokens"),
    (TYPESAFE_REQUESTS, "TypeSafe requests"),
)


@contextlib.contextmanager
def counting():
    """A fresh counter for the code inside (one question); what it counted, once the block ends."""
    counter: Counter = Counter()
    token = _counter.set(counter)
    try:
        yield counter
    finally:
        _counter.reset(token)


@contextlib.asynccontextmanager
async def kept(store: ThreadMemory | None, scope: str):
    """counting() for the block, its costs added to the workspace of `scope` in `store` when it ends,
    failed or not (what a failed answer or build requested is spent too); None keeps nothing."""
    with counting() as cost:
        try:
            yield
        finally:
            if cost and store is not None:
                await store.add_usage(*tenant(scope), cost, time.time())


def count(metric: str, amount: int = 1) -> None:
    counter = _counter.get()
    if counter is not None and amount:
        counter[metric] += amount


def gemini_response(result: object) -> None:
    """One Gemini request, and the tokens its usage metadata reports (a stream's, on its last chunk)."""
    count(GEMINI_REQUESTS)
    for part in result if isinstance(result, tuple) else (result,):
        metadata = getattr(part, "usage_metadata", None)
        if metadata is not None:
            count(GEMINI_TOKENS, int(getattr(metadata, "total_token_count", 0) or 0))


def day_of(at: float) -> str:
    """The UTC day of a time: usage is kept per day."""
    return time.strftime("%Y-%m-%d", time.gmtime(at))


async def summary(
    stores: Sequence[ThreadMemory], platform: str | None, workspace: str | None, now: float | None = None
) -> dict[str, str]:
    """Today's and the last 30 days' usage, summed over the stores, as lines for a status listing (one
    workspace's, or with None every one's)."""
    now = time.time() if now is None else now
    lines = {}
    for label, since in (("usage today (UTC)", now), ("usage, last 30 days", now - 29 * 86400)):
        total: Counter = Counter()
        for store in stores:
            total.update(await store.usage(platform, workspace, since))
        lines[label] = describe(total)
    return lines


def describe(counts: Mapping[str, int]) -> str:
    shown = ((counts.get(metric, 0), label) for metric, label in SHOWN)
    return ", ".join(f"{n:,} {label if n != 1 else label.removesuffix('s')}" for n, label in shown)
