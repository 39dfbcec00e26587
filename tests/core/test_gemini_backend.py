"""The Gemini backend with the real google-genai client against the loopback fake (no network)."""

from __future__ import annotations

import asyncio
import base64
import io
import math

import numpy as np
import pytest
from aiohttp import web
from PIL import Image

from core.backends.gemini import gemini_backend
from core.backends.gemini.context import history_text
from core.backends.gemini.embedder import batches
from core.backends.gemini.reader import UNKNOWN_DOC, box_from_2d
from core.errors import BadInput, RemoteError
from core.records import Exchange, Hit, Page, PageInput, QueryImage, ReaderPage, Word
from tests.fakes.gemini import EMBED, GENERATE, FakeGemini, Hang, Raw, decode_b64, embed_content, pick

DIM = 128  # the smallest outputDimensionality the API accepts


def image_bytes(tag: int, fmt: str = "JPEG", size: int = 0) -> bytes:
    """A real, distinct image (the fake checks bytes against their MIME type), padded to `size`."""
    buf = io.BytesIO()
    Image.new("RGB", (32, 24), (tag * 37 % 256, tag * 91 % 256, 120)).save(buf, fmt)
    return buf.getvalue().ljust(size, b"\0")  # bytes after the image's end are ignored by decoders


@pytest.fixture
async def fake():
    async with FakeGemini() as f:
        yield f


@pytest.fixture
async def make_backend(fake):
    """Backends pointed at the fake with tiny delays; their SDK sessions are closed afterwards."""
    made = []

    def make(**changes):
        quick = dict(embedding_dim=DIM, retry_initial_delay_s=0.01, request_timeout_s=0.5, retry_attempts=3)
        settings = fake.settings(**{**quick, **changes})
        made.append(gemini_backend(settings))
        return made[-1]

    yield make
    for b in made:
        await b.embedder.calls.aclose()


@pytest.fixture
def backend(make_backend):
    return make_backend()


def pages(n: int, title: str = "Pump manual", size: int = 0) -> list[PageInput]:
    box = (0.1, 0.1, 0.2, 0.12)
    return [
        PageInput(
            Page("doc1", i, f"hash{i}", 595, 842, (Word("section", box, 0), Word(f"s{i}x", box, 0))),
            image_bytes(i, size=size),
            title,
        )
        for i in range(1, n + 1)
    ]


def reader_pages(n: int) -> list[ReaderPage]:
    return [
        ReaderPage(
            Hit(f"doc{i}", f"Manual {i}", i + 10, 0.5, f"/tmp/p{i}.jpg"),
            Page(f"doc{i}", i + 10, "h", 595, 842),
            image_bytes(i),
        )
        for i in range(1, n + 1)
    ]


def page_content(p: PageInput) -> dict:
    return {
        "parts": [
            {"inlineData": {"data": base64.b64encode(p.jpeg).decode(), "mimeType": "image/jpeg"}},
            {"text": f"title: {p.title} | text: {p.page.text}"},
        ]
    }


# -- embeddings ---------------------------------------------------------------------------------


async def test_pages_are_embedded_one_content_each_in_batches_and_in_order(fake, backend):
    inputs = pages(14)
    progress = []
    vectors = await backend.embedder.embed_pages(inputs, progress.append)

    assert fake.requests[EMBED] == math.ceil(14 / 6)
    assert sorted(fake.embed_sizes) == [2, 6, 6]
    assert sum(progress) == 14 and sorted(progress) == [2, 6, 6]
    assert len(vectors) == 14
    for p, v in zip(inputs, vectors):
        assert v.shape == (1, DIM) and v.dtype == np.float32
        assert np.linalg.norm(v) == pytest.approx(1.0, abs=1e-5)
        assert np.allclose(v[0], embed_content(page_content(p), DIM), atol=1e-6)  # input order kept
    sent = fake.bodies[0].body["requests"][0]
    assert sent["outputDimensionality"] == DIM


async def test_query_text_or_page_image_retrieves_that_page(backend):
    inputs = pages(8)
    matrix = np.vstack(await backend.embedder.embed_pages(inputs, lambda n: None))

    by_words = await backend.embedder.embed_query("pump manual section s7x", [])
    assert by_words.shape == (DIM,)
    assert np.linalg.norm(by_words) == pytest.approx(1.0, abs=1e-5)
    assert int(np.argmax(matrix @ by_words)) == 6

    by_image = await backend.embedder.embed_query("", [QueryImage(inputs[2].jpeg, "image/jpeg")])
    assert int(np.argmax(matrix @ by_image)) == 2


