"""The Gemini reader streaming through google-genai against the fake's streamGenerateContent: the
answer field decoded as the JSON arrives, retries only while nothing was shown."""

from __future__ import annotations

import io
import json
import random

import pytest
from PIL import Image

from core.backends.gemini import gemini_backend
from core.backends.gemini.partial import StreamedString
from core.errors import RemoteError
from core.markup import inert
from core.records import Hit, Page, ReaderPage
from tests.fakes.gemini import GENERATE, STREAM, FakeGemini

ANSWER = 'The **X200** weighs 14 kg ("dry").\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nÜber 😀 \\ done'


def test_the_answer_field_is_decoded_however_the_json_is_cut():
    rng = random.Random(12)
    for ascii_only in (True, False):
        text = json.dumps({"answer": ANSWER, "citations": [{"quote": 'say "answer": "no"'}]}, ensure_ascii=ascii_only)
        for _ in range(200):
            field, got, i = StreamedString("answer"), "", 0
            while i < len(text):
                n = rng.randint(1, 8)
                got += field.feed(text[i : i + n])
                i += n
            assert got == ANSWER and field.done


def page() -> ReaderPage:
    buf = io.BytesIO()
    Image.new("RGB", (40, 40), "white").save(buf, "JPEG")
    return ReaderPage(Hit("d1", "x200.pdf", 1, 1.0, "/unused"), Page("d1", 1, "h", 595, 842), buf.getvalue())


async def test_a_failure_before_the_first_words_is_retried_and_one_after_them_is_not():
    async with FakeGemini() as fake:
        backend = gemini_backend(fake.settings(embedding_dim=256, retry_attempts=3, retry_initial_delay_s=0.01))
        try:
            reply = {
                "answer": ANSWER,
                "citations": [{"page_ref": "P1", "quote": "14 kg"}],
                "limitations": [],
                "topic": "other",
            }
            fake.chunk_chars = 16
            fake.script(STREAM, 503)
            fake.replies.append(reply)
            pieces: list[str] = []
            draft = await backend.read("How heavy?", "How heavy?", [page()], (), on_text=pieces.append)
            assert fake.requests[STREAM] == 2 and fake.requests[GENERATE] == 0
            # What streams is what the answer ends as: the model's Markdown with its links inert.
            assert len(pieces) > 3 and "".join(pieces) == inert(ANSWER) == draft.markdown
            assert draft.citations[0].quote == "14 kg"

            fake.replies.append(reply)
            fake.break_after, pieces = 2, []
            with pytest.raises(RemoteError, match="broke off while writing the answer"):
                await backend.read("How heavy?", "How heavy?", [page()], (), on_text=pieces.append)
            assert fake.requests[STREAM] == 3 and pieces  # one attempt: its words were already shown
            # Without a listener the reader does not stream.
            fake.break_after = None
            fake.replies.append(reply)
            assert (await backend.read("How heavy?", "How heavy?", [page()], ())).markdown == inert(ANSWER.strip())
            assert fake.requests[GENERATE] == 1
        finally:
            await backend.reader.calls.aclose()
