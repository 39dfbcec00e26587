"""The Slack adapter end to end, offline: signed Events API requests and slash commands go through
Bolt (AsyncApp.async_dispatch) to the real Service (local backend) and out to a loopback fake of the
Slack Web API (tests/fakes/slack.py)."""

from __future__ import annotations

import io
import json
import time

import pymupdf
import pytest
from PIL import Image, ImageDraw
from slack_sdk.signature import SignatureVerifier

from bot.slack import render
from core.records import Answer, Citation, Exchange
from core.service import Service
from tests.adapters.slack_harness import (
    CHANNEL,
    PUMP_PDF,
    SECRET,
    SECRET_PDF,
    Harness,
    SpyService,
    answer_posts,
    base_settings,
    event_body,
    http_process,
    make_pdf,
    signed_headers,
)
from tests.conftest import closed_port
from tests.fakes.slack import BOT_ID, BOT_TOKEN, BOT_USER_ID, FakeSlack, block_error, block_text


async def test_mention_answers_in_thread_with_previews(slack: Harness):
    event, response = await slack.mention("What is the maximum flow rate of the X200 pump?")
    assert response.status == 200
    await slack.bot.drain()
    fake = slack.fake
    thread = fake.thread_text(event["ts"])
    assert "120" in thread
    assert "x200-datasheet.pdf, p. 1" in thread  # one sources line per citation
    # The answer was streamed into one message: task updates for the stages, then the Markdown, then
    # (at chat.stopStream) the sources and the feedback buttons.
    [start] = fake.calls_to("chat.startStream")
    assert start.params["thread_ts"] == event["ts"] and start.params["recipient_user_id"] == "U1"
    assert start.params["recipient_team_id"] == "T1"
    [message] = fake.streams(event["ts"])
    stream = message["stream"]
    assert stream["state"] == "stopped" and "120" in stream["markdown"]
    assert {k: t["status"] for k, t in stream["tasks"].items()} == {
        "search": "complete",
        "read": "complete",
        "cite": "complete",
    }
    assert stream["tasks"]["search"]["title"] == "Searching 1 document"
    assert stream["tasks"]["read"]["title"] == "Reading pp. 1, 2 of x200-datasheet.pdf"  # what the reader is given
    kinds = [b["type"] for b in stream["blocks"]]
    assert kinds[-1] == "context_actions" and "x200-datasheet.pdf, p. 1" in "\n".join(block_text(stream["blocks"]))
    assert not fake.posts(event["ts"])  # nothing else was posted: the evidence is in the upload below
    # Working indicator shown, then cleared.
    assert fake.calls_to("reactions.add")[0].params["name"] == "eyes"
    assert fake.calls_to("reactions.remove")
    statuses = [c.params.get("status") for c in fake.calls_to("assistant.threads.setStatus")]
    assert statuses[0] and statuses[-1] == ""
    # One upload message in the thread, with files titled "document p. N".
    [complete] = fake.calls_to("files.completeUploadExternal")
    assert complete.params["thread_ts"] == event["ts"] and complete.params["channel_id"] == CHANNEL
    titles = [f["title"] for f in complete.params["files"]]
    # Each image carries its sources line: document, page, and the quote it shows.
    quote = " ".join(slack.service.answers[0].citations[0].quote.split())
    assert titles and titles[0].startswith(f"x200-datasheet.pdf p. 1 — “{quote[:40]}")
    assert titles[1].startswith("x200-datasheet.pdf p. 1 (highlight) — “")
    assert all(t.startswith("x200-datasheet.pdf p. ") for t in titles) and len(titles) <= 10
    assert "Evidence for the answer above" in complete.params["initial_comment"]
    assert len(fake.uploads) == len(titles)
    assert all(
        data[:4] in (b"\x89PNG", b"\xff\xd8\xff\xe0", b"\xff\xd8\xff\xe1") or data[:2] == b"\xff\xd8"
        for data in fake.uploads.values()
    )
    # The turn was stored for follow-ups.
    history = await slack.store.history(("slack", "T1", CHANNEL, event["ts"]))
    assert history and history[0].cited and history[0].cited[0][1] == 1


async def test_follow_up_without_mention_uses_stored_history(slack: Harness, make_harness):
    first, _ = await slack.mention("What is the maximum flow rate of the X200 pump?")
    await slack.bot.drain()
    # A restart: a new app and a new store object on the same database still know the thread.
    await slack.store.close()
    again = await make_harness(settings=slack.settings, service=slack.service.real)
    follow, _ = await again.event(
        {
            "type": "message",
            "channel_type": "channel",
            "user": "U1",
            "text": "And what is its weight?",
            "thread_ts": first["ts"],
        }
    )
    await again.bot.drain()
    [turn] = again.service.turns
    assert turn.history and "flow rate" in turn.history[0].question
    assert turn.scope == "slack:T1/C100"  # the channel's collection, within the workspace's
    answer = again.service.answers[0]
    assert answer.changed_question and "X200" in answer.interpreted_question
    thread = again.fake.thread_text(first["ts"])
    assert f"Understood as: {answer.interpreted_question}" in thread  # in the thread-reading step
    assert "14 kg" in thread
    assert "x200-datasheet.pdf, p. 2" in thread
    # A message in a thread the bot never answered is left alone.
    await again.event(
        {
            "type": "message",
            "channel_type": "channel",
            "user": "U1",
            "text": "unrelated chat",
            "thread_ts": "1600000000.000001",
        }
    )
    await again.bot.drain()
    assert not again.fake.posts("1600000000.000001")
    assert len(again.service.turns) == 1


async def test_screenshot_is_downloaded_with_the_bot_token_and_used(slack: Harness):
    shot = Image.new("RGB", (420, 90), "white")
    ImageDraw.Draw(shot).text((10, 30), "X200 weight", fill="black")
    buf = io.BytesIO()
    shot.save(buf, "PNG")
    files = [slack.image_file("screenshot.png", buf.getvalue())]
    event, _ = await slack.mention("What does this label mean for the X200 pump?", files=files)
    await slack.bot.drain()
    [download] = slack.fake.calls_to("download")
    assert download.headers.get("Authorization") == f"Bearer {BOT_TOKEN}"
    [turn] = slack.service.turns
    assert len(turn.images) == 1 and turn.images[0].mime_type == "image/png" and turn.images[0].data == buf.getvalue()
    assert "x200-datasheet.pdf, p." in slack.fake.thread_text(event["ts"])


async def test_a_sliver_of_a_screenshot_is_named_and_the_question_answered(slack: Harness):
    # Before: OCR's ResizeImgError ended the question with "something went wrong", the file not named.
    files = []
    for name, size in (("tall.png", (1, 60000)), ("wide.png", (60000, 1))):
        buf = io.BytesIO()
        Image.new("RGB", size, "white").save(buf, "PNG")
        files.append(slack.image_file(name, buf.getvalue()))
    event, _ = await slack.mention("What is the X200 weight?", files=files)
    await slack.bot.drain()
    thread = slack.fake.thread_text(event["ts"])
    assert "tall.png: 1x60000 pixels is a sliver" in thread and "wide.png: 60000x1 pixels is a sliver" in thread
    assert "14 kg" in thread and "went wrong" not in thread


def screenshot_of(pdf: bytes, page: int, dpi: int = 200, noise: int = 6) -> bytes:
    """A real render of a page, with the faint noise of a photographed or scaled screen (so that it
    compresses like a real screenshot: a few hundred KB, not 40)."""
    import numpy as np

    doc = pymupdf.open(stream=pdf, filetype="pdf")
    pix = doc[page - 1].get_pixmap(dpi=dpi, clip=pymupdf.Rect(30, 40, 565, 200))
    doc.close()
    pixels = np.frombuffer(pix.samples, np.uint8).reshape(pix.h, pix.w, pix.n).astype(np.int16)
    pixels += np.random.default_rng(7).integers(-noise, noise + 1, pixels.shape, dtype=np.int16)
    buf = io.BytesIO()
    Image.fromarray(pixels.clip(0, 255).astype(np.uint8)).save(buf, "PNG")
    return buf.getvalue()


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
async def test_a_large_screenshot_arrives_whole_through_redirect_and_chunks(slack: Harness, chunked):
    # Before: response.content.read(n) returned the first ~128 KB that had arrived, and the
    # truncated PNG failed in OCR ("Sorry, something went wrong").
    slack.fake.download_chunked = chunked
    png = screenshot_of(PUMP_PDF, 2)
    assert 150_000 < len(png) < 2_000_000
    file = slack.image_file("retina.png", png)
    if chunked:
        del file["size"]  # some file objects come without a size
    event, _ = await slack.mention("", files=[file])
    await slack.bot.drain()
    assert slack.fake.calls_to("download_redirect") and slack.fake.calls_to("download")
    [turn] = slack.service.turns
    assert turn.images[0].data == png
    thread = slack.fake.thread_text(event["ts"])
    assert "went wrong" not in thread
    assert slack.service.answers[0].hits[0].page == 2  # the screenshot's page
    assert "x200-datasheet.pdf, p. 2" in thread


