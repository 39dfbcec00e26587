"""The Gemini follow-up rewriter: thread history in, a standalone (or clarifying) question out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from google.genai import types

from ...answering.history import trim_history
from ...records import Exchange, Resolution
from .calls import GeminiCalls, json_answer

CONTEXT_THINKING = types.ThinkingLevel.MINIMAL  # one small text-only call

CONTEXT_INSTRUCTION = """\
You rewrite the latest question of a conversation about product documents into a standalone
question that can be searched without the conversation. Use the earlier conversation only to
resolve references (it, its, that model, the second one); never add facts or answers from it.
If the question is already standalone, return it unchanged. If a reference could mean several
things and the conversation does not settle it, set needs_clarification and write a short
clarifying_question in the language of the question."""

CONTEXT_SCHEMA = {
    "type": "object",
    "properties": {
        "standalone_question": {"type": "string"},
        "needs_clarification": {"type": "boolean"},
        "clarifying_question": {"type": "string"},
    },
    "required": ["standalone_question", "needs_clarification", "clarifying_question"],
}


def history_text(history: Sequence[Exchange], max_exchanges: int, max_chars: int) -> str:
    """The exchanges `trim_history` keeps, oldest first, as prompt text. A newest exchange too long
    on its own is cut rather than dropped: it is the one a follow-up most likely points at."""
    kept = trim_history(history, max_exchanges, max_chars)
    if not kept and history and max_exchanges > 0:
        last = history[-1]
        room = max(0, max_chars - len(last.question) - len(last.interpreted))
        kept = [replace(last, answer=last.answer[:room] + "…")]
    return "\n\n".join(exchange_text(ex) for ex in kept)


def exchange_text(ex: Exchange) -> str:
    text = f"Question: {ex.question.strip()}\n"
    if ex.interpreted.strip() and ex.interpreted.strip() != ex.question.strip():
        text += f"(understood as: {ex.interpreted.strip()})\n"
    return text + f"Answer: {ex.answer.strip()}"


class GeminiContextResolver:
    def __init__(self, calls: GeminiCalls):
        self.calls = calls

    async def resolve(self, question: str, history: Sequence[Exchange]) -> Resolution:
        if not history:
            return Resolution(question)
        s = self.calls.settings
        earlier = history_text(history, s.history_exchanges, s.history_chars)
        prompt = f"Earlier conversation:\n{earlier}\n\nLatest question: {question}"
        config = types.GenerateContentConfig(
            system_instruction=CONTEXT_INSTRUCTION,
            thinking_config=types.ThinkingConfig(thinking_level=CONTEXT_THINKING),
            response_mime_type="application/json",
            response_json_schema=CONTEXT_SCHEMA,
        )
        resp = await self.calls.call(
            "the follow-up question rewrite",
            lambda: self.calls.models.generate_content(model=s.context_model, contents=prompt, config=config),
        )
        data = json_answer(resp, "the follow-up question rewrite")
        clarify = str(data.get("clarifying_question") or "").strip()
        if data.get("needs_clarification") is True and clarify:
            return Resolution(question, clarify=clarify)
        return Resolution(str(data.get("standalone_question") or "").strip() or question)
