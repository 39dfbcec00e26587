"""Coverage gaps as the people who keep the documents read them: gathered from every bot's thread memory
(core/chat/gaps.py groups them), for `pixelrag gaps`, /api/gaps and the Slack App Home."""

from __future__ import annotations

import time

from core import Gap, GapQuestion, Service, Settings, ThreadMemory, coverage_gaps, page_label

from .feedback_export import thread_memories

DEFAULT_DAYS = 30
DAY = 24 * 3600


async def gathered(settings: Settings, days: float, own: ThreadMemory | None = None) -> list[GapQuestion]:
    """The gap questions of the last `days` days in every bot's thread memory: each SQLite file, or the one
    database. `own`: this process's open memory, read as it is (with a database, it holds them all)."""
    since = time.time() - days * DAY
    questions = list(await own.gap_questions(since)) if own is not None else []
    if settings.database_url and own is not None:
        return questions
    for memory in thread_memories(settings):
        if own is not None and _same_file(memory, own):
            continue
        await memory.open()
        try:
            questions += await memory.gap_questions(since)
        finally:
            await memory.close()
    return questions


def _same_file(a: ThreadMemory, b: ThreadMemory) -> bool:
    path_a, path_b = getattr(a, "path", None), getattr(b, "path", None)
    return path_a is not None and path_b is not None and path_a.resolve() == path_b.resolve()


async def gaps_for(
    service: Service, scope: str | None, days: float, own: ThreadMemory | None = None
) -> tuple[list[Gap], dict[str, str]]:
    """The gaps `scope` may see (None: every one) and the documents' titles by id."""
    questions = await gathered(service.settings, days, own)
    titles = {d.doc_id: d.title for d in await service.all_documents()}
    return coverage_gaps(questions, scope), titles


def gap_record(gap: Gap, titles: dict[str, str]) -> dict:
    """A gap as JSON: what /api/gaps and `pixelrag gaps --json` give."""
    return {
        "count": gap.count,
        "latest": gap.latest,
        "asked_in": gap.scopes,
        "reasons": gap.reasons,
        "last_asked": gap.last_asked,
        "pages": [{"document": doc, "title": titles.get(doc, doc), "page": page} for doc, page in gap.pages()],
        "questions": [
            {"question": q.question, "interpreted": q.interpreted, "reason": q.reason, "asked_at": q.asked_at}
            for q in gap.questions
        ],
    }


def gap_lines(gap: Gap, titles: dict[str, str]) -> list[str]:
    """A gap as plain lines (the terminal; the App Home shows the same)."""
    reasons = ", ".join(f"{reason} ×{n}" if n > 1 else reason for reason, n in gap.reasons.items())
    pages = "; ".join(page_label(page, titles) for page in gap.pages(3)) or "no pages found"
    asked = time.strftime("%Y-%m-%d", time.gmtime(gap.last_asked))
    return [
        f"{gap.count}× {gap.latest}",
        f"   {reasons} · {', '.join(gap.scopes) or '(before collections were kept)'} · last {asked}",
        f"   looked in: {pages}",
    ]