async def test_query_is_one_content_with_task_prefix_and_images(fake, backend):
    png = image_bytes(1, "PNG")
    await backend.embedder.embed_query("max pressure", [QueryImage(png, "image/png")])
    (request,) = fake.bodies[-1].body["requests"]
    parts = request["content"]["parts"]
    assert parts[0]["text"] == "task: search result | query: max pressure"
    assert len(parts) == 2 and base64.b64decode(parts[1]["inline_data"]["data"]) == png
    with pytest.raises(BadInput):
        await backend.embedder.embed_query("  ", [])


def test_batches_keep_bodies_under_the_size_limit():
    big = pages(7, size=1024 * 1024)  # 1 MiB each → ~1.33 MiB base64: two per request
    assert batches(big, 6) == [[0, 1], [2, 3], [4, 5], [6]]
    assert batches(pages(7), 3) == [[0, 1, 2], [3, 4, 5], [6]]
    assert batches(pages(1, size=5 * 1024 * 1024), 6) == [[0]]  # an oversized page still goes alone


async def test_big_pages_are_split_by_size_through_the_client(fake, backend):
    await backend.embedder.embed_pages(pages(5, size=1024 * 1024), lambda n: None)
    assert sorted(fake.embed_sizes) == [1, 2, 2]


async def test_concurrency_cap_is_respected(fake, make_backend):
    b = make_backend(embed_batch_pages=1, embed_concurrency=3)
    fake.gate = asyncio.Event()  # requests are held until three are in flight at once
    work = asyncio.ensure_future(b.embedder.embed_pages(pages(12), lambda n: None))
    for _ in range(1000):
        if fake.in_flight >= 3:
            break
        await asyncio.sleep(0.01)
    fake.gate.set()
    await work
    assert fake.requests[EMBED] == 12
    assert fake.max_in_flight == 3


async def test_wrong_count_or_dimension_is_a_remote_error(fake, backend):
    fake._embed = lambda body: web.json_response({"embeddings": [{"values": [0.5] * DIM}]})
    with pytest.raises(RemoteError, match="1 embeddings for 2 inputs"):
        await backend.embedder.embed_pages(pages(2), lambda n: None)
    fake._embed = lambda body: web.json_response({"embeddings": [{"values": [0.5] * 10}]})
    with pytest.raises(RemoteError, match=f"expected {DIM} values"):
        await backend.embedder.embed_query("x", [])


# -- retries and timeouts -----------------------------------------------------------------------


async def test_429_then_success_is_retried(fake, backend):
    from prometheus_client import REGISTRY

    def requests(status: str) -> float:
        return REGISTRY.get_sample_value("pixelrag_model_requests_total", {"service": "gemini", "status": status}) or 0

    before = {status: requests(status) for status in ("429", "503", "ok")}
    fake.script(EMBED, 429, 503)
    vector = await backend.embedder.embed_query("warranty", [])
    assert vector.shape == (DIM,)
    assert fake.requests[EMBED] == 3
    # Each attempt is counted by its status, for /metrics.
    assert {status: requests(status) - before[status] for status in before} == {"429": 1, "503": 1, "ok": 1}


async def test_persistent_500_gives_a_clear_error_after_all_attempts(fake, backend):
    fake.fail_always = 500
    with pytest.raises(RemoteError) as caught:
        await backend.embedder.embed_pages(pages(3), lambda n: None)
    assert fake.requests[EMBED] == 3
    assert str(caught.value).startswith(
        "Gemini kept answering 500 (server error) during page embedding after 3 attempts"
    )


async def test_persistent_429_message_names_rate_limiting(fake, backend):
    fake.fail_always = 429
    with pytest.raises(RemoteError, match=r"kept answering 429 \(rate limited\) during the reader call after 3"):
        await backend.reader.read("q", reader_pages(1), [])


