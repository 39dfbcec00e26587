"""Discord answers as Components V2 messages, streamed by editing, through the real discord.py client
against the fake Discord REST API (tests/fakes/discord.py), which checks every message as Discord does.

The bot logs in against the fake (its setup_hook registers the feedback buttons), questions arrive as
spec'd gateway messages in a real DMChannel, and clicks go through discord.py's own interaction
parsing. Time is virtual: the stream's clock and sleep and the fake's rate limiter share one clock.
"""

from __future__ import annotations

import asyncio
import logging
from unittest.mock import MagicMock

import discord
import pytest

from core.config import Settings
from core.errors import RemoteError
from core.records import Step, TextDelta
from tests.adapters.discord_harness import VirtualTime
from tests.adapters.test_discord import MANUAL_A, FakeService, make_user
from tests.fakes.discord import FakeDiscord
from tests.fakes.discord_rules import V2_FLAG, Refused, check_message

USER = {"id": "4242", "username": "asker", "discriminator": "0", "global_name": None, "avatar": None}


class StreamingService(FakeService):
    """Reports the stages and writes the answer in pieces, taking `step` virtual seconds per piece."""

    def __init__(
        self,
        time: VirtualTime,
        pieces: list[str],
        step: float = 0.3,
        fail_after: int | None = None,
        gate=None,
        every: int = 4,
        **kw,
    ):
        super().__init__(markdown="".join(pieces), **kw)
        self.time, self.pieces, self.step, self.fail_after = time, pieces, step, fail_after
        self.gate = gate  # a FakeDiscord: every `every` pieces, the writer waits for Discord to hear of them
        self.every = every

    async def answer(self, turn, out_dir=None, events=None):
        before = self._count()
        events(Step("search", "Searching 1 document"))
        await self._heard(before)
        await self.time.sleep(self.step)
        before = self._count()
        events(Step("search", "Searching 1 document", "complete", "4 pages found"))
        events(Step("read", "Reading p. 1 of Dishwasher manual"))
        await self._heard(before)
        for i, piece in enumerate(self.pieces):
            if self.fail_after is not None and i == self.fail_after:
                raise RemoteError("Gemini stopped answering; try again later.")
            await self.time.sleep(self.step)
            before = self._count()
            events(TextDelta(piece))
            if i % self.every == 0:
                await self._heard(before)
        events(Step("read", "Reading p. 1 of Dishwasher manual", "complete"))
        events(Step("cite", "Locating the quotes"))
        answer = await super().answer(turn)
        events(Step("cite", "Locating the quotes", "complete", "1 quote located"))
        return answer

    def _count(self) -> int:
        return self.gate.handled if self.gate else 0

    async def _heard(self, before: int) -> None:
        """Go on once Discord has been asked something since (a gate, not a wait for time to pass)."""
        if self.gate:
            await asyncio.wait_for(self.gate.handled_beyond(before), 10)


def dm_message(client, text: str) -> MagicMock:
    """A gateway message in a real DMChannel: what the bot sends there goes to the fake."""
    channel = discord.DMChannel(
        me=client.user, state=client._connection, data={"id": "5555", "type": 1, "recipients": [USER]}
    )
    msg = MagicMock(spec=discord.Message)
    msg.id, msg.type, msg.channel, msg.guild = 77, discord.MessageType.default, channel, None
    msg.author = make_user(4242)
    msg.content, msg.mentions, msg.role_mentions, msg.attachments, msg.reference = text, [], [], [], None
    return msg


def texts(message: dict) -> list[str]:
    out = []

    def walk(components):
        for c in components:
            if c.get("type") == 10:
                out.append(c["content"])
            walk(c.get("components") or [])

    walk(message["components"])
    return out


def of_type(message: dict, kind: int) -> list[dict]:
    found = []

    def walk(components):
        for c in components:
            if c.get("type") == kind:
                found.append(c)
            walk(c.get("components") or [])

    walk(message["components"])
    return found


def only_message(fake: FakeDiscord) -> tuple[str, list[dict]]:
    [(mid, versions)] = fake.versions.items()
    return mid, versions


# ---- streaming --------------------------------------------------------------------------------


async def streaming_client(bot, discord_api, pieces, **options):
    """A bot whose service streams `pieces` (StreamingService's options) on the client's clock."""
    client = await bot(StreamingService(None, pieces, gate=discord_api, **options))
    client.questions.service.time = client.time
    return client