async def test_a_file_without_a_size_is_capped_while_downloading(make_harness, fake, tmp_path):
    harness = await make_harness(settings=base_settings(fake, tmp_path).with_(max_image_bytes=200_000))
    await harness.service.real.index_bytes(PUMP_PDF, "x200-datasheet.pdf", scope="slack:T1")
    png = screenshot_of(PUMP_PDF, 1)
    assert len(png) > 200_000
    file = harness.image_file("huge.png", png)
    del file["size"]
    fake.download_chunked = True  # no Content-Length either: only counting the bytes can tell
    event, _ = await harness.mention("What is the X200 weight?", files=[file])
    await harness.bot.drain()
    thread = fake.thread_text(event["ts"])
    assert "huge.png: it is over the 0.2 MB limit" in thread
    assert not harness.service.turns[0].images


async def test_a_download_cut_short_is_named_not_a_crash(slack: Harness):
    png = screenshot_of(PUMP_PDF, 1)
    slack.fake.download_drop_after = len(png) // 2
    event, _ = await slack.mention("What is the X200 weight?", files=[slack.image_file("cut.png", png)])
    await slack.bot.drain()
    thread = slack.fake.thread_text(event["ts"])
    assert "cut.png: the download from Slack failed (the connection dropped)" in thread
    assert "went wrong" not in thread and "14 kg" in thread  # the question is still answered