async def test_client_errors_are_not_retried(fake, backend):
    fake.fail_always = 400
    with pytest.raises(RemoteError, match="refused the query embedding request.*400.*Persistent failure 400"):
        await backend.embedder.embed_query("x", [])
    assert fake.requests[EMBED] == 1


async def test_slow_answer_is_retried_after_the_timeout(fake, backend):
    fake.script(GENERATE, Hang(5))
    draft = await backend.reader.read("q", reader_pages(1), [])
    assert draft.citations[0].doc_id == "doc1"
    assert fake.requests[GENERATE] == 2


async def test_hanging_server_gives_a_timeout_error(fake, make_backend):
    b = make_backend(retry_attempts=2, request_timeout_s=0.2)
    fake.script(GENERATE, Hang(5), Hang(5))
    with pytest.raises(RemoteError, match=r"kept not answering within 0.2 s during the reader call after 2 attempts"):
        await b.reader.read("q", reader_pages(1), [])
    assert fake.requests[GENERATE] == 2


# -- reader -------------------------------------------------------------------------------------


async def test_reader_parses_json_into_a_draft_with_boxes(fake, backend):
    fake.replies.append(
        {
            "answer": "**Warranty:** 2 years.",
            "citations": [
                {"page_ref": "P2", "quote": "2 years warranty", "box_2d": [100, 200, 300, 400]},
                {"page_ref": "p1", "quote": "inverted", "box_2d": [300, 400, 100, 200]},
                {"page_ref": "P1", "quote": "out of range", "box_2d": [0, 0, 1200, 10]},
                {"page_ref": "P3", "quote": "no box"},
                {"page_ref": "P7", "quote": "not attached"},
            ],
            "limitations": ["The price is not stated.", ""],
            "topic": "warranty",
        }
    )
    draft = await backend.reader.read("How long is the warranty?", reader_pages(3), [])

    assert draft.markdown == "**Warranty:** 2 years."
    assert draft.topic == "warranty"
    assert draft.limitations == ("The price is not stated.",)
    c = draft.citations
    assert (c[0].doc_id, c[0].page, c[0].quote) == ("doc2", 12, "2 years warranty")
    assert c[0].box == pytest.approx((0.2, 0.1, 0.4, 0.3))
    assert (c[1].doc_id, c[1].page) == ("doc1", 11) and c[1].box == pytest.approx((0.2, 0.1, 0.4, 0.3))
    assert c[2].box is None and c[3].box is None and c[3].doc_id == "doc3"
    assert (c[4].doc_id, c[4].page, c[4].quote) == (UNKNOWN_DOC, 0, "not attached")


async def test_reader_request_labels_at_most_four_pages_and_adds_screenshots(fake, backend):
    shot = image_bytes(9, "PNG")
    await backend.reader.read("What is this part?", reader_pages(6), [QueryImage(shot, "image/png", "s.png")])
    (body,) = fake.generate_bodies()
    assert fake.bodies[-1].model == backend.embedder.calls.settings.reader_model
    parts = body["contents"][0]["parts"]
    labels = [p["text"] for p in parts if p.get("text", "").startswith("Page P")]
    assert labels == [f"Page P{i}: Manual {i}, page {i + 10}" for i in range(1, 5)]
    images = [decode_b64(p["inlineData"]["data"]) for p in parts if "inlineData" in p]
    assert images == [image_bytes(i) for i in range(1, 5)] + [shot]
    assert parts[0]["text"].startswith("Page P1") and "inlineData" in parts[1]  # label before its image
    assert parts[-1]["text"] == "Question: What is this part?"
    config = body["generationConfig"]
    # Gemini 3: temperature left at its default, a low thinking level instead
    assert "temperature" not in config and pick(config["thinkingConfig"], "thinkingLevel", "thinking_level") == "LOW"
    assert config["responseMimeType"] == "application/json"
    assert config["responseJsonSchema"]["properties"]["citations"]["items"]["properties"]["page_ref"]["enum"] == [
        "P1",
        "P2",
        "P3",
        "P4",
    ]
    assert "never guess" in body["systemInstruction"]["parts"][0]["text"].lower()


async def test_unknown_topic_becomes_other(fake, backend):
    fake.replies.append({"answer": "x", "citations": [], "limitations": [], "topic": "gossip"})
    assert (await backend.reader.read("q", reader_pages(1), [])).topic == "other"