async def test_the_answer_streams_into_one_v2_message_that_ends_as_the_layout(bot, discord_api):
    pieces = [f"Part {i} of the answer. " for i in range(20)]
    client = await streaming_client(bot, discord_api, pieces, citations=2)
    await client.questions.on_message(dm_message(client, "what is the warranty?"))

    mid, versions = only_message(discord_api)
    assert all(v["flags"] & V2_FLAG and not v["content"] and not v["embeds"] for v in versions)
    first = "\n".join(texts(versions[0]))
    assert "⏳ Searching 1 document" in first
    shown = ["\n".join(texts(v)) for v in versions]
    assert any(
        "✅ Searching 1 document — 4 pages found" in t and "⏳ Reading p. 1 of Dishwasher manual" in t for t in shown
    )
    partial = [t for t in shown if "Part 3 of the answer." in t and "Part 19" not in t]
    assert partial, "the text was shown while it was being written"
    # throttled: 20 pieces and 6 stage changes, a few edits at least a second apart, never a 429
    times = discord_api.edit_times[mid]
    assert 3 <= len(times) <= 10 and len(versions) == len(times) + 1
    assert all(b - a >= 1.0 for a, b in zip(times, times[1:])), times
    assert discord_api.rate_limited == []
    final = versions[-1]
    assert "Part 19 of the answer." in texts(final)[0]
    [gallery] = of_type(final, 12)
    names = {a["filename"] for a in final["attachments"]}
    assert [i["media"]["url"] for i in gallery["items"]] == [
        f"attachment://{n}"
        for n in ("c1-p1-highlight.png", "c1-p1-preview.jpg", "c2-p2-highlight.png", "c2-p2-preview.jpg")
    ]
    assert names == {"c1-p1-highlight.png", "c1-p1-preview.jpg", "c2-p2-highlight.png", "c2-p2-preview.jpg"}
    assert any("**1.** Dishwasher manual, p. 1 (exact highlight)" in t for t in texts(final))
    buttons = of_type(final, 2)
    assert [b["custom_id"].rsplit(":", 1)[0] for b in buttons] == ["pixelrag-feedback:good", "pixelrag-feedback:bad"]


async def test_edits_too_fast_for_discord_are_refused_by_the_fake(bot, discord_api, caplog):
    # The fake's rate limit is real: an unthrottled stream is told 429, and the answer still arrives.
    pieces = [f"Piece {i}. " for i in range(30)]
    client = await streaming_client(bot, discord_api, pieces, step=0.05, every=1)
    client.questions.options = type(client.questions.options)(edit_interval=0.05)  # below the setting's floor
    with caplog.at_level(logging.WARNING, "pixelrag.discord"):
        await client.questions.on_message(dm_message(client, "warranty?"))
    assert discord_api.rate_limited
    assert "could not update the streamed answer" in caplog.text or "could not edit the streamed" in caplog.text
    every = [v for vs in discord_api.versions.values() for v in vs]
    assert any("Piece 29." in "\n".join(texts(v)) and of_type(v, 12) for v in every)


async def test_a_reader_failure_mid_stream_ends_the_same_message_with_the_error(bot, discord_api):
    pieces = [f"Sentence {i}. " for i in range(10)]
    client = await streaming_client(bot, discord_api, pieces, fail_after=6)
    await client.questions.on_message(dm_message(client, "warranty?"))
    mid, versions = only_message(discord_api)
    last = "\n".join(texts(versions[-1]))
    assert "Sentence 5." in last and "⚠️ Gemini stopped answering; try again later." in last
    assert "⚠️ Reading p. 1 of Dishwasher manual" in last  # the stage it failed in
    assert not of_type(versions[-1], 2)  # no feedback on an answer that was not given


async def test_a_refused_layout_falls_back_to_embeds_visibly_in_the_log(bot, discord_api, caplog):
    discord_api.refuse_v2 = True
    client = await streaming_client(bot, discord_api, ["The warranty is ", "**2 years**."])
    with caplog.at_level(logging.WARNING, "pixelrag.discord"):
        await client.questions.on_message(dm_message(client, "warranty?"))
    assert "Discord refused the Components V2 layout" in caplog.text
    assert discord_api.refused and discord_api.refused[0]["code"] == 50035
    mid, versions = only_message(discord_api)
    assert all(not v["flags"] & V2_FLAG for v in versions)
    assert "Searching 1 document" in versions[0]["content"]  # streamed as text
    final = versions[-1]
    assert "**2 years**" in final["content"]
    [embed] = final["embeds"]
    assert embed["title"] == "Dishwasher manual p. 1"
    assert embed["image"]["url"].removeprefix("attachment://") in {a["filename"] for a in final["attachments"]}
    assert [b["custom_id"].split(":")[1] for b in of_type(final, 2)] == ["good", "bad"]  # buttons kept


