"""Which question the code running now works for: an id set when answering starts and carried by
contextvars into every task and worker thread it starts, so that each log line of its stages can name it."""

from __future__ import annotations

import uuid
from contextvars import ContextVar

QUESTION_ID: ContextVar[str | None] = ContextVar("pixelrag_question_id", default=None)


def new_question_id() -> str:
    """A new id, now the current question's."""
    question_id = uuid.uuid4().hex[:12]
    QUESTION_ID.set(question_id)
    return question_id
