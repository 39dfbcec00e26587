"""The TypeSafe Jev page selector (issue 13): one bounded System One request per question.

Opt-in only (Settings.jev == "rerank"; a TYPESAFE_API_KEY alone changes nothing). Retrieval then
returns CANDIDATES pages instead of top_k; one `system_one` request asks one `noul` relevance question
per candidate, each carrying that candidate's page thumbnail, plus one `choice` for the question's
topic and one for its task. Only the question text and the screenshots are shared state. What to
keep is decided in core/jev/decisions.py.

Never worse than off: a missing key, a timeout, an API error (429/5xx after the SDK's retries,
within this question's share of the time budget) or an unusable page decision keeps the dense
ranking, and the answer says that the selector fell back and why.

The SDK (typesafe-sdk 0.7.5) is imported only when the selector is on. Its facts used here, from its
source: POST /v1/systemone with `Authorization: Bearer`; images travel as multipart parts referenced
from the JSON body (endpoints.py); RetryPolicy retries 408/429/5xx and timeouts with backoff and honours
retry-after(-ms), `timeout` bounding all attempts (retry.py); errors by status (errors.py). Image
questions need the `TypeSafe-Danger-Zone-Images: true` header (issue 13).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .. import deadline
from ..chat import usage
from ..config import Settings
from ..metrics import MODEL_REQUESTS
from ..records import TOPICS, Candidate, Hit, QueryImage, ReaderPage, Selection
from .decisions import CANDIDATES, TASK_MEANING, TASKS, TOPIC_MEANING, confident_choice, guidance, probability, select
from .thumbnails import thumbnail

if TYPE_CHECKING:  # the SDK itself is imported only when the selector is on
    from typesafe_sdk import NoulCriteria

log = logging.getLogger(__name__)

IMAGES_HEADER = "TypeSafe-Danger-Zone-Images"
MAX_RETRIES = 2  # three attempts at most, and only while the budget lasts
BUDGET_SHARE = 0.5  # of what is left of the question's budget: the reader needs the rest
MIN_BUDGET_S = 0.1
RELEVANCE = (
    "Does the page image show the information needed to answer the question in the state "
    "(its text and any screenshots)?"
)
RELEVANT: NoulCriteria = {
    "true": "The page states or shows what the question asks for.",
    "false": "The page is about something else, or only mentions the subject.",
}


@dataclass(frozen=True)
class Picked:
    """The pages the reader gets and what the selector adds to the answer."""

    pages: tuple[ReaderPage, ...]
    selection: Selection | None = None
    guidance: str = ""  # reader instructions for a confident task
    notes: tuple[str, ...] = ()  # a fallback, said in the reply

    @property
    def hits(self) -> tuple[Hit, ...]:
        return tuple(rp.hit for rp in self.pages)

    @property
    def topic(self) -> str | None:
        return self.selection.topic if self.selection else None


class PageSelector:
    def __init__(self, settings: Settings):
        self.settings = settings

    @property
    def enabled(self) -> bool:
        return self.settings.jev == "rerank"

    def pool(self, k: int) -> int:
        """How many pages retrieval should return: the candidates when on, else `k`."""
        return max(k, CANDIDATES) if self.enabled else k

    async def select(self, question: str, images: Sequence[QueryImage], pages: Sequence[ReaderPage], k: int) -> Picked:
        """The `k` pages to read out of the retrieved `pages` (dense order), judged by Jev when it is on."""
        pages = tuple(pages)
        if not self.enabled or not pages:
            return Picked(pages[:k])
        s = self.settings
        candidates = pages[:CANDIDATES]
        if not s.typesafe_api_key:
            return self._fallback(candidates, k, "TYPESAFE_API_KEY is not set")
        left = deadline.remaining()
        budget = s.jev_timeout_s if left is None else min(s.jev_timeout_s, left * BUDGET_SHARE)
        if budget < MIN_BUDGET_S:
            return self._fallback(candidates, k, "no time was left in this question's budget")
        started = time.monotonic()
        usage.count(usage.TYPESAFE_REQUESTS)
        try:
            async with asyncio.timeout(budget):
                answers, model = await self._ask(question, images, candidates, budget)
            MODEL_REQUESTS.labels("typesafe", "ok").inc()
        except TimeoutError:
            MODEL_REQUESTS.labels("typesafe", "timeout").inc()
            return self._fallback(candidates, k, f"TypeSafe did not answer within {budget:g} s")
        except Exception as exc:  # the SDK's errors, and anything else: never worse than off
            MODEL_REQUESTS.labels("typesafe", str(getattr(exc, "status", None) or "error")).inc()
            return self._fallback(candidates, k, describe(exc))
        finally:
            log.info("jev selector: %.0f ms", (time.monotonic() - started) * 1000)
        return self._decide(candidates, k, answers, model)

    # -- the request ---------------------------------------------------------------------------------
    async def _ask(
        self, question: str, images: Sequence[QueryImage], candidates: Sequence[ReaderPage], budget: float
    ) -> tuple[dict, str]:
        from pydantic import BaseModel
        from typesafe_sdk import AsyncTypeSafeClient, Choice, Image, Noul, RetryPolicy

        class Loose(BaseModel):  # answers checked one by one here: a bad topic must not void the page scores
            model: str
            answers: dict[str, Any]

        pages = await asyncio.to_thread(lambda: [thumbnail(rp.jpeg) for rp in candidates])
        shots = await asyncio.to_thread(lambda: [thumbnail(img.data) for img in images])
        state: dict[str, Any] = {"question": question or "(the question is the screenshot)"}
        if shots:
            state["screenshots"] = [Image(t) for t in shots]
        questions: dict[str, Any] = {
            page_key(n): Noul(
                instructions={
                    "task": RELEVANCE,
                    "document": rp.hit.title,
                    "page_number": rp.hit.page,
                    "page_image": Image(t),
                },
                criteria=RELEVANT,
            )
            for n, (rp, t) in enumerate(zip(candidates, pages), 1)
        }
        questions["topic"] = Choice(instructions="What is the question in the state about?", criteria=TOPIC_MEANING)
        questions["task"] = Choice(instructions="What does the question in the state ask for?", criteria=TASK_MEANING)
        s = self.settings
        retry = RetryPolicy(
            max_retries=MAX_RETRIES,
            backoff_initial=s.retry_initial_delay_s,
            backoff_max=max(s.retry_initial_delay_s, 5.0),
            timeout=budget,
        )
        async with AsyncTypeSafeClient(
            api_key=s.typesafe_api_key,
            base_url=s.typesafe_base_url,
            model=s.typesafe_model,
            retry=retry,
            timeout=budget,
        ) as client:
            response = await client.system_one(
                state, questions, model=s.typesafe_model, extra_headers={IMAGES_HEADER: "true"}, response_model=Loose
            )
        return response.answers, response.model

    # -- the decision --------------------------------------------------------------------------------
    def _decide(self, candidates: Sequence[ReaderPage], k: int, answers: dict, model: str) -> Picked:
        probabilities = []
        for n in range(1, len(candidates) + 1):
            raw = answers.get(page_key(n))
            p = probability(raw.get("noul")) if isinstance(raw, dict) and raw.get("type") == "noul" else None
            probabilities.append(p)
        topic, topic_p = confident_choice(answers.get("topic"), TOPICS)
        task, task_p = confident_choice(answers.get("task"), TASKS)
        listed = candidate_list(candidates, probabilities)
        if None in probabilities:
            bad = ", ".join(str(n) for n, p in enumerate(probabilities, 1) if p is None)
            reason = f"its decision gave no usable relevance probability for candidate(s) {bad}"
            selection = Selection(model, False, reason, listed, topic, topic_p, task, task_p)
            return Picked(tuple(candidates[:k]), selection, guidance(task), (fallback_note(reason),))
        keep = select([p for p in probabilities if p is not None], k)  # none is None here
        selection = Selection(model, True, None, listed, topic, topic_p, task, task_p)
        return Picked(tuple(candidates[i] for i in keep), selection, guidance(task))

    def _fallback(self, candidates: Sequence[ReaderPage], k: int, reason: str) -> Picked:
        log.warning("jev selector fell back to the dense ranking: %s", reason)
        selection = Selection(self.settings.typesafe_model, False, reason, candidate_list(candidates, ()))
        return Picked(tuple(candidates[:k]), selection, "", (fallback_note(reason),))


def page_key(n: int) -> str:
    return f"page_{n}"


def candidate_list(candidates: Sequence[ReaderPage], probabilities: Sequence[float | None]) -> tuple[Candidate, ...]:
    probs = list(probabilities) + [None] * (len(candidates) - len(probabilities))
    return tuple(Candidate(rp.hit.doc_id, rp.hit.page, n, p) for n, (rp, p) in enumerate(zip(candidates, probs), 1))


def fallback_note(reason: str) -> str:
    return f"The TypeSafe Jev page selector fell back to the dense ranking: {reason}."


def describe(exc: BaseException) -> str:
    """Why the request failed, for the reply (no key, no body beyond the service's own message)."""
    from typesafe_sdk import (
        TypeSafeAPIConnectionError,
        TypeSafeAPIError,
        TypeSafeAPIResponseValidationError,
        TypeSafeAPITimeoutError,
        TypeSafeAuthenticationError,
        TypeSafeError,
        TypeSafeRateLimitError,
    )

    if isinstance(exc, TypeSafeAPITimeoutError):
        return "TypeSafe did not answer in time"
    if isinstance(exc, TypeSafeAPIConnectionError):
        return "TypeSafe could not be reached"
    if isinstance(exc, TypeSafeAPIResponseValidationError):
        return f"TypeSafe returned a malformed response (at {exc.field_path or 'the top level'})"
    if isinstance(exc, TypeSafeRateLimitError):
        return "TypeSafe kept answering 429 (rate limited) through the retries"
    if isinstance(exc, TypeSafeAuthenticationError):
        return "TypeSafe refused the API key (401)"
    if isinstance(exc, TypeSafeAPIError) and exc.status >= 500:
        return f"TypeSafe kept answering {exc.status} (server error) through the retries"
    if isinstance(exc, TypeSafeAPIError):
        return f"TypeSafe refused the request ({exc})"
    if isinstance(exc, TypeSafeError):
        return f"the TypeSafe SDK refused the request ({exc})"
    log.exception("jev selector failed")
    return f"an unexpected error ({type(exc).__name__})"