async def test_embeds_only_when_configured(bot, discord_api):
    client = await bot(FakeService(), DISCORD_LAYOUT="embeds")
    await client.questions.on_message(dm_message(client, "warranty?"))
    [(mid, [message])] = discord_api.versions.items()  # no events: posted whole
    assert not message["flags"] & V2_FLAG and message["embeds"] and "2 years" in message["content"]


async def test_a_long_answer_continues_in_messages_cut_at_paragraph_ends(bot, discord_api):
    paragraphs = [f"Paragraph {i}: " + ("word " * 150).strip() for i in range(12)]  # ~ 9,000 characters
    client = await bot(FakeService(markdown="\n\n".join(paragraphs), citations=6))
    await client.questions.on_message(dm_message(client, "tell me everything"))
    messages = [vs[-1] for vs in discord_api.versions.values()]
    assert len(messages) >= 3
    answer_texts = [t for m in messages for t in texts(m) if not t.startswith("📄")]
    for text in answer_texts:
        assert all(chunk in paragraphs for chunk in text.split("\n\n"))  # no paragraph cut in half
    assert "\n\n".join(answer_texts) == "\n\n".join(paragraphs)
    # 6 citations x 2 images: two galleries of at most 10, the buttons under the last message only
    galleries = [g for m in messages for g in of_type(m, 12)]
    assert sorted(len(g["items"]) for g in galleries) == [2, 10]
    assert [bool(of_type(m, 2)) for m in messages] == [False] * (len(messages) - 1) + [True]


# ---- the fake's rules --------------------------------------------------------------------------


def test_the_fake_refuses_what_discord_refuses():
    text = {"type": 10, "content": "x"}
    v2 = V2_FLAG
    ok = {"flags": v2, "components": [{"type": 17, "components": [text]}]}
    check_message(ok, set(), 0)
    refusals = [
        {"flags": v2, "content": "hi", "components": [text]},  # content with the V2 flag
        {"flags": v2, "embeds": [{"title": "t"}], "components": [text]},
        {"flags": v2, "components": [{"type": 17, "components": [text] * 40}]},  # 41 with the container
        {"flags": v2, "components": [{"type": 10, "content": "x" * 2001}, {"type": 10, "content": "y" * 2000}]},
        {"flags": v2, "components": [{"type": 12, "items": []}]},
        {"flags": v2, "components": [{"type": 12, "items": [{"media": {"url": "attachment://a.png"}}] * 11}]},
        {"flags": v2, "components": [{"type": 12, "items": [{"media": {"url": "attachment://missing.png"}}]}]},
        {"flags": v2, "components": [{"type": 1, "components": [{"type": 2, "style": 2, "custom_id": "x" * 101}]}]},
        {
            "flags": v2,
            "components": [
                {"type": 1, "components": [{"type": 2, "style": 2, "custom_id": f"b{i}"} for i in range(6)]}
            ],
        },
        {
            "flags": v2,
            "components": [
                {
                    "type": 1,
                    "components": [
                        {"type": 2, "style": 2, "custom_id": "same"},
                        {"type": 2, "style": 2, "custom_id": "same"},
                    ],
                }
            ],
        },
        {"content": "x" * 2001},
        {"content": "hi", "components": [text]},  # a V2 component without the flag
        {},
        # 6,000 characters across embeds count their fields and footers too, and each part has its limit
        {
            "embeds": [
                {
                    "description": "d" * 4000,
                    "footer": {"text": "f" * 1500},
                    "fields": [{"name": "n", "value": "v" * 600}],
                }
            ]
        },
        {"embeds": [{"title": "t" * 257}]},
        {"embeds": [{"description": "d" * 10, "fields": [{"name": "n", "value": "v"}] * 26}]},
    ]
    for payload in refusals:
        with pytest.raises(Refused):
            check_message(payload, {"a.png"}, 0)