async def test_a_truncated_image_gets_a_clear_message(slack: Harness):
    png = screenshot_of(PUMP_PDF, 1)
    event, _ = await slack.mention("", files=[slack.image_file("half.png", png[: len(png) // 2])])
    await slack.bot.drain()
    thread = slack.fake.thread_text(event["ts"])
    assert "half.png" in thread and "damaged or incomplete" in thread
    assert not slack.service.turns


async def test_a_pdf_of_several_hundred_kb_is_indexed_from_a_message(slack: Harness):
    # Before: cut at ~128 KB, such PDFs were refused as "the PDF has no pages".
    doc = pymupdf.open(stream=SECRET_PDF, filetype="pdf")
    doc.embfile_add("scan-archive.bin", __import__("os").urandom(700_000))  # weight without pages
    big = doc.tobytes()
    doc.close()
    assert len(big) > 700_000
    pdf = slack.image_file("q9-big.pdf", big, mimetype="application/pdf")
    await slack.event({"type": "app_mention", "user": "UADMIN", "text": f"<@{BOT_USER_ID}> index this", "files": [pdf]})
    await slack.bot.drain()
    assert "Indexed q9-big.pdf" in slack.fake.calls_to("chat.update")[-1].params["text"]


async def test_autoindex_indexes_every_pdf_shared_in_that_channel_only(slack: Harness):
    share = {"type": "message", "subtype": "file_share", "user": "U1", "text": "new manual", "channel": CHANNEL}
    first = slack.image_file("q9-manual.pdf", SECRET_PDF, mimetype="application/pdf")
    await slack.event(share | {"files": [first]})  # autoindex off: a shared PDF is no one's business
    await slack.bot.drain()
    assert not slack.fake.calls_to("chat.postMessage") and not slack.fake.reactions

    await slack.command("autoindex on", user="UPLAIN")
    await slack.command("autoindex on")
    await slack.bot.drain()
    replies = [c.params["text"] for c in slack.fake.calls_to("response_url")]
    assert "Only workspace admins" in replies[0] and "Autoindex is on" in replies[1]
    event, _ = await slack.event(share | {"files": [first]})
    await slack.bot.drain()
    assert (CHANNEL, event["ts"], "inbox_tray") in slack.fake.reactions
    assert "Indexed q9-manual.pdf" in slack.fake.calls_to("chat.update")[-1].params["text"]  # its progress, then this
    thread = slack.fake.thread_text(event["ts"])
    assert "autoindex on" in thread and "remove <document>" in thread
    channel_docs = [d for d in await slack.service.real.documents(f"slack:T1/{CHANNEL}") if d.scope != "slack:T1"]
    assert [d.title for d in channel_docs] == ["q9-manual.pdf"]
    assert [d.scope for d in channel_docs] == [f"slack:T1/{CHANNEL}"]  # this channel's, not the workspace's
    assert "q9-manual.pdf" not in [d.title for d in await slack.service.real.documents("slack:T1/C_OTHER")]

    await slack.command("autoindex off")
    await slack.bot.drain()
    again, _ = await slack.event(share | {"files": [slack.image_file("q9-copy.pdf", SECRET_PDF, "application/pdf")]})
    await slack.bot.drain()
    assert not slack.fake.thread_text(again["ts"])


class CannedService:
    """A service whose answer is given: for checking what is posted, not how it is found."""

    def __init__(self, real: Service, answer: Answer):
        self.real, self.canned, self.turns, self.answers = real, answer, [], []

    async def answer(self, turn, events=None):
        self.turns.append(turn)
        self.answers.append(self.canned)
        return self.canned

    def __getattr__(self, name):
        return getattr(self.real, name)


async def test_a_very_long_answer_is_posted_within_block_kit_limits(make_harness, fake, tmp_path):
    # A reader's Markdown: a link the page printed is shown as written (core/markup.py), not followed.
    markdown = "\n\n".join(
        f"## Part {i}\n" + ("**Flow** is \\[listed\\](https://example.com/a) & more. " * 60) for i in range(40)
    )
    cites = tuple(Citation("d1", "manual.pdf", p, "quote " * 80) for p in range(1, 9))
    answer = Answer(
        "q",
        "the interpreted q",
        markdown,
        citations=cites,
        limitations=tuple(f"Limitation {i}: " + "x" * 400 for i in range(12)),
    )
    harness = await make_harness(service=CannedService(Service(base_settings(fake, tmp_path)), answer))
    event, _ = await harness.mention("q")
    await harness.bot.drain()
    posts = answer_posts(fake, event["ts"])
    assert len(posts) > 6  # split over several messages, none refused (the fixture checks)
    assert fake.rate_limited  # the burst met Slack's rate limit and was retried after Retry-After
    assert "Part 39" in fake.thread_text(event["ts"])


async def test_the_fake_refuses_what_slack_refuses():
    """The fake's own strictness, through the real slack_sdk client."""
    import aiohttp
    from slack_sdk.errors import SlackApiError
    from slack_sdk.web.async_client import AsyncWebClient

    server = FakeSlack().start()
    try:
        client = AsyncWebClient(token=BOT_TOKEN, base_url=server.api_url)
        section = {"type": "section", "text": {"type": "mrkdwn", "text": "x"}}
        bad = {
            "invalid_blocks": [dict(section)] * 51,
            "msg_blocks_too_long": [{"type": "section", "text": {"type": "mrkdwn", "text": "y" * 2900}}] * 5,
        }
        for error, blocks in bad.items():
            with pytest.raises(SlackApiError) as info:
                await client.chat_postMessage(channel=CHANNEL, text="t", blocks=blocks)
            assert info.value.response["error"] == error
        for blocks in (
            [{"type": "section", "text": {"type": "mrkdwn", "text": "z" * 3001}}],
            [{"type": "markdown", "text": "m" * 12_001}],
            [{"type": "nonsense"}],
        ):
            with pytest.raises(SlackApiError, match="invalid_blocks"):
                await client.chat_postMessage(channel=CHANNEL, text="t", blocks=blocks)
        with pytest.raises(SlackApiError, match="no_text"):
            await client.chat_postMessage(channel=CHANNEL)
        with pytest.raises(SlackApiError, match="message_not_found"):
            await client.chat_update(channel=CHANNEL, ts="1.2", text="t")
        limited = FakeSlack(scopes={"chat:write"}).start()
        try:
            other = AsyncWebClient(token=BOT_TOKEN, base_url=limited.api_url)
            with pytest.raises(SlackApiError, match="missing_scope"):
                await other.reactions_add(channel=CHANNEL, timestamp="1.2", name="eyes")
        finally:
            limited.stop()
        statuses = []
        async with aiohttp.ClientSession() as session:
            for _ in range(6):
                async with session.post(server.response_url("once"), json={"text": "hi"}) as response:
                    statuses.append(response.status)
        assert statuses == [200] * 5 + [404]
        # A burst of posts in one channel meets the rate limit, with a retry hint.
        with pytest.raises(SlackApiError) as info:
            for _ in range(20):
                await client.chat_postMessage(channel="CBURST", text="t")
        assert info.value.response.status_code == 429 and info.value.response.headers["Retry-After"] == "1"
    finally:
        server.stop()


async def test_a_mention_delivered_without_its_files_is_read_again(slack: Harness):
    png = screenshot_of(PUMP_PDF, 2)
    file = slack.image_file("shot.png", png)
    ts = slack._ts()
    # Slack knows the message with its file; the app_mention payload omits `files`.
    slack.fake.add_message(CHANNEL, {"ts": ts, "user": "U1", "text": f"<@{BOT_USER_ID}>", "files": [file]})
    await slack.event({"type": "app_mention", "user": "U1", "text": f"<@{BOT_USER_ID}>", "ts": ts})
    await slack.bot.drain()
    assert slack.fake.calls_to("conversations.replies")
    [turn] = slack.service.turns
    assert turn.images[0].data == png


async def test_missing_files_read_scope_is_reported(slack: Harness):
    png = io.BytesIO()
    Image.new("RGB", (40, 40), "red").save(png, "PNG")
    # A URL the fake does not know answers like Slack without files:read: 200 + the sign-in page.
    file = slack.image_file("label.png", png.getvalue(), url_name="label.png")
    file["url_private"] = file["url_private_download"] = slack.fake.base_url + "/files/not-allowed.png"
    event, _ = await slack.mention("What is the X200 weight?", files=[file])
    await slack.bot.drain()
    thread = slack.fake.thread_text(event["ts"])
    assert "label.png" in thread and "files:read" in thread and "sign-in page" in thread
    # The question itself is still answered, without the image.
    assert slack.service.turns and not slack.service.turns[0].images
    assert "14 kg" in thread


async def test_unusable_attachment_is_named(slack: Harness):
    files = [
        slack.image_file(
            "notes.docx",
            b"PK\x03\x04 not a picture",
            mimetype="application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        ),
        slack.image_file("broken.png", b"\x89PNG this is not really a png"),
    ]
    event, _ = await slack.mention("", files=files)
    await slack.bot.drain()
    thread = slack.fake.thread_text(event["ts"])
    assert "notes.docx" in thread and "PNG, JPEG or WebP" in thread
    assert "broken.png" in thread and "not a readable" in thread
    assert not slack.service.turns  # nothing usable was asked


async def test_retried_delivery_is_answered_once(slack: Harness):
    event, _ = await slack.mention("What is the maximum head of the X200?", event_id="EvRETRY1")
    await slack.event(dict(event), event_id="EvRETRY1", retry=1)
    await slack.bot.drain()
    # The same message also arriving as a `message` event (another event id) is not answered twice.
    await slack.event({**event, "type": "message", "channel_type": "channel"}, event_id="EvRETRY1msg")
    await slack.bot.drain()
    assert len(slack.service.turns) == 1
    assert len(answer_posts(slack.fake, event["ts"])) == 1
    assert "42" in slack.fake.thread_text(event["ts"])


async def test_own_and_other_bot_messages_are_ignored(slack: Harness):
    first, _ = await slack.mention("What is the X200 motor power?")
    await slack.bot.drain()
    turns = len(slack.service.turns)
    posts = len(slack.fake.posts())
    await slack.event(
        {
            "type": "message",
            "channel_type": "channel",
            "user": BOT_USER_ID,
            "bot_id": BOT_ID,
            "text": "The motor power is 1.1 kW",
            "thread_ts": first["ts"],
        }
    )
    await slack.event(
        {
            "type": "message",
            "channel_type": "channel",
            "subtype": "bot_message",
            "bot_id": "BOTHER",
            "text": f"<@{BOT_USER_ID}> what is its weight?",
            "thread_ts": first["ts"],
        }
    )
    await slack.event(
        {
            "type": "message",
            "channel_type": "im",
            "channel": "D1",
            "user": "UOTHER",
            "bot_id": "BOTHER",
            "text": "hello bot",
        }
    )
    await slack.bot.drain()
    assert len(slack.service.turns) == turns
    assert len(slack.fake.posts()) == posts


async def test_direct_message_is_answered(slack: Harness):
    event, _ = await slack.event(
        {
            "type": "message",
            "channel_type": "im",
            "channel": "D42",
            "user": "U1",
            "text": "How long is the X200 warranty?",
        }
    )
    await slack.bot.drain()
    assert "3 years" in slack.fake.thread_text(event["ts"])
    [message] = slack.fake.streams(event["ts"])
    assert message in slack.fake.messages["D42"] and "3 years" in message["stream"]["markdown"]


async def test_upload_failure_leaves_a_visible_note(slack: Harness):
    slack.fake.fail["files.completeUploadExternal"] = "internal_error"
    event, _ = await slack.mention("What is the X200 weight?")
    await slack.bot.drain()
    thread = slack.fake.thread_text(event["ts"])
    assert "14 kg" in thread and "previews could not be uploaded" in thread


async def test_slack_server_errors_and_rate_limits_are_retried(slack: Harness):
    slack.fake.http_errors["chat.appendStream"] = [503, 500]
    event, _ = await slack.mention("What is the X200 weight?")
    await slack.bot.drain()
    # the first append was sent three times (503, 500, then accepted): the stream is whole
    assert len(slack.fake.calls_to("chat.appendStream")) >= 3 and not slack.fake.http_errors["chat.appendStream"]
    [message] = slack.fake.streams(event["ts"])
    assert message["stream"]["state"] == "stopped" and "14 kg" in message["stream"]["markdown"]
    assert not slack.fake.posts(event["ts"])

    # Posted when done (streaming refused), the answer's posts are retried the same way.
    slack.fake.streaming_error = "method_not_supported_for_channel_type"
    slack.fake.http_errors["chat.postMessage"] = [503, 500]
    event, _ = await slack.mention("What is the X200 weight?")
    await slack.bot.drain()
    posts = [c.params.get("text", "") for c in slack.fake.calls if c.method == "chat.postMessage"]
    # the answer was sent three times (503, 500, then accepted) and no failure reached the thread
    assert sum("14 kg" in text for text in posts) == 3
    assert not any("went wrong" in text for text in posts)


async def test_bad_signature_is_rejected(slack: Harness):
    _, response = await slack.mention("What is the X200 weight?", secret="wrong-secret")
    assert response.status == 401
    await slack.bot.drain()
    assert not slack.service.turns


# ----- isolation and failures ------------------------------------------------------------------------


async def test_workspaces_are_isolated(slack: Harness, tmp_path):
    # T1 owns the Zephyr manual; T2 sees only the shared collection (the pump datasheet, shared).
    shared = tmp_path / "shared-pump.pdf"
    shared.write_bytes(make_pdf([["Borealis B7 heat exchanger", "Borealis B7 capacity: 35 kW."]]))
    await slack.service.real.index([str(shared)])
    await slack.service.real.index_bytes(SECRET_PDF, "zephyr-q9-manual.pdf", scope="slack:T1")
    event, _ = await slack.mention("What is the Zephyr Q9 blade pitch torque?", team="T2")
    await slack.bot.drain()
    thread = slack.fake.thread_text(event["ts"])
    answer = slack.service.answers[-1]
    assert slack.service.turns[-1].scope.startswith("slack:T2/")
    assert all(h.title != "zephyr-q9-manual.pdf" and h.title != "x200-datasheet.pdf" for h in answer.hits)
    assert "zephyr-q9-manual" not in thread and "85 Nm" not in thread and "x200-datasheet" not in thread
    uploaded = [f["title"] for c in slack.fake.calls_to("files.completeUploadExternal") for f in c.params["files"]]
    assert not any("zephyr" in t or "x200" in t for t in uploaded)
    # T2's document list shows only the shared collection; T1 sees its own as well.
    response = await slack.command("list", team="T2")
    assert "shared-pump.pdf" in response.body and "zephyr" not in response.body
    response = await slack.command("list", team="T1")
    assert "zephyr-q9-manual.pdf" in response.body
    # And T1 does get the manual.
    event, _ = await slack.mention("What is the Zephyr Q9 blade pitch torque?", team="T1")
    await slack.bot.drain()
    assert "85 Nm" in slack.fake.thread_text(event["ts"])


async def test_a_channels_documents_stay_in_that_channel(slack: Harness):
    hr = "C-HR"
    await slack.command("indexing channel", channel=hr)
    await slack.bot.drain()
    assert "searched in that channel only" in slack.fake.calls_to("response_url")[-1].params["text"]
    pdf = slack.image_file("q9.pdf", SECRET_PDF, mimetype="application/pdf")
    await slack.event(
        {"type": "app_mention", "user": "UADMIN", "text": f"<@{BOT_USER_ID}> index this", "files": [pdf], "channel": hr}
    )
    await slack.bot.drain()
    summary = slack.fake.calls_to("chat.update")[-1].params["text"]
    assert "Indexed q9.pdf" in summary and "Searched in this channel only" in summary
    question = "What is the Zephyr Q9 blade pitch torque?"
    # asked in its channel: answered from it, with its previews
    event, _ = await slack.event(
        {"type": "app_mention", "user": "U1", "text": f"<@{BOT_USER_ID}> {question}", "channel": hr}
    )
    await slack.bot.drain()
    assert "85 Nm" in slack.fake.thread_text(event["ts"])
    assert any(
        "q9" in f["title"] for c in slack.fake.calls_to("files.completeUploadExternal") for f in c.params["files"]
    )
    uploads = len(slack.fake.calls_to("files.completeUploadExternal"))
    # asked in another channel of the workspace, and in another workspace: nothing of it shows
    for team in ("T1", "T2"):
        event, _ = await slack.mention(question, team=team)
        await slack.bot.drain()
        assert "85 Nm" not in slack.fake.thread_text(event["ts"]) and "q9" not in slack.fake.thread_text(event["ts"])
    assert not any(
        "q9" in f["title"]
        for c in slack.fake.calls_to("files.completeUploadExternal")[uploads:]
        for f in c.params["files"]
    )
    listed = (await slack.command("list", channel=hr)).body
    assert "This channel only" in listed and "q9.pdf" in listed and "x200-datasheet.pdf" in listed
    assert "q9.pdf" not in (await slack.command("list")).body
    # removing or moving it from another channel does not find it
    for attempt in ("remove q9.pdf", "scope q9.pdf workspace"):
        await slack.command(attempt)
        await slack.bot.drain()
        assert "No document called 'q9.pdf' here" in slack.fake.calls_to("response_url")[-1].params["text"]
    assert [d.scope for d in await slack.service.real.documents(f"slack:T1/{hr}") if d.title == "q9.pdf"] == [
        f"slack:T1/{hr}"
    ]
    # an admin gives it to the whole workspace: every channel of it finds it, no other workspace
    await slack.command("scope q9.pdf workspace", channel=hr)
    await slack.bot.drain()
    assert "q9.pdf is now searched in the whole workspace" in slack.fake.calls_to("response_url")[-1].params["text"]
    assert "q9.pdf" in (await slack.command("list")).body
    event, _ = await slack.mention(question)
    await slack.bot.drain()
    assert "85 Nm" in slack.fake.thread_text(event["ts"])
    assert "q9.pdf" not in (await slack.command("list", team="T2")).body
    assert "chat indexing goes to: the channel" in (await slack.command("status", channel=hr)).body


async def test_gemini_failure_reaches_the_thread_as_a_short_message(fake, make_harness, tmp_path, caplog):
    settings = base_settings(fake, tmp_path).with_(
        backend="gemini",
        gemini_api_key="x",
        gemini_base_url=f"http://127.0.0.1:{closed_port()}",
        retry_attempts=2,
        retry_initial_delay_s=0.01,
        request_timeout_s=5,
    )
    harness = await make_harness(settings=settings)
    root = "1700000099.000001"
    fake.add_message(CHANNEL, {"ts": root, "user": "U1", "text": "What is the X200 flow rate?"})  # the thread's root
    # An earlier turn in the thread: the follow-up needs Gemini to rewrite the question.
    await harness.store.add(("slack", "T1", CHANNEL, root), Exchange("What is the X200 flow rate?", "120 l/min"))
    event, _ = await harness.event(
        {"type": "message", "channel_type": "channel", "user": "U1", "text": "and its weight?", "thread_ts": root}
    )
    await harness.bot.drain()
    # The failure ends the streamed message it interrupted: the step it stopped at is marked failed.
    assert not fake.posts(root)
    [message] = fake.streams(root)
    stream = message["stream"]
    assert stream["state"] == "stopped" and stream["tasks"]["context"]["status"] == "error"
    text = stream["markdown"]
    assert "Gemini" in text and len(text) < 400 and "Traceback" not in text
    assert fake.calls_to("reactions.remove")  # the working indicator is cleared on failure too


async def test_the_workspace_limit_usage_and_refusal_follow_one_workspace(make_harness, fake, tmp_path):
    # Before: the workspace was read from an event's team_id first, which a channel shared from another
    # workspace sets to that workspace: its questions were counted, and refused, against the wrong one.
    harness = await make_harness(settings=base_settings(fake, tmp_path).with_(workspace_questions_per_day=2))
    for n in range(2):
        await harness.mention(f"What is the weight, take {n}?", team="T1")
    await harness.bot.drain()
    # A channel T2 shares with T1, where the app is installed: Slack names T2 as the event's team_id and the
    # installation in its authorizations. It is T1's question.
    shared = {
        "type": "app_mention",
        "user": "U7",
        "text": f"<@{BOT_USER_ID}> What is the X200 weight?",
        "ts": harness._ts(),
        "channel": "CSHARED",
        "event_ts": "1",
        "team": "T2",
    }
    fake.add_message("CSHARED", {k: shared[k] for k in ("ts", "user", "text")})
    body = {
        "token": "legacy",
        "team_id": "T2",
        "api_app_id": "A1",
        "type": "event_callback",
        "event_id": "EvSHARED",
        "event_time": int(time.time()),
        "event": shared,
        "authorizations": [{"team_id": "T1", "user_id": BOT_USER_ID, "is_bot": True}],
    }
    await harness.dispatch(json.dumps(body), "application/json")
    other, _ = await harness.mention("What is the X200 weight?", team="T2")  # T2's own installation
    await harness.bot.drain()
    refusals = [p for p in fake.posts(shared["ts"]) if "This workspace has asked 2 questions" in p.params["text"]]
    assert len(refusals) == 1  # posted once
    assert "has asked" not in fake.thread_text(other["ts"])
    t1 = (await harness.command("status", team="T1")).body
    t2 = (await harness.command("status", team="T2")).body
    assert "usage today (UTC): 2 questions" in t1 and "usage today (UTC): 1 question," in t2


# ----- /pixelrag --------------------------------------------------------------------------------------


async def test_index_url_acknowledged_with_progress_and_summary(slack: Harness):
    url = slack.fake.add_public_file("q9-manual.pdf", SECRET_PDF)
    response = await slack.command(f"index {url}")
    assert response.status == 200 and "Working on" in response.body
    await slack.bot.drain()
    fake = slack.fake
    [progress] = [c for c in fake.posts() if "Indexing" in c.params["text"]]
    assert progress.params["channel"] == CHANNEL
    updates = fake.calls_to("chat.update")
    assert updates, "progress message never edited"
    final = updates[-1].params["text"]
    assert "Indexed" in final and "q9-manual.pdf" in final and "1 page." in final
    assert all(u.params["ts"] == fake.messages[CHANNEL][0]["ts"] for u in updates)
    assert [d.title for d in await slack.service.real.documents("slack:T1") if d.title == "q9-manual.pdf"]
    assert not [d for d in await slack.service.real.documents("slack:T2") if d.title == "q9-manual.pdf"]


async def test_a_replica_without_a_worker_leaves_the_index_to_one_and_says_how_it_ended(make_harness, fake, tmp_path):
    # PIXELRAG_WORKERS=0: the bot only queues; a worker of another process indexes, and the bot's progress
    # message, fed from what that worker records, ends with the summary.
    import asyncio

    from core import Service, Worker, job_queue, job_runner, told_later

    settings = base_settings(fake, tmp_path).with_(workers=0)
    slack = await make_harness(settings)
    url = fake.add_public_file("q9-manual.pdf", SECRET_PDF)
    assert (await slack.command(f"index {url}")).status == 200
    await asyncio.sleep(1.5)
    assert not await slack.service.real.documents("slack:T1")  # nobody here indexes it
    async with Service(settings) as elsewhere:
        queue = await job_queue(settings).open()
        stop = asyncio.Event()
        working = asyncio.create_task(Worker(queue, job_runner(elsewhere, queue), name="elsewhere").work(stop))
        await slack.bot.drain()
        stop.set()
        await working
        [job] = await queue.jobs()
        assert (job.worker, job.state, job.notify) == ("elsewhere", "done", f"slack:T1:{CHANNEL}")
        assert await told_later(queue, "slack") == []  # the bot told it itself
        await queue.close()
    final = fake.calls_to("chat.update")[-1].params["text"]
    assert "Indexed" in final and "q9-manual.pdf" in final and "1 page." in final
    assert [d.title for d in await slack.service.real.documents("slack:T1")] == ["q9-manual.pdf"]


async def test_a_password_in_an_index_address_appears_in_no_message(slack: Harness):
    # Before: "Indexing http://admin:hunter2@…" was posted to the channel, and the 404 repeated it.
    good = slack.fake.add_public_file("q9-manual.pdf", SECRET_PDF).replace("://", "://admin:hunter2@")
    gone = good.replace("q9-manual.pdf", "gone.pdf?token=s3cr3t&page=1")
    for url in (good, gone):
        response = await slack.command(f"index {url}")
        assert "hunter2" not in response.body and "s3cr3t" not in response.body
    mention, _ = await slack.event({"type": "app_mention", "user": "UADMIN", "text": f"<@{BOT_USER_ID}> index {gone}"})
    await slack.bot.drain()
    shown = json.dumps([c.params for c in slack.fake.calls])
    assert "hunter2" not in shown and "s3cr3t" not in shown
    assert "http://***@127.0.0.1" in shown and "HTTP 404" in shown and "token=***" in shown
    status = await slack.service.real.status("slack:T1")
    [doc] = [d for d in await slack.service.real.documents("slack:T1") if d.title == "q9-manual.pdf"]
    assert "hunter2" not in json.dumps(status) + doc.title + doc.file_name


async def test_watch_keeps_an_address_current_for_the_channel_and_status_shows_it(slack: Harness):
    from core import Worker, job_queue, job_runner

    url = slack.fake.add_public_file("q9-manual.pdf", SECRET_PDF)
    await slack.command(f"watch {url}", user="UPLAIN")
    await slack.command(f"watch <{url}> channel")
    await slack.command(f"watch {url} channel")  # twice: said, not added again
    await slack.bot.drain()
    replies = [c.params["text"] for c in slack.fake.calls_to("response_url")]
    assert "Only workspace admins" in replies[0]
    assert "Watching" in replies[1] and "this channel" in replies[1] and "checked every day" in replies[1]
    assert "watched here already" in replies[2]
    assert not slack.fake.calls_to("public_download")  # a worker does the checks, not the command

    service = slack.service.real
    queue = await job_queue(service.settings).open()
    try:
        worker = Worker(queue, job_runner(service, queue), name="test")
        await worker.schedule()  # the new source is due at once
        [check] = await queue.jobs()
        assert (check.kind, check.scope) == ("check", f"slack:T1/{CHANNEL}")
        await worker.do(await queue.take("test", 60))
    finally:
        await queue.close()
    assert [d.title for d in await service.documents(f"slack:T1/{CHANNEL}") if d.scope.endswith(CHANNEL)] == [
        "q9-manual.pdf"
    ]
    status = (await slack.command("status")).body
    assert "watched sources" in status and "q9-manual.pdf" in status and "indexed" in status
    assert "q9-manual" not in (await slack.command("status", team="T2")).body  # another workspace sees none
    await slack.command(f"unwatch {url}")
    await slack.bot.drain()
    assert "No longer watching" in slack.fake.calls_to("response_url")[-1].params["text"]
    assert "watched sources: none" in (await slack.command("status")).body


async def test_index_outside_the_bots_channels_reports_through_the_response_url(slack: Harness):
    slack.fake.fail["chat.postMessage"] = "not_in_channel"
    url = slack.fake.add_public_file("q9-manual.pdf", SECRET_PDF)
    await slack.command(f"index {url}")
    await slack.bot.drain()
    replies = [c.params["text"] for c in slack.fake.calls_to("response_url")]
    assert "Indexing" in replies[0] and "Indexed q9-manual.pdf" in replies[-1]


async def test_index_refused_for_non_admin(slack: Harness):
    url = slack.fake.add_public_file("q9-manual.pdf", SECRET_PDF)
    response = await slack.command(f"index {url}", user="UPLAIN")
    assert response.status == 200
    await slack.bot.drain()
    [reply] = slack.fake.calls_to("response_url")
    assert "Only workspace admins" in reply.params["text"]
    assert not slack.fake.calls_to("public_download")
    assert slack.fake.calls_to("users.info")[0].params["user"] == "UPLAIN"


async def test_an_admin_is_not_refused_when_slack_cannot_say_who_is_admin(slack: Harness):
    # Before: users.info failing (500) told an admin that only admins may index.
    url = slack.fake.add_public_file("q9-manual.pdf", SECRET_PDF)
    slack.fake.http_errors["users.info"] = [500] * 6  # beyond the client's two retries, twice
    await slack.command(f"index {url}")
    event, _ = await slack.event({"type": "app_mention", "user": "UADMIN", "text": f"<@{BOT_USER_ID}> index {url}"})
    await slack.bot.drain()
    [reply] = slack.fake.calls_to("response_url")
    for text in (reply.params["text"], slack.fake.thread_text(event["ts"])):
        assert "could not be checked" in text and "users.info" in text and "Only workspace admins" not in text
    assert not slack.fake.calls_to("public_download")


async def test_index_users_setting_allows_a_listed_user(make_harness, fake, tmp_path):
    harness = await make_harness(settings=base_settings(fake, tmp_path, SLACK_INDEX_USERS="UPLAIN, UOTHER"))
    url = fake.add_public_file("pump.pdf", PUMP_PDF)
    await harness.command(f"index {url}", user="UPLAIN")
    await harness.bot.drain()
    assert [d.title for d in await harness.service.real.documents("slack:T1")] == ["pump.pdf"]


async def test_index_this_on_a_message_with_a_pdf(slack: Harness):
    pdf = slack.image_file("q9.pdf", SECRET_PDF, mimetype="application/pdf")
    event, _ = await slack.event(
        {"type": "app_mention", "user": "UADMIN", "text": f"<@{BOT_USER_ID}> index this", "files": [pdf]}
    )
    await slack.bot.drain()
    summary = slack.fake.calls_to("chat.update")[-1].params["text"]
    assert "Indexed q9.pdf" in summary and "channel only" not in summary  # the workspace's, by default
    assert "q9.pdf" in [d.title for d in await slack.service.real.documents("slack:T1")]


async def test_second_index_of_the_same_document_is_refused_politely(slack: Harness):
    url = slack.fake.add_public_file("q9-manual.pdf", SECRET_PDF)
    await slack.command(f"index {url}")
    await slack.command(f"index {url}")
    await slack.bot.drain()
    finals = [
        c.params["text"] for c in slack.fake.calls_to("chat.update") if ":hourglass_flowing" not in c.params["text"]
    ]
    assert any("Indexed" in t for t in finals)
    assert any("already being indexed" in t for t in finals)
    assert len(slack.fake.calls_to("public_download")) == 1  # before: downloaded (and built) twice


async def test_a_commands_reply_the_response_url_refuses_arrives_another_way(slack: Harness):
    # Before: after the response_url's five uses (or when it failed) the reply was only logged.
    for n in range(5):
        await slack.command(f"remove nothing-{n}")
        await slack.bot.drain()
    slack.fake.expected_refusals += [("response_url", "used_url")] * 2
    await slack.command("remove nothing-5")
    await slack.bot.drain()
    [shown] = slack.fake.ephemeral
    assert shown["user"] == "UADMIN" and shown["channel"] == CHANNEL and "No document called" in shown["text"]
    slack.fake.outside.add(CHANNEL)  # the bot was removed from the channel meanwhile
    slack.fake.expected_refusals += [("chat.postEphemeral", "not_in_channel")]
    await slack.command("remove nothing-6")
    await slack.bot.drain()
    [dm] = slack.fake.posts()[-1:]
    assert dm.params["channel"] == "UADMIN" and "No document called" in dm.params["text"]


async def test_unknown_subcommand_gets_help(slack: Harness):
    response = await slack.command("frobnicate now")
    assert response.status == 200 and "/pixelrag index <url>" in response.body
    response = await slack.command("")
    assert "/pixelrag list" in response.body


async def test_remove_and_status(slack: Harness):
    response = await slack.command("status")
    assert "pixelrag status" in response.body and "documents: 1" in response.body
    await slack.service.real.index_bytes(SECRET_PDF, "q9-manual.pdf", scope="slack:T2")
    # Another workspace's documents are not counted, nor is the server's index folder shown.
    response = await slack.command("status")
    assert "documents: 1" in response.body and "pages: 2" in response.body and "index_dir" not in response.body
    response = await slack.command("status", team="T2")
    assert "documents: 1" in response.body and "pages: 1" in response.body
    await slack.command("remove x200-datasheet.pdf", user="UPLAIN")
    await slack.bot.drain()
    assert "Only workspace admins" in slack.fake.calls_to("response_url")[-1].params["text"]
    await slack.command("remove x200-datasheet.pdf")
    await slack.bot.drain()
    assert "Removed x200-datasheet.pdf" in slack.fake.calls_to("response_url")[-1].params["text"]
    assert not (await slack.service.real.documents("slack:T1"))


# ----- rendering (no network) -----------------------------------------------------------------------


def test_long_answers_are_split_within_slack_limits():
    markdown = "\n\n".join(
        f"## Part {i}\n" + ("**Flow** rate is [listed](https://example.com/a) & more. " * 40) for i in range(30)
    )
    cites = tuple(Citation("d1", "manual.pdf", p, "quote text") for p in range(1, 5))
    answer = Answer("q", "the q", markdown, citations=cites, notes=("One citation was dropped.",))
    messages = render.render_answer(answer)
    assert len(messages) > 1
    for message in messages:
        assert message["text"] and len(message["blocks"]) <= 50
        assert block_error(message["blocks"]) is None  # the fake's Block Kit rules, markdown totals included
        for block in message["blocks"]:
            assert len(render._block_chars(block)) <= (10_000 if block["type"] == "markdown" else 3000)
            if block["type"] == "markdown":  # cut at paragraph ends
                assert block["text"].startswith("## Part ") and block["text"].endswith("& more.")
    # The reader's Markdown is sent as written, in markdown blocks: no mrkdwn conversion.
    pieces = [b["text"] for m in messages for b in m["blocks"] if b["type"] == "markdown"]
    assert " ".join("\n\n".join(pieces).split()) == " ".join(markdown.split())  # split_text trims at the cuts
    text = "\n".join(render._block_chars(m["blocks"]) for m in messages)
    assert "Interpreted as: the q" in text
    assert all(f"manual.pdf, p. {p}" in text for p in range(1, 5))
    assert ":warning: One citation was dropped." in text


def test_clarifying_question_is_posted_as_a_question():
    answer = Answer(
        "and its width?",
        "and its width?",
        "Which product do you mean?",
        clarifying_question="Which product do you mean?",
    )
    [message] = render.render_answer(answer)
    assert message["text"] == "Which product do you mean?"
    assert message["blocks"][0]["text"]["text"].startswith(":question:")


def test_upload_items_are_capped_and_titled(tmp_path):
    cites = [Citation("d1", "manual.pdf", p, "q", preview=b"x", crop=b"x") for p in range(1, 8)]
    items = render.upload_items(Answer("q", "q", "a", citations=tuple(cites)))
    assert len(items) == 10
    assert items[0]["title"] == "manual.pdf p. 1 — “q”" and items[1]["title"] == "manual.pdf p. 1 (highlight) — “q”"


# ----- serve() ------------------------------------------------------------------------------------------


async def test_serve_http_verifies_signatures_and_answers(fake, tmp_path):
    import asyncio

    import aiohttp

    from bot.slack import serve
    from core.errors import BadInput

    settings = base_settings(fake, tmp_path)
    with pytest.raises(BadInput, match="SLACK_APP_TOKEN"):
        await serve(settings)  # Socket Mode needs the app-level token
    port = closed_port()
    server = asyncio.ensure_future(serve(settings, http=True, port=port))
    try:
        event, raw = event_body(fake, "1700009999.000001", "what is the X200 weight?", "EvHTTP1")
        url = f"http://127.0.0.1:{port}/slack/events"
        async with aiohttp.ClientSession() as session:
            for _ in range(200):  # until the server is listening
                try:
                    async with session.post(
                        url, data=raw, headers=signed_headers(raw, signature="v0=" + "0" * 64)
                    ) as r:
                        assert r.status == 401
                        break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.05)
            async with session.post(url, data=raw, headers=signed_headers(raw)) as response:
                assert response.status == 200
        posts = await fake.wait_for(lambda: fake.posts(event["ts"]))
        assert "No documents are indexed here yet" in fake.thread_text(event["ts"])
        assert posts[0].headers["Authorization"] == f"Bearer {BOT_TOKEN}"
    finally:
        server.cancel()
        with pytest.raises(asyncio.CancelledError):
            await server


async def test_events_are_not_acknowledged_while_slack_refuses_the_token(fake, tmp_path):
    # Before: Bolt's auth.test failed, the delivery got 200 and was dropped, and /readyz said ready.
    import asyncio

    import aiohttp

    fake.fail["auth.test"] = "invalid_auth"
    fake.retry_after = "0"
    port = closed_port()
    proc = await http_process(fake, port, tmp_path / "index", tmp_path)
    event, raw = event_body(fake, "1700009999.000002", "what is the X200 weight?", "EvAUTH1")
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as session:

            async def deliver(retry: int) -> int:
                async with session.post(f"{base}/slack/events", data=raw, headers=signed_headers(raw, retry)) as r:
                    return r.status

            async def ready() -> tuple[int, str]:
                async with session.get(f"{base}/readyz") as response:
                    return response.status, await response.text()

            for _ in range(600):  # until the process listens (it loads the local models first)
                try:
                    status = await deliver(0)
                    break
                except aiohttp.ClientConnectionError:
                    assert proc.returncode is None, (await proc.stderr.read()).decode()
                    await asyncio.sleep(0.1)
            assert status == 503
            assert await ready() == (503, "Slack refuses the bot token (invalid_auth)\n")
            del fake.fail["auth.test"]
            fake.http_errors["auth.test"] = [500] * 3  # beyond the client's own two retries
            assert await deliver(1) == 503
            assert await ready() == (503, "Slack's auth.test failed (HTTP 500)\n")
            fake.limit_next["auth.test"] = 3
            assert await deliver(2) == 503
            assert await ready() == (503, "Slack's auth.test failed (HTTP 429)\n")
            assert not fake.posts(event["ts"])
            assert await deliver(3) == 200  # Slack takes the token again: this delivery is answered
            await fake.wait_for(lambda: fake.posts(event["ts"]))
            assert "No documents are indexed here yet" in fake.thread_text(event["ts"])
            assert await ready() == (200, "ready\n")
    finally:
        proc.terminate()
        _, err = await proc.communicate()
    assert b"Traceback" not in err and b"Failed to authorize" not in err, err.decode()[-3000:]


async def test_serve_http_refuses_what_slack_would_not_send_with_400_and_one_line(fake, tmp_path, caplog):
    import asyncio
    import logging

    import aiohttp

    from bot.slack import serve

    port = closed_port()
    server = asyncio.ensure_future(serve(base_settings(fake, tmp_path), http=True, port=port))
    message = {
        "type": "event_callback",
        "team_id": "T1",
        "event": {"type": "app_mention", "user": "U1", "text": f"<@{BOT_USER_ID}> hi"},
    }
    bodies = [
        ("not json", "application/json"),
        ("[1, 2]", "application/json"),
        (json.dumps(message), "application/json"),  # a message event without ts or channel
        ("[" * 50_000 + "]" * 50_000, "application/json"),
        (json.dumps({"type": "event_callback", "event": "text"}), "application/json"),
        ("payload=%%%garbage", "application/x-www-form-urlencoded"),
        ("payload=[1]", "application/x-www-form-urlencoded"),
        ("a&&=b=c", "application/x-www-form-urlencoded"),
    ]
    url = f"http://127.0.0.1:{port}/slack/events"
    try:
        async with aiohttp.ClientSession() as session:

            async def post(raw: str, content_type: str) -> int:
                stamp = str(int(time.time()))
                headers = {
                    "Content-Type": content_type,
                    "X-Slack-Request-Timestamp": stamp,
                    "X-Slack-Signature": SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=raw),
                }
                async with session.post(url, data=raw.encode(), headers=headers) as response:
                    return response.status

            for _ in range(200):  # until the server is listening
                try:
                    await post("{}", "application/json")
                    break
                except aiohttp.ClientConnectionError:
                    await asyncio.sleep(0.05)
            with caplog.at_level(logging.WARNING):
                caplog.clear()
                assert [await post(raw, kind) for raw, kind in bodies] == [400] * len(bodies)
            lines = [r for r in caplog.records if r.name.startswith(("pixelrag", "aiohttp", "slack_bolt"))]
            assert len(lines) == len(bodies) and not any(r.exc_info for r in lines), caplog.text
            assert all("Slack would not send" in r.getMessage() for r in lines)
            # Headers no Slack request has: a timestamp that is not a number (before: Bolt's ValueError, a
            # traceback and a 500 that invites retries), a 100 KB header (before: aiohttp's traceback).
            caplog.clear()
            with caplog.at_level(logging.WARNING):
                for headers in ({"X-Slack-Request-Timestamp": "abc"}, {"X-Padding": "a" * 100_000}):
                    async with session.post(
                        url,
                        data=b"{}",
                        headers={"Content-Type": "application/json", "X-Slack-Signature": "v0=00", **headers},
                    ) as response:
                        assert response.status == 400
            lines = [r for r in caplog.records if r.name.startswith(("pixelrag", "aiohttp", "slack_bolt"))]
            assert len(lines) == 2 and not any(r.exc_info or r.levelno > logging.WARNING for r in lines), caplog.text
            # A request Slack does send is still answered.
            event = {
                "type": "app_mention",
                "user": "U1",
                "text": f"<@{BOT_USER_ID}> hi",
                "ts": "1700009998.000001",
                "channel": CHANNEL,
            }
            fake.add_message(CHANNEL, {"ts": event["ts"], "user": "U1", "text": event["text"]})
            assert await post(json.dumps({**message, "event_id": "EvOK", "event": event}), "application/json") == 200
        await fake.wait_for(lambda: fake.posts(event["ts"]))
    finally:
        server.cancel()
        with pytest.raises(asyncio.CancelledError):
            await server


async def test_a_screenshot_question_through_the_real_pixelrag_slack_http_process(
    fake, brochure, brochure_index, tmp_path
):
    """The command a team runs, as its own process: a signed event with a screenshot (a real render of
    the brochure's scanned service page, a few hundred KB) downloaded in chunks through a redirect."""
    import asyncio
    import shutil

    import aiohttp

    index = tmp_path / "index"
    shutil.copytree(brochure_index, index)
    doc = pymupdf.open(brochure)
    page = doc[3]
    shot = page.get_pixmap(
        dpi=200, clip=pymupdf.Rect(0, page.rect.height * 0.1, page.rect.width, page.rect.height * 0.6)
    ).tobytes("png")
    doc.close()
    assert 150_000 < len(shot) < 2_000_000
    fake.download_chunked = True
    url = fake.add_private_file("warranty.png", shot, "image/png")
    port = closed_port()
    proc = await http_process(fake, port, index, tmp_path)
    try:
        ts = "1700077777.000001"
        event = {
            "type": "app_mention",
            "user": "U1",
            "text": f"<@{BOT_USER_ID}> what does this say about it?",
            "ts": ts,
            "channel": CHANNEL,
            "files": [
                {
                    "id": "FSHOT",
                    "name": "warranty.png",
                    "mimetype": "image/png",
                    "filetype": "png",
                    "url_private": url,
                    "url_private_download": url,
                }
            ],
        }
        fake.add_message(CHANNEL, {"ts": ts, "user": "U1", "text": event["text"], "files": event["files"]})
        raw = json.dumps(
            {
                "team_id": "T1",
                "api_app_id": "A1",
                "type": "event_callback",
                "event_id": "EvSHOT",
                "event_time": int(time.time()),
                "event": event,
            }
        )
        target = f"http://127.0.0.1:{port}/slack/events"
        async with aiohttp.ClientSession() as session:
            for _ in range(600):  # until the process listens (it loads the local models first)
                try:
                    stamp = str(int(time.time()))
                    headers = {
                        "Content-Type": "application/json",
                        "X-Slack-Request-Timestamp": stamp,
                        "X-Slack-Signature": SignatureVerifier(SECRET).generate_signature(timestamp=stamp, body=raw),
                    }
                    async with session.post(target, data=raw, headers=headers) as response:
                        assert response.status == 200
                        break
                except aiohttp.ClientConnectionError:
                    assert proc.returncode is None, (await proc.stderr.read()).decode()
                    await asyncio.sleep(0.1)
            # The probes, on the Events API's port, answer while the screenshot is being read.
            assert not fake.calls_to("files.completeUploadExternal")
            for path, expected in (("/healthz", "ok\n"), ("/readyz", "ready\n")):
                async with session.get(f"http://127.0.0.1:{port}{path}") as response:
                    assert (response.status, await response.text()) == (200, expected)
        await fake.wait_for(lambda: fake.calls_to("files.completeUploadExternal"), timeout=120)
        thread = fake.thread_text(ts)
        assert "36 months" in thread and "p. 4" in thread, thread
        assert fake.calls_to("download")[0].headers["Authorization"] == f"Bearer {BOT_TOKEN}"
        assert "went wrong" not in thread
    finally:
        proc.terminate()
        await proc.wait()


# ----- faults: a bot that dies mid-answer, a Slack that refuses the answer -----------------------------


class StuckService(SpyService):
    """Answers never finish: the process 'dies' while working on them."""

    stuck: list = []  # strong references: a pending task nobody holds is garbage-collected

    async def answer(self, turn, events=None):
        import asyncio

        self.turns.append(turn)
        gate = asyncio.Event()
        self.stuck.append((asyncio.current_task(), gate))
        await gate.wait()


async def test_a_question_in_flight_when_the_bot_dies_is_answered_after_the_restart(make_harness, fake, tmp_path):
    real = Service(base_settings(fake, tmp_path))
    await real.index_bytes(PUMP_PDF, "x200-datasheet.pdf", scope="slack:T1")
    first = await make_harness(service=StuckService(real))
    event, _ = await first.mention("What is the X200 weight?", event_id="EvDIES")
    await fake.wait_for(lambda: first.service.turns)  # it is working on it...
    # ...and is killed: no cleanup runs. A new process opens the same thread database.
    second = await make_harness(service=real)
    await second.event(dict(event), event_id="EvDIES", retry=1)  # Slack redelivers the unanswered event
    await second.bot.drain()
    assert "14 kg" in fake.thread_text(event["ts"])
    fake.expected_refusals.append(("reactions.add", "already_reacted"))  # the first process's 👀 ...
    assert not fake.reactions  # ... is taken away once the answer is out
    await second.event(dict(event), event_id="EvDIES", retry=2)  # answered now: a later retry is dropped
    await second.bot.drain()
    assert len(second.service.turns) == 1
    # Stop the 'dead' process's stuck work; its cleanup finds the 👀 already gone.
    fake.expected_refusals.append(("reactions.remove", "no_reaction"))
    for task, _ in StuckService.stuck:
        task.cancel()
    await first.bot.drain()


class DiesWhileWriting(SpyService):
    """The stages are shown (the stream is started), then the process 'dies' while writing the answer."""

    async def answer(self, turn, events=None):
        import asyncio

        from core.records import Step

        self.turns.append(turn)
        events(Step("search", "Searching 1 document"))
        gate = asyncio.Event()
        StuckService.stuck.append((asyncio.current_task(), gate))
        await gate.wait()


async def end_the_dead_process(dead: Harness, fake: FakeSlack) -> None:
    """Stop a 'dead' process's stuck work after its successor answered: the successor found the 👀
    already there, and the dead one's cleanup finds it gone."""
    fake.expected_refusals.append(("reactions.add", "already_reacted"))
    for task, _ in StuckService.stuck:
        task.cancel()
    fake.expected_refusals.append(("reactions.remove", "no_reaction"))
    await dead.bot.drain()


async def test_a_redelivery_closes_the_stream_a_dead_process_left_open(make_harness, fake, tmp_path):
    # Before: the dead process's message stayed "streaming" for ever, and the answer came in a second one.
    real = Service(base_settings(fake, tmp_path))
    await real.index_bytes(PUMP_PDF, "x200-datasheet.pdf", scope="slack:T1")
    first = await make_harness(service=DiesWhileWriting(real))
    event, _ = await first.mention("What is the X200 weight?", event_id="EvCUT")
    [left] = await fake.wait_for(lambda: fake.streams(event["ts"]))
    second = await make_harness(service=real)  # a new process on the same thread database
    await second.event(dict(event), event_id="EvCUT", retry=1)
    await second.bot.drain()
    dead, answer = fake.streams(event["ts"])
    assert dead is left and dead["stream"]["state"] == "stopped" and "Interrupted" in dead["stream"]["markdown"]
    assert answer["stream"]["state"] == "stopped" and "14 kg" in answer["stream"]["markdown"]
    await end_the_dead_process(first, fake)


async def test_a_redelivery_after_the_answer_was_posted_does_not_post_it_again(
    make_harness, fake, tmp_path, monkeypatch
):
    # Before: killed after posting and before the evidence upload, the redelivery posted the whole answer again.
    import asyncio

    from bot.slack.replies import Thread

    real = Service(base_settings(fake, tmp_path))
    await real.index_bytes(PUMP_PDF, "x200-datasheet.pdf", scope="slack:T1")
    dying = asyncio.Event()
    upload = Thread.upload_previews

    async def dies_before_uploading(self, answer):
        if not dying.is_set():
            dying.set()
            StuckService.stuck.append((asyncio.current_task(), None))
            await asyncio.Event().wait()  # the process is killed here
        return await upload(self, answer)

    monkeypatch.setattr(Thread, "upload_previews", dies_before_uploading)
    first = await make_harness(service=real)
    event, _ = await first.mention("What is the X200 weight?", event_id="EvPOSTED")
    await asyncio.wait_for(dying.wait(), 60)
    assert "14 kg" in fake.thread_text(event["ts"])
    second = await make_harness(service=real)
    await second.event(dict(event), event_id="EvPOSTED", retry=1)
    await second.bot.drain()
    assert len(fake.streams(event["ts"])) == 1 and not fake.calls_to("files.completeUploadExternal")
    assert "previews of the answer above were not uploaded: the bot restarted" in fake.thread_text(event["ts"])
    await end_the_dead_process(first, fake)


async def test_an_answer_slack_refuses_is_posted_plain_and_kept_for_a_retry(slack: Harness):
    # Before: three 500s (or one ok:false) ended in "Sorry, something went wrong"; the answer was lost.
    # (Where streaming is refused, the answer is posted when it is done, as here.)
    slack.fake.streaming_error = "method_not_supported_for_channel_type"
    slack.fake.http_errors["chat.postMessage"] = [500, 500, 500]
    event, _ = await slack.mention("What is the X200 weight?")
    await slack.bot.drain()
    posts = [c for c in slack.fake.posts(event["ts"]) if "14 kg" in str(c.params.get("text", ""))]
    assert len(posts) == 4 and "blocks" not in posts[-1].params  # retried by the client, then plain text
    assert "went wrong" not in slack.fake.thread_text(event["ts"])

    # Slack refuses even the plain text: the answer stays in thread memory, and asking again posts it
    # without searching again.
    slack.fake.fail["chat.postMessage"] = "internal_error"
    uploads = len(slack.fake.calls_to("files.completeUploadExternal"))
    event, _ = await slack.mention("What is the X200 motor power?", thread_ts=event["ts"])
    await slack.bot.drain()
    del slack.fake.fail["chat.postMessage"]
    # No "evidence for the answer above" under no answer, and the question shows ⚠️, not 👀 or nothing.
    assert len(slack.fake.calls_to("files.completeUploadExternal")) == uploads
    assert {name for channel, ts, name in slack.fake.reactions if ts == event["ts"]} == {"warning"}
    asked = len(slack.service.turns)
    await slack.mention("What is the X200 motor power?", thread_ts=event["thread_ts"])
    await slack.bot.drain()
    assert len(slack.service.turns) == asked  # not searched again
    assert "1.1 kW" in slack.fake.thread_text(event["thread_ts"])


# ----- replicas sharing one PostgreSQL -------------------------------------------------------------------


async def test_two_replicas_on_one_database_answer_each_event_once(make_harness, fake, tmp_path, database_url):
    import asyncio

    from core.postgres.threads import PostgresThreads

    settings = base_settings(fake, tmp_path)
    await Service(settings).index_bytes(PUMP_PDF, "x200-datasheet.pdf", scope="slack:T1")
    a = await make_harness(service=Service(settings), threads=PostgresThreads(database_url))
    b = await make_harness(service=Service(settings), threads=PostgresThreads(database_url))
    ts = a._ts()
    text = f"<@{BOT_USER_ID}> What is the X200 weight?"
    mention = {"type": "app_mention", "user": "U1", "text": text, "ts": ts}
    message = {"type": "message", "user": "U1", "text": text, "ts": ts, "channel_type": "channel"}
    # The mention reaches both replicas at once (a retry the load balancer sent to the other one), and
    # the message event that accompanies every mention reaches a replica of its own.
    await asyncio.gather(
        a.event(dict(mention), event_id="EvTWO"),
        b.event(dict(mention), event_id="EvTWO", retry=1),
        b.event(dict(message), event_id="EvTWOm"),
    )
    await a.bot.drain()
    await b.bot.drain()
    assert len(a.service.turns) + len(b.service.turns) == 1
    assert len([p for p in answer_posts(fake, ts) if "14 kg" in str(p)]) == 1
    # A follow-up without a mention counts in a thread the bot answered: whichever replica gets it
    # finds that thread in the shared memory, with its history.
    follow_up = b if a.service.turns else a
    await follow_up.event(
        {"type": "message", "user": "U1", "text": "And its width?", "thread_ts": ts, "channel_type": "channel"}
    )
    await follow_up.bot.drain()
    assert follow_up.service.turns[-1].history[0].question == "What is the X200 weight?"
    assert "320 mm" in fake.thread_text(ts)


# ----- feedback ------------------------------------------------------------------------------------------


def feedback_values(post: dict) -> dict[str, str]:
    [block] = [b for b in post["blocks"] if b["type"] == "context_actions"]
    [element] = block["elements"]
    return {"good": element["positive_button"]["value"], "bad": element["negative_button"]["value"]}


async def test_answers_carry_feedback_buttons_and_ratings_export_as_questions(slack: Harness, tmp_path):
    event, _ = await slack.mention("What is the X200 weight?")
    await slack.bot.drain()
    [post] = answer_posts(slack.fake, event["ts"])  # the buttons passed the fake's Block Kit checks
    values = feedback_values(post)
    event2, _ = await slack.mention("What is the maximum head of the X200?", thread_ts=event["ts"])
    await slack.bot.drain()
    second = answer_posts(slack.fake, event["ts"])[-1]
    for value, user in (
        (values["good"], "U1"),
        (values["bad"], "U1"),
        (values["good"], "U2"),
        (feedback_values(second)["good"], "U1"),
    ):
        response = await slack.click(post["ts"], value, user=user)
        assert response.status == 200
    response = await slack.click(event["ts"], "bad:not-a-turn")
    assert response.status == 200  # acknowledged and ignored

    # A clarifying question has nothing to rate.
    slack.fake.add_message(CHANNEL, {"ts": "1700000099.000001", "user": "U1", "text": "Tell me about pumps"})
    await slack.mention("And its width?", thread_ts="1700000099.000001")
    await slack.bot.drain()
    clarify = answer_posts(slack.fake, "1700000099.000001")
    assert clarify and not any(b["type"] == "context_actions" for b in clarify[-1]["blocks"] or [])
    assert "Which" in clarify[-1]["text"]

    from bot.feedback_export import export, write

    settings = slack.settings.with_(extra={**slack.settings.extra, "SLACK_THREADS_DB": str(slack.store.path)})
    out = tmp_path / "feedback.jsonl"
    write(await export(settings, "bad"), out)
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    assert record["question"] == "What is the X200 weight?" and record["gold"] == [] and record["answer"] == ""
    assert record["feedback"]["rating"] == "bad" and "14 kg" in record["feedback"]["bot_answer"]
    assert record["feedback"]["retrieved"][0] == {"file": "x200-datasheet.pdf", "page": 2}
    assert {"file": "x200-datasheet.pdf", "page": 2} in record["feedback"]["cited"]
    assert "T1:U1" in record["note"]
    from eval.questions import load_questions

    load_questions(out)  # the evaluation reads the file as it is; a person adds gold pages and the answer


async def test_a_person_over_the_question_limit_is_told_in_the_thread_and_status_shows_usage(
    make_harness, fake, tmp_path
):
    settings = base_settings(fake, tmp_path).with_(user_questions_per_hour=1)
    slack = await make_harness(settings=settings)
    await slack.service.real.index_bytes(PUMP_PDF, "x200-datasheet.pdf", scope="slack:T1")
    first, _ = await slack.mention("What is the maximum flow rate of the X200 pump?")
    await slack.bot.drain()
    assert "120" in fake.thread_text(first["ts"])
    second, _ = await slack.mention("And its weight?")
    await slack.bot.drain()
    told = fake.thread_text(second["ts"])
    assert "You have asked 1 question in the past hour" in told and "again in 60 minutes" in told
    assert len(slack.service.turns) == 1  # the refused question was not searched or read
    body = (await slack.command("status")).body
    assert "usage today (UTC): 1 question, 0 Gemini requests" in body
    assert "usage today (UTC): 0 questions" in (await slack.command("status", team="T2")).body


async def test_each_cited_page_gets_a_button_that_opens_it(make_harness, fake, tmp_path):
    base = "https://pixelrag.example.com/docs"
    fake.link_base = base  # the fake refuses a button that links anywhere else, or is not a well-formed URL
    harness = await make_harness(base_settings(fake, tmp_path).with_(public_url=base))
    await harness.service.real.index_bytes(PUMP_PDF, "x200-datasheet.pdf", scope="slack:T1")
    event, _ = await harness.mention("What is the maximum flow rate of the X200 pump?")
    await harness.bot.drain()
    [message] = fake.streams(event["ts"])
    buttons = [e for b in message["stream"]["blocks"] if b["type"] == "actions" for e in b["elements"]]
    cited = sorted({(c.doc_id, c.page) for c in harness.service.answers[0].citations})
    assert len(buttons) == len(cited) and buttons[0]["text"]["text"].startswith("Open p. ")
    opened = []
    for button in buttons:
        view = await harness.service.real.view_page(button["url"].removeprefix(f"{base}/view/"))
        opened.append((view.document.doc_id, view.link.page))
    assert sorted(opened) == cited
    # Slack reports a click on a URL button as well; it is acknowledged, nothing else.
    button = {"type": "button", "action_id": buttons[0]["action_id"], "block_id": "b", "action_ts": "1.2"}
    response = await harness.click(message["ts"], action=button)
    assert response.status == 200
    # Without a public address there are no buttons (and the stream's blocks end with the feedback).
    plain = await make_harness(base_settings(fake, tmp_path))
    event, _ = await plain.mention("What is the maximum flow rate of the X200 pump?")
    await plain.bot.drain()
    [message] = fake.streams(event["ts"])
    assert not [b for b in message["stream"]["blocks"] if b["type"] == "actions"]