async def test_non_json_reply_is_a_remote_error(fake, backend):
    fake.replies.append("Sorry, I can only chat.")
    with pytest.raises(RemoteError, match="unreadable answer during the reader call"):
        await backend.reader.read("q", reader_pages(1), [])


async def test_blocked_prompt_is_a_remote_error(fake, backend):
    fake.replies.append(Raw({"promptFeedback": {"blockReason": "SAFETY"}}))
    with pytest.raises(RemoteError, match=r"unreadable answer during the reader call \(blocked: SAFETY\)"):
        await backend.reader.read("q", reader_pages(1), [])


@pytest.mark.parametrize(
    "raw, box",
    [
        ([0, 0, 1000, 1000], (0.0, 0.0, 1.0, 1.0)),
        ([500, 250, 100, 750], (0.25, 0.1, 0.75, 0.5)),
        ([10, 10, 10, 20], None),  # no height
        ([-1, 0, 10, 10], None),
        ([1, 2, 3], None),
        ("0,0,1,1", None),
        ([True, 0, 10, 10], None),
    ],
)
def test_box_from_2d(raw, box):
    got = box_from_2d(raw)
    assert got == (pytest.approx(box) if box else None)


# -- context resolver ---------------------------------------------------------------------------


def exchanges(n: int, answer_len: int = 20) -> list[Exchange]:
    return [Exchange(f"question {i}?", f"answer{i} " + "x" * answer_len) for i in range(1, n + 1)]


async def test_no_history_makes_no_call(fake, backend):
    resolution = await backend.resolver.resolve("What is the warranty of the X200?", [])
    assert resolution.question == "What is the warranty of the X200?" and resolution.clarify is None
    assert fake.requests[GENERATE] == 0


async def test_history_gives_one_call_and_a_standalone_question(fake, backend):
    fake.replies.append(
        {
            "standalone_question": "What is the width of the X200?",
            "needs_clarification": False,
            "clarifying_question": "",
        }
    )
    resolution = await backend.resolver.resolve("and its width?", exchanges(2))
    assert resolution.question == "What is the width of the X200?" and resolution.clarify is None
    assert fake.requests[GENERATE] == 1
    assert fake.bodies[-1].model == backend.embedder.calls.settings.context_model
    config = fake.generate_bodies()[0]["generationConfig"]
    assert "temperature" not in config
    assert pick(config["thinkingConfig"], "thinkingLevel", "thinking_level") == "MINIMAL"


async def test_ambiguous_reference_asks_back(fake, backend):
    fake.replies.append(
        {
            "standalone_question": "",
            "needs_clarification": True,
            "clarifying_question": "Which model do you mean, X200 or X300?",
        }
    )
    resolution = await backend.resolver.resolve("and its width?", exchanges(1))
    assert resolution.question == "and its width?"
    assert resolution.clarify == "Which model do you mean, X200 or X300?"


async def test_history_is_limited_to_the_latest_four_exchanges(fake, backend):
    await backend.resolver.resolve("and the price?", exchanges(6))
    prompt = fake.generate_bodies()[0]["contents"][0]["parts"][0]["text"]
    assert "question 1?" not in prompt and "question 2?" not in prompt
    assert all(f"question {i}?" in prompt for i in (3, 4, 5, 6))
    assert prompt.index("question 3?") < prompt.index("question 6?")  # oldest first
    assert prompt.rstrip().endswith("Latest question: and the price?")


async def test_history_is_trimmed_to_12000_characters_keeping_the_newest(fake, backend):
    await backend.resolver.resolve("and the price?", exchanges(4, answer_len=5000))  # ~5,020 chars each
    prompt = fake.generate_bodies()[0]["contents"][0]["parts"][0]["text"]
    earlier = prompt.split("Earlier conversation:\n", 1)[1].split("\n\nLatest question:", 1)[0]
    assert "question 4?" in earlier and "question 3?" in earlier  # the two newest fit whole
    assert "question 2?" not in earlier and "question 1?" not in earlier
    assert 10_000 < len(earlier) <= 12_000


