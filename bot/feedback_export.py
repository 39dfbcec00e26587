"""`pixelrag feedback export`: the answers people marked 👎 (or 👍) in Slack, as evaluation questions.

Each rated turn becomes one line in the question-set format (eval/questions.py): the question as the
bot understood it, the pages it retrieved and cited, who rated it and when. `gold`, `answer`, `kind`
and `lang` are left for a person to fill in from the PDFs: a rating says the answer was wrong, not
what the right one is.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path

from core import Rated, Service, Settings, ThreadMemory, thread_memory

from .thread_files import sqlite_thread_files


def thread_memories(settings: Settings) -> list[ThreadMemory]:
    """Where ratings are stored: the shared database, or each adapter's SQLite file that exists."""
    if settings.database_url:
        return [thread_memory(settings, Path())]  # one database holds every bot's memory
    return [thread_memory(settings, f) for f in sqlite_thread_files(settings)]


async def export(settings: Settings, rating: str) -> list[dict]:
    async with Service(settings) as service:
        files = {d.doc_id: d.file_name for d in await service.all_documents()}
    rows: list[Rated] = []
    for memory in thread_memories(settings):
        await memory.open()
        try:
            rows += await memory.ratings(rating)
        finally:
            await memory.close()
    return [question_of(r, rating, files) for r in sorted(rows, key=lambda r: r.rated_at)]


def question_of(r: Rated, rating: str, files: dict[str, str]) -> dict:
    def pages(refs):
        return [{"file": files.get(doc, doc), "page": page} for doc, page in refs]

    when = datetime.datetime.fromtimestamp(r.rated_at, datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return {
        "id": f"feedback-{r.platform}-{r.turn_id}",
        "question": r.interpreted or r.question,
        "answer": "",
        "gold": [],
        "kind": "",
        "lang": "",
        "note": f"Rated {rating} in {r.platform} ({r.workspace}) by {r.user} on {when}. Fill in answer, gold, kind "
        "and lang from the PDFs.",
        "feedback": {
            "rating": rating,
            "asked": r.question,
            "bot_answer": r.answer[:2000],
            "retrieved": pages(r.retrieved),
            "cited": pages(r.cited),
        },
    }


def write(records: list[dict], out: Path | None) -> None:
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)
    if out is None:
        print(text, end="")
    else:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text, encoding="utf-8")