async def test_the_v2_flag_cannot_be_removed_by_an_edit(bot, discord_api):
    client = await bot(FakeService())
    await client.questions.on_message(dm_message(client, "warranty?"))
    [(mid, [sent])] = discord_api.versions.items()
    assert sent["flags"] & V2_FLAG
    partial = client.get_partial_messageable(int(sent["channel_id"])).get_partial_message(int(mid))
    with pytest.raises(discord.HTTPException) as refused:
        await partial.edit(content="plain again")
    assert refused.value.status == 400 and refused.value.code == 50035


# ---- feedback through discord.py's interaction handling ----------------------------------------


async def test_a_click_on_the_v2_layouts_buttons_is_recorded(bot, discord_api):
    client = await bot(FakeService())
    threads = client.questions.threads
    await client.questions.on_message(dm_message(client, "what is the warranty period?"))
    [(mid, [message])] = discord_api.versions.items()
    good, bad = [b["custom_id"] for b in of_type(message, 2)]

    for custom_id, user in ((bad, 7), (good, 7), (bad, 7), (good, 8)):
        inter = discord_api.click(client, mid, custom_id, user)
        reply = await asyncio.wait_for(discord_api.reply(inter), 10)  # a guard, not a wait for time to pass
        assert reply["type"] == 4 and reply["data"]["flags"] & 64  # answered privately
        assert reply["data"]["content"].startswith("Thanks, noted")
    [rated_bad] = await threads.ratings("bad")
    assert rated_bad.user == "dm:7" and rated_bad.platform == "discord"
    assert rated_bad.question == "what is the warranty period?"
    assert [r.user for r in await threads.ratings("good")] == ["dm:8"]


# ---- end to end: the real service (local backend) through the real client and the fake -------------


async def test_a_real_answer_streams_its_stages_and_ends_with_its_evidence(tmp_path, bot, discord_api):
    from core.service import Service

    settings = Settings().with_(index_dir=tmp_path / "index")
    service = Service(settings)
    pdf = tmp_path / "x200.pdf"
    pdf.write_bytes(MANUAL_A)
    await service.index([str(pdf)])  # the shared collection, which DMs search
    client = await bot(service)
    await client.questions.on_message(dm_message(client, "How long is the X200 dishwasher warranty?"))

    mid, versions = only_message(discord_api)
    assert "Searching 1 document" in "\n".join(texts(versions[0]))  # shown before the answer exists
    final = versions[-1]
    assert all(v["flags"] & V2_FLAG for v in versions) and discord_api.rate_limited == []
    assert "24 months" in texts(final)[0]
    assert any("X200 Dishwasher Manual, p. 1" in t for t in texts(final))
    urls = [i["media"]["url"].removeprefix("attachment://") for g in of_type(final, 12) for i in g["items"]]
    stored = {a["filename"]: a for a in final["attachments"]}
    assert urls and set(urls) <= set(stored)
    # what Discord keeps is what the core drew: the highlight crop's bytes, downloadable from the CDN
    crop = next(u for u in urls if "highlight" in u)
    data = await discord.Attachment(data=stored[crop], state=client._connection).read()
    assert data.startswith(b"\x89PNG")
    assert len(of_type(final, 2)) == 2


def test_layout_and_edit_interval_settings():
    from bot.discord.settings import DiscordSettings
    from core.errors import BadInput

    default = DiscordSettings.parse({})
    assert default.layout_v2 and default.edit_interval == 1.0
    chosen = DiscordSettings.parse({"DISCORD_LAYOUT": "embeds", "DISCORD_EDIT_INTERVAL": "2.5"})
    assert not chosen.layout_v2 and chosen.edit_interval == 2.5
    for bad in ({"DISCORD_LAYOUT": "fancy"}, {"DISCORD_EDIT_INTERVAL": "0.1"}, {"DISCORD_EDIT_INTERVAL": "soon"}):
        with pytest.raises(BadInput, match=next(iter(bad))):
            DiscordSettings.parse(bad)


async def test_slash_ask_is_deferred_then_streams_into_its_follow_up(bot, discord_api):
    pieces = [f"Step {i} of the answer. " for i in range(8)]
    client = await streaming_client(bot, discord_api, pieces)
    inter = discord_api.command(client, "ask", {"question": "what is the warranty?"}, 4242)
    deferred = await asyncio.wait_for(discord_api.reply(inter), 10)
    assert deferred["type"] == 5  # "pixelrag is thinking…" within Discord's 3 seconds

    def answered() -> bool:
        return any(of_type(vs[-1], 2) for vs in discord_api.versions.values())

    await asyncio.wait_for(discord_api.until(answered), 10)  # a guard, not a wait for time to pass
    mid, versions = only_message(discord_api)
    assert "Searching 1 document" in "\n".join(texts(versions[0]))
    assert len(versions) >= 3 and discord_api.rate_limited == []
    final = versions[-1]
    assert "Step 7 of the answer." in texts(final)[0] and of_type(final, 12)
    assert client.questions.service.turns[0].question == "what is the warranty?"