def test_history_text_limits():
    assert history_text(exchanges(3), 4, 12_000).count("Question:") == 3
    assert history_text(exchanges(3), 0, 12_000) == ""
    too_long = history_text([Exchange("old", "a"), Exchange("q", "b" * 20_000)], 4, 12_000)
    assert too_long.startswith("Question: q") and "old" not in too_long  # the newest is cut, not dropped
    assert 11_900 < len(too_long) < 12_100
    interpreted = history_text([Exchange("and its width?", "12 cm", interpreted="Width of the X200?")], 4, 1000)
    assert "understood as: Width of the X200?" in interpreted


def test_missing_key_is_refused():
    from core.config import Settings

    with pytest.raises(BadInput, match="GEMINI_API_KEY"):
        gemini_backend(Settings(backend="gemini"))


# -- what the strict fake revealed ----------------------------------------------------------------


async def test_rate_limits_wait_as_long_as_retry_info_asks_capped(fake, make_backend):
    b = make_backend(retry_attempts=3)
    waits = []

    async def record(seconds):
        waits.append(seconds)

    b.embedder.calls.sleep = record
    fake.retry_delay = "0.4s"
    fake.script(EMBED, 429)
    await b.embedder.embed_query("warranty", [])
    fake.retry_delay = "120s"  # a server asking for two minutes is not waited for in a chat
    fake.script(EMBED, 429)
    await b.embedder.embed_query("warranty", [])
    fake.script(EMBED, 503)  # no RetryInfo: the backoff's own delay
    await b.embedder.embed_query("warranty", [])
    assert waits[0] >= 0.4 and waits[1] == pytest.approx(30.0) and waits[2] < 0.1


async def test_one_question_has_one_deadline(fake, make_backend):
    from core import deadline

    b = make_backend(retry_attempts=5, request_timeout_s=5)
    fake.script(GENERATE, *[Hang(10)] * 5)
    with deadline.budget(0.5):
        with pytest.raises(RemoteError, match="no time was left for another attempt within the 0.5 s allowed"):
            await b.reader.read("q", reader_pages(1), [])
    assert fake.requests[GENERATE] == 1  # not five timeouts in a row


async def test_a_page_too_large_for_one_request_is_shrunk_not_refused(fake, backend):
    huge = pages(1, size=5 * 1024 * 1024)  # over 4 MiB once base64-encoded
    [vector] = await backend.embedder.embed_pages(huge, lambda n: None)
    assert vector.shape == (1, DIM) and not fake.refused


async def test_the_fake_refuses_what_the_api_refuses(fake, make_backend):
    from google.genai import types

    client = make_backend().embedder.calls.client.aio.models

    def content(*parts):
        return types.Content(parts=list(parts))

    png = types.Part.from_bytes(data=image_bytes(1, "PNG"), mime_type="image/png")
    cases = {
        "At most 6 images": [content(*[png] * 7)],
        "Unsupported MIME type: image/webp": [
            content(types.Part.from_bytes(data=image_bytes(1, "WEBP"), mime_type="image/webp"))
        ],
        "not image/png": [content(types.Part.from_bytes(data=image_bytes(1, "JPEG"), mime_type="image/png"))],
        "at most 100 requests": [content(types.Part.from_text(text="x"))] * 101,
        "payload size exceeds the limit: 4194304": [content(types.Part.from_text(text="x" * (5 << 20)))],
    }
    from google.genai import errors

    for message, contents in cases.items():
        with pytest.raises(errors.ClientError, match=message):
            await client.embed_content(
                model="gemini-embedding-2",
                contents=contents,
                config=types.EmbedContentConfig(output_dimensionality=DIM),
            )
    with pytest.raises(errors.ClientError, match="between 128 and 3072"):
        await client.embed_content(
            model="gemini-embedding-2",
            contents=[content(png)],
            config=types.EmbedContentConfig(output_dimensionality=64),
        )
    with pytest.raises(errors.ClientError, match="thinking_budget is not supported"):
        await client.generate_content(
            model="gemini-3.5-flash",
            contents="hi",
            config=types.GenerateContentConfig(thinking_config=types.ThinkingConfig(thinking_budget=128)),
        )
    fake.fail_always = 429
    with pytest.raises(errors.ClientError) as info:
        await client.embed_content(
            model="gemini-embedding-2",
            contents=[content(png)],
            config=types.EmbedContentConfig(output_dimensionality=DIM),
        )
    assert info.value.code == 429 and "RetryInfo" in str(info.value.details)
