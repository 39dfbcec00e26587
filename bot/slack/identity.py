"""Whether Slack takes the bot's token now (auth.test), for deliveries and for readiness.

Bolt asks auth.test before it hands an event to a listener, and when that call fails it acknowledges
the event with a 200 and drops it: Slack never delivers it again. So `before_authorize` runs first:
until auth.test has succeeded (at the start, and again after Slack refused the token), it asks itself,
and while Slack refuses or does not answer, the delivery gets a 503 (over HTTP; in Socket Mode it stays
unacknowledged) and Slack delivers it again. Readiness reports the same reason, and rechecks the
token now and then, so a token revoked while the bot runs shows there too.
"""

from __future__ import annotations

import asyncio
import logging
import time

from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from .stream import error_code

log = logging.getLogger("pixelrag.slack")

RECHECK_S = 60.0  # how old a good answer may be before readiness asks again
RECHECK_FAILED_S = 10.0  # and a failure (each delivery asks again too)
NO_AUTH_EVENTS = ("app_uninstalled", "tokens_revoked")  # Bolt hands these on without auth.test


class SlackIdentity:
    def __init__(self, client: AsyncWebClient, recheck_s: float = RECHECK_S):
        self.client = client
        self.recheck_s = recheck_s
        self.problem: str | None = "auth.test has not been asked yet"
        self._checked_at = float("-inf")
        self._lock = asyncio.Lock()
        self._recheck: asyncio.Task | None = None

    async def check(self) -> str | None:
        """Ask auth.test now: why Slack does not take the token, or None when it does."""
        async with self._lock:
            try:
                await self.client.auth_test()
                problem = None
            except SlackApiError as exc:
                status = getattr(exc.response, "status_code", 200)
                if status == 429 or status >= 500:
                    problem = f"Slack's auth.test failed (HTTP {status})"
                else:
                    problem = f"Slack refuses the bot token ({error_code(exc) or f'HTTP {status}'})"
            except (TimeoutError, OSError) as exc:  # aiohttp's connection errors are OSErrors
                problem = f"Slack does not answer auth.test ({type(exc).__name__})"
            if problem and problem != self.problem:
                log.warning("%s", problem)
            self.problem, self._checked_at = problem, time.monotonic()
            return problem

    async def before_authorize(self, body: dict, next) -> BoltResponse | None:
        """Bolt middleware: a delivery is handed on only once Slack has taken the token."""
        if self.problem is not None and not _needs_no_token(body) and await self.check() is not None:
            log.warning("a delivery was not acknowledged (%s); Slack delivers it again", self.problem)
            return BoltResponse(status=503, body=self.problem or "")
        await next()
        return None

    async def readiness(self) -> str | None:
        """Why the bot cannot work in Slack now, at once: the last answer, asked again in the background
        when it is old (or a failure)."""
        age = time.monotonic() - self._checked_at
        stale = age > (self.recheck_s if self.problem is None else RECHECK_FAILED_S)
        if stale and (self._recheck is None or self._recheck.done()):
            self._recheck = asyncio.ensure_future(self.check())
        return self.problem

    async def close(self) -> None:
        if self._recheck is not None:
            self._recheck.cancel()


def _needs_no_token(body: dict) -> bool:
    event = body.get("event")
    return body.get("type") in ("url_verification", "ssl_check") or (
        isinstance(event, dict) and event.get("type") in NO_AUTH_EVENTS
    )