async def test_layout_limits_and_a_citation_without_images():
    # On the bot's event loop, as the adapter renders: discord.py 2.6 builds a view only on a running loop.
    from bot.discord.layout import render_layout
    from core.records import Answer, Citation

    oversize = Citation("d" * 16, "Price list", 3, "EUR 499", None, preview=b"\xff" * 5000, crop=b"")
    [out] = render_layout(Answer("price?", "price?", "EUR 499.", citations=(oversize,)), upload_limit=4000, turn_id=1)
    components = out.layout.to_components()
    found = []

    def walk(cs):
        for c in cs:
            found.append(c)
            walk(c.get("components") or [])

    walk(components)
    assert not out.files and not [c for c in found if c["type"] == 12]  # nothing to show: no empty gallery
    text = [c["content"] for c in found if c["type"] == 10]
    assert any("**1.** Price list, p. 3 (page preview)" in t for t in text)  # but the source is named
    assert any("upload limit" in t for t in text)
    check_message({"flags": V2_FLAG, "components": components}, set(), 0)


async def test_an_upload_refused_for_a_layout_still_delivers_the_words():
    from unittest.mock import AsyncMock

    from bot.discord.layout import render_layout
    from bot.discord.render import Rendered
    from bot.discord.replies import deliver_answer
    from core.records import Turn

    cite_answer = await FakeService().answer(Turn("q", (), "shared", "", ()))
    rendered = Rendered(render_layout(cite_answer, turn_id=3), [])
    too_large = discord.HTTPException(MagicMock(status=413, reason="Payload Too Large"), "too large")
    send = AsyncMock(side_effect=[too_large, None])
    await deliver_answer(send, rendered)
    assert send.call_args_list[1].kwargs["content"].startswith("The warranty is **2 years**.")
    assert "The page previews could not be uploaded." in send.call_args_list[1].kwargs["content"]


async def test_not_ready_until_the_gateway_is_connected(bot, tmp_path):
    """Logged in over REST but not on the gateway: /readyz says why, whatever the index says."""
    from bot.discord.client import gateway_connected
    from bot.health import readiness
    from core import Service

    service = Service(Settings(index_dir=tmp_path / "index"))
    client = await bot(service)
    assert await service.readiness() is None
    assert await readiness(service, gateway_connected(client))() == "not connected to Discord's gateway"


async def test_each_cited_page_gets_a_link_button_or_a_linked_embed(bot, discord_api):
    base = "https://pixelrag.example.com"
    discord_api.link_base = base  # the fake refuses a link elsewhere, or one that is not a well-formed URL
    client = await bot(FakeService(citations=3, link_base=base))
    await client.questions.on_message(dm_message(client, "what is the warranty?"))
    final = only_message(discord_api)[1][-1]
    buttons = [c for c in of_type(final, 2) if c.get("style") == 5]
    assert [b["url"] for b in buttons] == [f"{base}/view/page{n}.signed" for n in (1, 2, 3)]
    assert [b["label"] for b in buttons] == [f"Open p. {n} · Dishwasher manual" for n in (1, 2, 3)]
    # Where Discord refuses the layout, each citation's embed title links to its page.
    discord_api.versions.clear()
    discord_api.refuse_v2 = True
    again = dm_message(client, "and the guarantee?")
    again.id = 78  # another message (77's delivery is claimed and done)
    await client.questions.on_message(again)
    embeds = [e for versions in discord_api.versions.values() for e in versions[-1].get("embeds") or []]
    assert [e.get("url") for e in embeds if e.get("url")] == [f"{base}/view/page{n}.signed" for n in (1, 2, 3)]
    # Without a public address, no links at all.
    discord_api.versions.clear()
    discord_api.refuse_v2 = False
    plain = await bot(FakeService(citations=2))
    last = dm_message(plain, "warranty once more?")
    last.id = 79
    await plain.questions.on_message(last)
    final = only_message(discord_api)[1][-1]
    assert not [c for c in of_type(final, 2) if c.get("style") == 5]
