"""The Gemini client shared by the backend's three parts, and the policy every call goes through.

Every call goes through `GeminiCalls.call`, which owns the timeout and the retries: the SDK's
aiohttp transport surfaces a timeout as a bare TimeoutError that its own HttpRetryOptions would
not retry, so the SDK's retries stay off and this module does both.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable, Callable
from typing import TypeVar

import aiohttp
from google import genai
from google.genai import errors, types

from ... import deadline
from ...chat import usage
from ...config import Settings
from ...errors import BadInput, RemoteError
from ...metrics import MODEL_REQUESTS

T = TypeVar("T")

# Pinned because structured output (responseJsonSchema) and system instructions are documented
# on v1beta; the SDK's default is v1.
API_VERSION = "v1beta"
MAX_RETRY_DELAY_S = 30.0  # a longer RetryInfo delay is not worth a chat user's wait
RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
STATUS_WORDS = {
    408: "request timeout",
    429: "rate limited",
    500: "server error",
    502: "bad gateway",
    503: "unavailable",
    504: "gateway timeout",
}


class GeminiCalls:
    """The shared client plus the timeout-and-retry policy every call goes through."""

    def __init__(self, settings: Settings):
        if not settings.gemini_api_key:
            raise BadInput("The gemini backend needs GEMINI_API_KEY or GOOGLE_API_KEY.")
        self.settings = settings
        self.client = genai.Client(
            api_key=settings.gemini_api_key,
            http_options=types.HttpOptions(base_url=settings.gemini_base_url or None, api_version=API_VERSION),
        )
        self.models = self.client.aio.models
        # every call (embedding, reading, context) shares one cap on requests in flight
        self.slots = asyncio.Semaphore(max(1, settings.embed_concurrency))
        self.sleep: Callable[[float], Awaitable[None]] = asyncio.sleep  # the backoff's clock (tests record it)

    async def aclose(self) -> None:
        await self.client.aio.aclose()

    async def call(
        self, what: str, make: Callable[[], Awaitable[T]], may_retry: Callable[[], bool] = lambda: True
    ) -> T:
        """Run `make()` with a timeout; retry 408/429/5xx, timeouts and dropped connections with
        backoff (at least the delay a 429's RetryInfo asks for), within the question's budget.
        `may_retry() == False` (a streamed answer already partly shown) turns a retryable failure
        into RemoteError: a second attempt would write a different answer under the first."""
        s = self.settings
        attempts = max(1, s.retry_attempts)
        delay = s.retry_initial_delay_s
        for attempt in range(1, attempts + 1):
            timeout = s.request_timeout_s
            left = deadline.remaining()
            if left is not None:
                if left <= 0:
                    raise RemoteError(
                        f"Gemini did not finish {what} within the {deadline.allowed():g} s "
                        "allowed for a question. Try again in a few minutes."
                    )
                timeout = min(timeout, left)
            wait = delay * (1 + random.uniform(0, 0.1))
            try:
                async with self.slots:
                    result = await asyncio.wait_for(make(), timeout)
                MODEL_REQUESTS.labels("gemini", "ok").inc()
                usage.gemini_response(result)
                return result
            except errors.APIError as e:
                MODEL_REQUESTS.labels("gemini", str(e.code)).inc()
                if e.code not in RETRY_STATUS:
                    raise RemoteError(f"Gemini refused the {what} request ({e.code} {e.status}): {e.message}") from e
                failure = f"answering {e.code} ({STATUS_WORDS[e.code]})"
                asked = retry_delay(e)
                if asked is not None:
                    wait = max(wait, min(asked, MAX_RETRY_DELAY_S))
            except TimeoutError:  # before OSError: TimeoutError is one
                MODEL_REQUESTS.labels("gemini", "timeout").inc()
                failure = f"not answering within {timeout:g} s"
            except (aiohttp.ClientConnectorError, ConnectionRefusedError) as e:
                MODEL_REQUESTS.labels("gemini", "unreachable").inc()
                failure = f"being unreachable ({type(e).__name__})"
            except (aiohttp.ClientError, ConnectionError) as e:
                MODEL_REQUESTS.labels("gemini", "dropped").inc()
                failure = f"dropping the connection ({type(e).__name__})"
            if not may_retry():
                raise RemoteError(
                    f"Gemini broke off while writing the answer, {failure}. The text above is incomplete: ask again."
                )
            left = deadline.remaining()
            if attempt < attempts and (left is None or wait < left):
                await self.sleep(wait)
                delay *= 2
            elif attempt < attempts:
                raise RemoteError(
                    f"Gemini kept {failure} during {what}; no time was left for another attempt "
                    f"within the {deadline.allowed():g} s allowed for a question. "
                    "Try again in a few minutes."
                )
        raise RemoteError(f"Gemini kept {failure} during {what} after {attempts} attempts. Try again in a few minutes.")


def retry_delay(error: errors.APIError) -> float | None:
    """Seconds from the google.rpc.RetryInfo of an error ("retryDelay": "17s"), if it has one."""
    details = error.details if isinstance(error.details, dict) else {}
    for item in (details.get("error") or details).get("details") or []:
        if isinstance(item, dict) and str(item.get("@type", "")).endswith("google.rpc.RetryInfo"):
            value = str(item.get("retryDelay", "")).strip()
            try:
                return max(0.0, float(value.removesuffix("s")))
            except ValueError:
                return None
    return None


def json_answer(resp: types.GenerateContentResponse, what: str) -> dict:
    """The JSON object of a structured reply; RemoteError when blocked, empty or not JSON."""
    if isinstance(resp.parsed, dict):
        return resp.parsed
    return json_text(resp.text or "", resp, what)


def json_text(text: str, resp: types.GenerateContentResponse | None, what: str) -> dict:
    """The JSON object in `text` (a streamed reply's pieces joined; `resp` its last chunk, which
    carries the finish reason); RemoteError when blocked, empty or not JSON."""
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        reason = ""
        finish = resp.candidates[0].finish_reason if resp and resp.candidates else None
        if finish and finish != types.FinishReason.STOP:
            reason = f" (finish reason {finish.name})"
        elif resp and resp.prompt_feedback and resp.prompt_feedback.block_reason:
            reason = f" (blocked: {resp.prompt_feedback.block_reason.name})"
        raise RemoteError(f"Gemini returned an unreadable answer during {what}{reason}. Try asking again.")
    return data
