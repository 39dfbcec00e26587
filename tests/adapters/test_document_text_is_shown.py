"""Text from a PDF, a user or a model is shown, never acted on: a document that prints `<!channel>`,
`@everyone`, `<@U…>` or `[click here](https://…)` gets those quoted as printed, and nothing pings or
hides a link. Through the real bot processes' code paths (Bolt and discord.py against the strict
fakes, which record in `acted` whatever the real service would act on and whose fixtures fail on any),
the real Service (local backend and the Gemini backend against its fake)."""

from __future__ import annotations

import html

import discord
import pytest
from slack_sdk.web.async_client import AsyncWebClient

from core.config import Settings
from core.markup import inert, literal
from core.records import SHARED_SCOPE
from core.service import Service
from tests.adapters.slack_harness import CHANNEL, Harness, answer_posts, base_settings, make_pdf
from tests.adapters.test_discord_stream import dm_message, texts
from tests.fakes.discord import FakeDiscord
from tests.fakes.gemini import FakeGemini
from tests.fakes.markup import discord_pings, displayed, hidden_links, slack_tokens
from tests.fakes.slack import BOT_TOKEN, FakeSlack, block_text

PINGS = "<!channel> <!here> <!everyone> <@U0LEAK> <#C0SECRET>"
LINKS = "[click here](https://evil.example/fw) <https://x.example|Official>"
DISCORD_PINGS = "<@123456789012345678> <@&222222222222222222> @everyone @here"
HOSTILE_PDF = make_pdf(
    [
        [  # each line within the page's width: a line cut at the edge loses its end
            "Aquaflow X200 pump datasheet",
            f"Flow rate: 120 l/min {PINGS}",
            f"Firmware: {LINKS}",
            f"Weight: 14 kg {DISCORD_PINGS}",
        ]
    ],
    title="<!channel> X200 [manual](https://evil.example/t)",
)
QUESTION = "What are the weight and the firmware of the X200 pump?"


def printed(text: str) -> str:
    """What a reader sees, without the invisible joiners that keep a token from forming."""
    return text.replace("\u2060", "").replace("\u200b", "")


# ----- the escaping itself -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "M3*0.5 and a_b_c",
        "[click here](https://evil.example)",
        "`x` \\*y\\*",
        "~~gone~~ 3~5 V",
        "![img](https://t.example/p.png)",
        "**not bold**",
    ],
)
def test_literal_markdown_shows_the_text_as_written(text):
    assert displayed(literal(text)).strip() == text
    assert hidden_links(literal(text)) == []


def test_a_web_address_keeps_its_underscores_so_a_chat_app_links_it_whole():
    url = "https://create.arduino.cc/projecthub/Arduino_Genuino/getting-started"
    assert literal(f"Getting started: {url} (a_b)") == f"Getting started: {url} (a\\_b)"


def test_a_models_markdown_keeps_its_formatting_but_no_link():
    markdown = "The X200 weighs **14 kg**.\n\n- see [the manual](https://evil.example) ![x](https://t.example/p)"
    shown = displayed(inert(markdown))
    assert "<strong>" not in shown and "14 kg" in shown and "**" not in shown  # bold stays bold
    assert "[the manual](https://evil.example)" in shown and "![x](https://t.example/p)" in shown
    assert hidden_links(inert(markdown)) == [] and len(hidden_links(markdown)) == 2
    # One character at a time: the pieces of a streamed answer give the whole.
    assert "".join(inert(markdown[i : i + 5]) for i in range(0, len(markdown), 5)) == inert(markdown)


# ----- the fakes see what the services would act on ------------------------------------------------


async def test_the_slack_fake_records_mentions_and_hidden_links():
    server = FakeSlack().start()
    try:
        client = AsyncWebClient(token=BOT_TOKEN, base_url=server.api_url)
        await client.chat_postMessage(
            channel=CHANNEL,
            text="hi <!channel>",
            blocks=[{"type": "markdown", "text": "see [the docs](https://evil.example)"}],
        )
        assert server.acted == [
            ("chat.postMessage", "<!channel>"),
            ("chat.postMessage", "link to https://evil.example"),
        ]
        server.acted.clear()
        await client.chat_postMessage(
            channel=CHANNEL,
            text="hi &lt;!channel&gt;",
            blocks=[{"type": "markdown", "text": "see \\[the docs\\](https://evil.example) &lt;!here>"}],
        )
        assert server.acted == []
        # A stream's appends are one message: a token cut in two is whole there.
        who = {"recipient_team_id": "T1", "recipient_user_id": "U1"}
        ts = (await client.chat_startStream(channel=CHANNEL, thread_ts="1.1", markdown_text="flow <!chan", **who))["ts"]
        await client.chat_appendStream(channel=CHANNEL, ts=ts, markdown_text="nel> end")
        assert server.acted == [("chat stream", "<!channel>")]
    finally:
        server.stop()


async def test_the_discord_fake_records_pings_under_the_requests_allowed_mentions(discord_api):
    channel = "5555"
    await discord_api.http.send_message(
        channel, params=discord.http.handle_message_parameters(content="@everyone look <@123456789012345678>")
    )
    assert discord_api.acted == ["@everyone", "<@123456789012345678>"]
    discord_api.acted.clear()
    await discord_api.http.send_message(
        channel,
        params=discord.http.handle_message_parameters(
            content="@everyone [x](https://evil.example)", allowed_mentions=discord.AllowedMentions.none()
        ),
    )
    assert discord_api.acted == ["link to https://evil.example"]
    discord_api.acted.clear()
    assert discord_pings("@everyone", {"parse": ["everyone"]}) == ["@everyone"]


# ----- Slack -----------------------------------------------------------------------------------------


async def hostile_slack(make_harness, fake, tmp_path, **settings) -> Harness:
    harness = await make_harness(settings=base_settings(fake, tmp_path, **settings))
    await harness.service.real.index_bytes(HOSTILE_PDF, "x200.pdf", scope="slack:T1")
    return harness


def slack_shown(fake: FakeSlack, thread_ts: str) -> str:
    """What the thread shows: markdown rendered, mrkdwn with its entities decoded, file titles."""
    parts = []
    for reply in answer_posts(fake, thread_ts):
        for block in reply["blocks"]:
            if block["type"] == "markdown":
                parts.append(displayed(block["text"]))
            else:  # mrkdwn: only its entities are markup
                parts.extend(html.unescape(t) for t in block_text([block]))
    for message in fake.streams(thread_ts):
        parts.append(displayed(message["stream"]["markdown"]))
    for call in fake.posts(thread_ts):
        if "blocks" not in call.params:  # the plain-text retry: mrkdwn
            parts.append(html.unescape(call.params.get("text", "")))
    for call in fake.calls_to("files.completeUploadExternal"):
        parts += [f["title"] for f in call.params["files"]]
    return printed("\n".join(parts))


async def test_a_streamed_slack_answer_quotes_pings_and_links_as_printed(make_harness, fake, tmp_path):
    harness = await hostile_slack(make_harness, fake, tmp_path)
    event, _ = await harness.mention(QUESTION)
    await harness.bot.drain()
    [message] = fake.streams(event["ts"])
    assert message["stream"]["state"] == "stopped"
    shown = slack_shown(fake, event["ts"])
    assert f"120 l/min {PINGS}" in shown and LINKS in shown and DISCORD_PINGS in shown
    assert "<!channel> X200 [manual](https://evil.example/t) p. 1" in shown  # an upload's title
    assert not fake.acted  # (the fixture checks it too)


async def test_a_posted_and_a_plain_slack_answer_quote_them_as_printed_too(make_harness, fake, tmp_path):
    harness = await hostile_slack(make_harness, fake, tmp_path)
    fake.streaming_error = "method_not_supported_for_channel_type"
    posted, _ = await harness.mention(QUESTION)
    await harness.bot.drain()
    assert answer_posts(fake, posted["ts"])[0]["blocks"][0]["type"] == "markdown"
    assert "<!channel> <!here> <!everyone>" in slack_shown(fake, posted["ts"])
    fake.http_errors["chat.postMessage"] = [500, 500, 500]  # the blocks refused: posted again as plain text
    plain, _ = await harness.mention(QUESTION)
    await harness.bot.drain()
    assert [c for c in fake.posts(plain["ts"]) if "blocks" not in c.params]
    assert "<!channel> <!here> <!everyone>" in slack_shown(fake, plain["ts"])
    assert not fake.acted


async def test_titles_in_listings_prompts_and_replies_never_act(make_harness, fake, tmp_path):
    harness = await hostile_slack(make_harness, fake, tmp_path)
    listing = (await harness.command("list")).body  # the acknowledgement, shown as mrkdwn
    assert "<!channel> X200" in html.unescape(listing) and not slack_tokens(listing)
    await harness.bot.agent.offer_prompts(AsyncWebClient(token=BOT_TOKEN, base_url=fake.api_url), "D1", "slack:T1")
    [prompt] = fake.calls_to("assistant.threads.setSuggestedPrompts")[-1].params["prompts"]
    assert printed(prompt["title"]).startswith("About <!channel> X200")
    await harness.command("remove <!channel> X200 [manual](https://evil.example/t)")
    await harness.bot.drain()
    assert "Removed <!channel> X200" in html.unescape(fake.calls_to("response_url")[-1].params["text"])
    assert not fake.acted


async def test_a_gemini_answer_copying_a_pages_pings_and_links_shows_them(make_harness, fake, tmp_path):
    async with FakeGemini() as gemini:
        harness = await make_harness(settings=gemini.settings(base_settings(fake, tmp_path), embedding_dim=256))
        await harness.service.real.index_bytes(HOSTILE_PDF, "x200.pdf", scope="slack:T1")
        answer = f"The X200 moves **120 l/min** {PINGS}; firmware: {LINKS} ![logo](https://t.example/p) {DISCORD_PINGS}"
        gemini.replies.append(
            {
                "answer": answer,
                "topic": "other",
                "limitations": ["<!here> is not stated"],
                "citations": [{"page_ref": "P1", "quote": PINGS}],
            }
        )
        gemini.chunk_chars = 7  # tokens cut across the stream's appends
        event, _ = await harness.mention(QUESTION)
        await harness.bot.drain()
    [message] = fake.streams(event["ts"])
    shown = printed(displayed(message["stream"]["markdown"]))
    assert PINGS in shown and LINKS in shown and "![logo](https://t.example/p)" in shown
    assert "<!here> is not stated" in slack_shown(fake, event["ts"])
    assert not fake.acted


# ----- Discord ---------------------------------------------------------------------------------------


async def hostile_discord(bot, tmp_path, **extra):  # noqa: F811
    service = Service(Settings(index_dir=tmp_path / "index", backend="local"))
    await service.index_bytes(HOSTILE_PDF, "x200.pdf", scope=SHARED_SCOPE)
    return await bot(service, **extra)


def discord_shown(discord_api: FakeDiscord) -> str:
    parts = []
    for message in discord_api.messages.values():
        parts += [displayed(t) for t in [message["content"]] + texts(message)]
        parts += [displayed(f"{e.get('title', '')}\n\n{e.get('description', '')}") for e in message["embeds"]]
    return printed("\n".join(parts))


async def test_a_discord_answer_quotes_pings_and_links_as_printed(bot, discord_api, tmp_path):  # noqa: F811
    client = await hostile_discord(bot, tmp_path)
    await client.questions.on_message(dm_message(client, QUESTION))
    shown = discord_shown(discord_api)
    assert DISCORD_PINGS in shown and LINKS in shown and "<!channel> X200 [manual](https://evil.example/t)" in shown
    assert all(v["flags"] for vs in discord_api.versions.values() for v in vs)  # Components V2, edited in
    assert not discord_api.acted  # (the fixture checks it too)


async def test_the_embed_rendering_quotes_them_as_printed_too(bot, discord_api, tmp_path):  # noqa: F811
    discord_api.refuse_v2 = True
    client = await hostile_discord(bot, tmp_path)
    await client.questions.on_message(dm_message(client, QUESTION))
    assert any(m["embeds"] for m in discord_api.messages.values())
    assert DISCORD_PINGS in discord_shown(discord_api)
    assert not discord_api.acted
