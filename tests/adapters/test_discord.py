"""Discord adapter, offline: spec'd mocks of discord.py objects, real discord.File / discord.Embed.

Nothing here connects to Discord. Unit scenarios drive DiscordQuestions and DiscordCommands with a small fake service;
the end-to-end scenarios use the real core Service with the local backend on PDFs made here.
"""

from __future__ import annotations

import asyncio
import io
import itertools
import re
from pathlib import Path
from unittest.mock import AsyncMock, MagicMock

import discord
import pytest
from PIL import Image

from bot.discord import DiscordCommands, DiscordQuestions, build_client
from bot.discord.progress import ProgressNotice
from bot.discord.render import MAX_CONTENT, NO_PINGS, Outgoing, render_answer, split_text
from bot.discord.replies import deliver
from bot.discord.routing import scope_for, thread_key
from core.config import Settings
from core.embedded.threads import EmbeddedThreads
from core.errors import RemoteError
from core.records import (
    SHARED_SCOPE,
    Answer,
    Citation,
    Document,
    Highlight,
    IndexReport,
    Progress,
    Turn,
)
from tests.conftest import closed_port

ME_ID = 999
GUILD_A, GUILD_B = 1001, 1002
_ids = itertools.count(5000)


# ---- spec'd discord objects -------------------------------------------------------------------


def png_bytes(size=(40, 30), colour=(200, 30, 30)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, "PNG")
    return buf.getvalue()


def make_me() -> MagicMock:
    me = MagicMock(spec=discord.ClientUser)
    me.id = ME_ID
    me.bot = True
    return me


def make_user(uid: int | None = None, *, bot=False, manage=False, roles=()) -> MagicMock:
    user = MagicMock(spec=discord.Member)
    user.id = uid or next(_ids)
    user.bot = bot
    user.guild_permissions = discord.Permissions(manage_guild=manage)
    user.roles = list(roles)
    user.display_name = f"user{user.id}"
    return user


def make_guild(gid: int, limit: int = discord.utils.DEFAULT_FILE_SIZE_LIMIT_BYTES) -> MagicMock:
    guild = MagicMock(spec=discord.Guild)
    guild.id = gid
    guild.filesize_limit = limit
    return guild


def sent_message() -> MagicMock:
    msg = MagicMock(spec=discord.Message)
    msg.id = next(_ids)
    msg.edit = AsyncMock()
    return msg


def sending() -> AsyncMock:
    """A send that returns editable messages and remembers them (streamed answers are edited)."""
    returned: list[MagicMock] = []

    def send(*args, **kwargs):
        returned.append(sent_message())
        return returned[-1]

    mock = AsyncMock(side_effect=send)
    mock.returned = returned
    return mock


def with_send(channel: MagicMock) -> MagicMock:
    channel.send = sending()
    return channel


def make_text_channel(guild) -> MagicMock:
    channel = MagicMock(spec=discord.TextChannel)
    channel.id = next(_ids)
    channel.guild = guild
    return with_send(channel)


def make_thread(guild, parent_id: int, owner_id: int = ME_ID) -> MagicMock:
    thread = MagicMock(spec=discord.Thread)
    thread.id = next(_ids)
    thread.parent_id = parent_id
    thread.owner_id = owner_id
    thread.guild = guild
    return with_send(thread)


def make_dm() -> MagicMock:
    dm = MagicMock(spec=discord.DMChannel)
    dm.id = next(_ids)
    return with_send(dm)


def make_attachment(filename: str, data: bytes, content_type: str | None) -> MagicMock:
    att = MagicMock(spec=discord.Attachment)
    att.filename = filename
    att.content_type = content_type
    att.size = len(data)
    att.read = AsyncMock(return_value=data)
    return att


def make_message(
    content: str, channel, author=None, *, guild=None, mention_me=False, attachments=(), reference=None
) -> MagicMock:
    msg = MagicMock(spec=discord.Message)
    msg.id = next(_ids)
    msg.type = discord.MessageType.default
    msg.author = author or make_user()
    msg.channel = channel
    msg.guild = guild
    msg.content = (f"<@{ME_ID}> " + content) if mention_me else content
    msg.mentions = [make_me()] if mention_me else []
    msg.role_mentions = []
    msg.attachments = list(attachments)
    msg.reference = reference
    new_thread = make_thread(guild, parent_id=getattr(channel, "id", 0)) if guild else None
    msg.create_thread = AsyncMock(return_value=new_thread)
    return msg


def make_interaction(guild=None, *, user=None, manage=False, channel=None) -> MagicMock:
    inter = MagicMock(spec=discord.Interaction)
    inter.id = next(_ids)
    inter.guild = guild
    inter.guild_id = guild.id if guild else None
    inter.user = user or make_user(manage=manage)
    inter.permissions = discord.Permissions(manage_guild=manage)
    inter.channel = channel or (make_text_channel(guild) if guild else make_dm())
    inter.response = MagicMock(spec=discord.InteractionResponse)
    inter.response.defer = AsyncMock()
    inter.response.send_message = AsyncMock()
    inter.followup = MagicMock(spec=discord.Webhook)
    inter.followup.send = sending()
    inter.edit_original_response = AsyncMock()
    return inter


def sends(mock_send: AsyncMock) -> list[dict]:
    """What each sent message shows in the end: its last edit's arguments, else those it was sent with."""
    returned = getattr(mock_send, "returned", [])
    out = []
    for i, call in enumerate(mock_send.call_args_list):
        edits = returned[i].edit.call_args_list if i < len(returned) else []
        out.append(edits[-1].kwargs if edits else call.kwargs)
    return out


def view_texts(kwargs: dict) -> list[str]:
    view = kwargs.get("view")
    if not isinstance(view, discord.ui.LayoutView):
        return []
    return [item.content for item in view.walk_children() if isinstance(item, discord.ui.TextDisplay)]


def message_text(kwargs: dict) -> str:
    return "\n".join(t for t in [kwargs.get("content") or ""] + view_texts(kwargs) if t)


def all_text(mock_send: AsyncMock) -> str:
    return "\n".join(message_text(k) for k in sends(mock_send))


def gallery_urls(kwargs: dict) -> list[str]:
    view = kwargs.get("view")
    if not isinstance(view, discord.ui.LayoutView):
        return []
    return [i.media.url for g in view.walk_children() if isinstance(g, discord.ui.MediaGallery) for i in g.items]


def buttons(kwargs: dict) -> list[str]:
    view = kwargs.get("view")
    if view is None:
        return []
    return [b.custom_id for b in view.walk_children() if isinstance(b, (discord.ui.Button, discord.ui.DynamicItem))]


def assert_attachment_links(kwargs: dict) -> None:
    """Every embed image/thumbnail and gallery item points at a file sent in the same message."""
    names = {f.filename for f in kwargs.get("files") or kwargs.get("attachments") or []}
    for url in gallery_urls(kwargs):
        assert url.removeprefix("attachment://") in names
    for embed in kwargs.get("embeds", []):
        assert isinstance(embed, discord.Embed)
        assert embed.image.url and embed.image.url.startswith("attachment://")
        assert embed.image.url.removeprefix("attachment://") in names
        if embed.thumbnail.url:
            assert embed.thumbnail.url.removeprefix("attachment://") in names


# ---- a fake service for the unit scenarios ----------------------------------------------------


class FakeService:
    """Stands in for core.service.Service: records calls, writes preview/crop files like the real one."""

    def __init__(
        self,
        markdown="The warranty is **2 years**.",
        citations=1,
        interpreted=None,
        clarify=None,
        fail: Exception | None = None,
        topic="warranty",
        link_base: str | None = None,
    ):
        self.settings = Settings()  # as the real one's: no question limits
        self.link_base = link_base  # citations link to the page viewer there
        self.turns: list[Turn] = []
        self.markdown = markdown
        self.citations = citations
        self.interpreted = interpreted
        self.clarify = clarify
        self.fail = fail
        self.topic = topic
        self.indexed: list[tuple[str, str, int]] = []
        self.removed: list[tuple[str, str]] = []

    async def answer(self, turn: Turn, out_dir: Path | None = None, events=None) -> Answer:
        self.turns.append(turn)
        if self.fail:
            raise self.fail
        cites = []
        for i in range(self.citations):
            cites.append(
                Citation(
                    "d" * 16,
                    "Dishwasher manual",
                    i + 1,
                    "Warranty: 2 years from purchase.",
                    Highlight("exact", (0.1, 0.1, 0.5, 0.2)),
                    preview=png_bytes((60, 80)),
                    crop=png_bytes((30, 10)),
                    url=f"{self.link_base}/view/page{i + 1}.signed" if self.link_base else None,
                )
            )
        return Answer(
            turn.question,
            self.interpreted or turn.question,
            self.markdown,
            citations=tuple(cites),
            topic=self.topic,
            clarifying_question=self.clarify,
        )

    @property
    def requests(self):
        """Indexing asked for in a chat (core.IndexRequests): recorded here, as the builds are."""
        return self

    async def index_bytes(self, data, name, *, scope, title=None, progress=None, notify=""):
        self.indexed.append((name, scope, len(data)))
        if progress:
            progress(Progress("render", 1, 1, name))
        doc = Document("a" * 16, title or name.removesuffix(".pdf"), name, "a" * 64, 1, scope)
        return IndexReport((doc,), 1, 1, 0, "snap")

    async def index(self, sources, *, titles=(), scope=SHARED_SCOPE, progress=None, notify=""):
        self.indexed.extend((s, scope, 0) for s in sources)
        return IndexReport((), 0, 0, 0, "snap")

    async def reindex(self, scope, document=None, progress=None, notify=""):
        return IndexReport((), 0, 0, 0, "snap")

    async def remove(self, scope, document):
        self.removed.append((scope, document))
        return Document("a" * 16, document, f"{document}.pdf", "a" * 64, 1, scope)

    async def documents(self, scope):
        return [Document("a" * 16, "Shared brochure", "brochure.pdf", "a" * 64, 2, SHARED_SCOPE)]


@pytest.fixture
async def store(tmp_path):
    threads = await EmbeddedThreads(tmp_path / "threads.sqlite").open()
    yield threads
    await threads.close()


class Handlers:
    """A message and an app command reaching the same bot: its questions and its document commands."""

    def __init__(self, service, store, settings: Settings, me):
        self.questions = DiscordQuestions(service, store, settings, me=me)
        self.commands = DiscordCommands(service, store, settings)


def handlers_for(service, store, **extra) -> Handlers:
    me = make_me()
    return Handlers(service, store, Settings(extra=dict(extra)), me=lambda: me)


# ---- messages ---------------------------------------------------------------------------------


async def test_mention_creates_thread_and_answers_there_in_one_layout(store):
    service = FakeService(citations=2)
    h = handlers_for(service, store)
    guild = make_guild(GUILD_A)
    channel = make_text_channel(guild)
    msg = make_message("what is the warranty period?", channel, guild=guild, mention_me=True)

    await h.questions.on_message(msg)

    msg.create_thread.assert_awaited_once()
    assert msg.create_thread.call_args.kwargs["name"] == "what is the warranty period?"
    thread = msg.create_thread.return_value
    channel.send.assert_not_called()  # the answer goes into the thread, not the channel
    assert service.turns[0].question == "what is the warranty period?"  # mention stripped
    assert service.turns[0].scope == f"discord:{GUILD_A}/{channel.id}"  # the thread's channel's collection
    [kwargs] = sends(thread.send)  # answer, evidence and buttons: one message
    assert set(kwargs) == {"view", "files", "allowed_mentions"} and isinstance(kwargs["view"], discord.ui.LayoutView)
    assert kwargs["allowed_mentions"].to_dict() == {"parse": []}  # quoted text can never ping
    texts = view_texts(kwargs)
    assert "2 years" in texts[0]
    assert len(kwargs["files"]) == 4 and len(gallery_urls(kwargs)) == 4
    assert all(isinstance(f, discord.File) for f in kwargs["files"])
    assert_attachment_links(kwargs)
    assert "**1.** Dishwasher manual, p. 1 (exact highlight) — “Warranty: 2 years from purchase.”" in texts[-1]
    [container] = [c for c in kwargs["view"].children if isinstance(c, discord.ui.Container)]
    assert container.accent_colour == discord.Colour.blue()  # warranty topic colour
    assert len(buttons(kwargs)) == 2


async def test_follow_up_in_bot_thread_without_mention_uses_history(store):
    service = FakeService()
    h = handlers_for(service, store)
    guild = make_guild(GUILD_A)
    channel = make_text_channel(guild)
    first = make_message("what is the warranty period?", channel, guild=guild, mention_me=True)
    await h.questions.on_message(first)
    thread = first.create_thread.return_value

    follow = make_message("and for the motor?", thread, guild=guild)  # no mention
    await h.questions.on_message(follow)

    follow.create_thread.assert_not_called()
    assert len(service.turns) == 2
    history = service.turns[1].history
    assert [e.question for e in history] == ["what is the warranty period?"]
    assert "2 years" in history[0].answer
    assert history[0].cited == (("d" * 16, 1),)
    assert len(sends(thread.send)) == 2
    assert thread_key(thread, GUILD_A) == ("discord", str(GUILD_A), str(channel.id), str(thread.id))


async def test_reply_to_bot_message_is_answered_but_unrelated_chatter_is_not(store):
    service = FakeService()
    h = handlers_for(service, store)
    guild = make_guild(GUILD_A)
    someone_elses_thread = make_thread(guild, parent_id=1, owner_id=42)

    chatter = make_message("lunch?", someone_elses_thread, guild=guild)
    await h.questions.on_message(chatter)
    assert service.turns == []

    bot_msg = MagicMock(spec=discord.Message)
    bot_msg.author = make_me()
    ref = MagicMock(spec=discord.MessageReference)
    ref.resolved = bot_msg
    reply = make_message("which page says that?", someone_elses_thread, guild=guild, reference=ref)
    await h.questions.on_message(reply)
    assert [t.question for t in service.turns] == ["which page says that?"]
    assert sends(someone_elses_thread.send)


async def test_image_attachment_is_the_query(store):
    service = FakeService()
    h = handlers_for(service, store)
    dm = make_dm()
    shot = make_attachment("screen.png", png_bytes(), "image/png")
    msg = make_message("", dm, attachments=[shot])

    await h.questions.on_message(msg)

    [turn] = service.turns
    assert len(turn.images) == 1 and turn.images[0].mime_type == "image/png"
    assert turn.images[0].name == "screen.png"
    assert turn.question == ""  # the screenshot alone is the query
    assert turn.scope == SHARED_SCOPE  # DMs see the shared collection only
    msg.create_thread.assert_not_called()
    assert sends(dm.send)


async def test_unusable_attachments_are_named(store):
    service = FakeService()
    h = handlers_for(service, store)
    guild = make_guild(GUILD_A)
    channel = make_text_channel(guild)
    atts = [
        make_attachment("notes.txt", b"hello", "text/plain"),
        make_attachment("broken.png", b"not a png", "image/png"),
        make_attachment("manual.pdf", b"%PDF-1.7", "application/pdf"),  # no "index this"
    ]
    msg = make_message("what is the warranty?", channel, guild=guild, mention_me=True, attachments=atts)

    await h.questions.on_message(msg)

    text = all_text(msg.create_thread.return_value.send)
    for name in ("notes.txt", "broken.png", "manual.pdf"):
        assert name in text
    assert "index this" in text
    assert service.turns[0].images == ()  # the broken image was not passed on


async def test_other_bots_and_itself_are_ignored(store):
    service = FakeService()
    h = handlers_for(service, store)
    guild = make_guild(GUILD_A)
    channel = make_text_channel(guild)
    from_bot = make_message("hi", channel, make_user(bot=True), guild=guild, mention_me=True)
    me_as_author = make_user(ME_ID, bot=True)
    from_me = make_message("hi", channel, me_as_author, guild=guild, mention_me=True)
    for msg in (from_bot, from_me):
        await h.questions.on_message(msg)
        msg.create_thread.assert_not_called()
    assert service.turns == []
    channel.send.assert_not_called()


async def test_duplicate_delivery_answered_once(store):
    service = FakeService()
    h = handlers_for(service, store)
    dm = make_dm()
    msg = make_message("warranty?", dm)
    await h.questions.on_message(msg)
    await h.questions.on_message(msg)
    assert len(service.turns) == 1


async def test_long_answer_split_on_paragraphs(store):
    paragraphs = [f"Paragraph {i}: " + ("word " * 80).strip() for i in range(12)]  # ~ 5,000 characters
    service = FakeService(markdown="\n\n".join(paragraphs), citations=1)
    h = handlers_for(service, store)
    dm = make_dm()
    await h.questions.on_message(make_message("tell me everything", dm))

    calls = sends(dm.send)
    assert len(calls) >= 2
    answer = []
    for kwargs in calls:
        texts = view_texts(kwargs)
        assert sum(map(len, texts)) <= 4000  # Discord's limit across a V2 message's text
        answer += [t for t in texts if not t.startswith("📄 **Sources**")]
    for text in answer:
        for chunk in text.split("\n\n"):
            assert chunk in paragraphs  # no paragraph cut in half
    assert "\n\n".join(answer) == "\n\n".join(paragraphs)
    assert gallery_urls(calls[-1]) and not any(gallery_urls(k) for k in calls[:-1])  # citations close the reply
    assert buttons(calls[-1]) and not any(buttons(k) for k in calls[:-1])


def test_split_text_falls_back_to_lines_and_words():
    huge_line = "x" * 4500
    chunks = split_text("short intro\n\n" + huge_line)
    assert all(len(c) <= MAX_CONTENT for c in chunks)
    assert chunks[0] == "short intro"
    assert "".join(chunks[1:]) == huge_line


async def test_interpreted_question_clarifying_question_and_notes(store):
    guild = make_guild(GUILD_A)
    thread = make_thread(guild, parent_id=7)
    h = handlers_for(FakeService(interpreted="What is the warranty period of the X200 dishwasher?"), store)
    await h.questions.on_message(make_message("and the X200?", thread, guild=guild))
    assert "Interpreted as: *What is the warranty period of the X200 dishwasher?*" in all_text(thread.send)

    thread2 = make_thread(guild, parent_id=7)
    service = FakeService(clarify="Which model do you mean, X200 or X300?")
    h = handlers_for(service, store)
    await h.questions.on_message(make_message("and its width?", thread2, guild=guild))
    [kwargs] = sends(thread2.send)
    assert view_texts(kwargs) == ["❓ Which model do you mean, X200 or X300?"]
    assert "files" not in kwargs and not gallery_urls(kwargs) and not buttons(kwargs)
    # the clarifying question becomes thread memory, so the answer to it has context
    key = thread_key(thread2, GUILD_A)
    assert (await store.history(key))[0].answer == "Which model do you mean, X200 or X300?"


def test_render_skips_oversize_files_with_visible_note(tmp_path):
    cite = Citation("d" * 16, "Price list", 3, "EUR 499", None, preview=b"\xff" * 5000, crop=png_bytes())
    answer = Answer("price?", "price?", "EUR 499.", citations=(cite,), topic="price")
    [out] = render_answer(answer, upload_limit=4000)
    assert [f.filename for f in out.files] == ["c1-p3-highlight.png"]
    assert "Price list, p. 3" in out.content and "upload limit" in out.content
    assert out.embeds[0].colour == discord.Colour.gold()
    assert_attachment_links(out.kwargs())


def test_render_at_most_ten_files_and_embeds_per_message(tmp_path):
    cites = []
    for i in range(7):  # 7 citations x 2 images = 14 files: two messages
        cites.append(Citation("d" * 16, "Manual", i + 1, "quote", None, preview=png_bytes(), crop=png_bytes()))
    messages = render_answer(Answer("q", "q", "answer", citations=tuple(cites)))
    assert len(messages) == 2
    for out in messages:
        assert len(out.files) <= 10 and len(out.embeds) <= 10
        assert_attachment_links(out.kwargs())
    assert sum(len(m.embeds) for m in messages) == 7


async def test_failure_reaches_the_user_briefly(store, caplog):
    guild = make_guild(GUILD_A)
    thread = make_thread(guild, parent_id=7)
    h = handlers_for(FakeService(fail=RemoteError("Gemini did not answer after 2 attempts; try again later.")), store)
    await h.questions.on_message(make_message("warranty?", thread, guild=guild))
    assert all_text(thread.send) == "⚠️ Gemini did not answer after 2 attempts; try again later."

    thread2 = make_thread(guild, parent_id=7)
    h = handlers_for(FakeService(fail=ZeroDivisionError("secret internals")), store)
    await h.questions.on_message(make_message("warranty?", thread2, guild=guild))
    text = all_text(thread2.send)
    assert "went wrong" in text and "secret internals" not in text and "Traceback" not in text
    assert "secret internals" in caplog.text  # details go to the log


async def test_upload_refused_falls_back_to_text_with_note():
    response = MagicMock(status=413, reason="Payload Too Large")
    send = AsyncMock(side_effect=[discord.HTTPException(response, "too large"), sent_message()])
    out = Outgoing("The answer.", [discord.Embed(title="x")], [discord.File(io.BytesIO(b"x"), filename="a.png")])
    await deliver(send, [out])
    assert send.call_args_list[1].kwargs == {
        "content": "The answer.\n\n-# ⚠️ The page previews could not be uploaded.",
        "allowed_mentions": NO_PINGS,
    }


async def test_thread_creation_refused_replies_in_channel(store):
    service = FakeService()
    h = handlers_for(service, store)
    guild = make_guild(GUILD_A)
    channel = make_text_channel(guild)
    msg = make_message("warranty?", channel, guild=guild, mention_me=True)
    msg.create_thread.side_effect = discord.Forbidden(MagicMock(status=403, reason="Forbidden"), "Missing Permissions")
    await h.questions.on_message(msg)
    assert "2 years" in all_text(channel.send)


# ---- indexing by message and app commands -----------------------------------------------------


async def test_index_this_with_pdf_needs_permission(store):
    service = FakeService()
    h = handlers_for(service, store)
    guild = make_guild(GUILD_A)
    pdf = make_attachment("manual.pdf", b"%PDF-1.7 ...", "application/pdf")

    refused = make_message(
        "index this", make_text_channel(guild), make_user(manage=False), guild=guild, mention_me=True, attachments=[pdf]
    )
    await h.questions.on_message(refused)
    assert service.indexed == []
    assert "Manage Server" in all_text(refused.create_thread.return_value.send)

    allowed = make_message(
        "index this", make_text_channel(guild), make_user(manage=True), guild=guild, mention_me=True, attachments=[pdf]
    )
    await h.questions.on_message(allowed)
    assert service.indexed == [("manual.pdf", f"discord:{GUILD_A}", len(b"%PDF-1.7 ..."))]
    assert "Indexed **manual**" in all_text(allowed.create_thread.return_value.send)
    assert service.turns == []  # an index request is not a question


async def test_a_question_mentioning_the_index_with_a_pdf_is_a_question(store):
    # Only "index this" (and its variants) as the whole message starts indexing.
    service = FakeService()
    h = handlers_for(service, store)
    guild = make_guild(GUILD_A)
    pdf = make_attachment("manual.pdf", b"%PDF-1.7 ...", "application/pdf")
    msg = make_message(
        "please tell me about the index",
        make_text_channel(guild),
        make_user(manage=True),
        guild=guild,
        mention_me=True,
        attachments=[pdf],
    )
    await h.questions.on_message(msg)
    assert service.indexed == []
    assert [t.question for t in service.turns] == ["please tell me about the index"]
    text = all_text(msg.create_thread.return_value.send)
    assert "2 years" in text
    assert "manual.pdf: PDFs are not read as questions" in text and "index this" in text


@pytest.mark.parametrize("command", ["index", "remove"])
async def test_index_and_remove_refused_without_manage_server(store, command):
    service = FakeService()
    h = handlers_for(service, store)
    inter = make_interaction(make_guild(GUILD_A), manage=False)
    if command == "index":
        await h.commands.index(inter, url="https://example.com/a.pdf")
    else:
        await h.commands.remove(inter, "manual")
    inter.response.send_message.assert_awaited_once()
    assert "Manage Server" in inter.response.send_message.call_args.args[0]
    assert inter.response.send_message.call_args.kwargs["ephemeral"] is True
    inter.response.defer.assert_not_called()
    assert service.indexed == [] and service.removed == []


async def test_index_users_and_role_override(store):
    service = FakeService()
    user = make_user(4242)
    h = handlers_for(service, store, DISCORD_INDEX_USERS="17, 4242")
    inter = make_interaction(make_guild(GUILD_A), user=user)
    await h.commands.remove(inter, "manual")
    assert service.removed == [(f"discord:{GUILD_A}/{inter.channel.id}", "manual")]  # looked up from its channel
    assert "Removed **manual**" in all_text(inter.followup.send)

    role = MagicMock(spec=discord.Role)
    role.id, role.name = 55, "Librarian"
    h = handlers_for(service, store, DISCORD_INDEX_ROLE="Librarian")
    inter = make_interaction(make_guild(GUILD_A), user=make_user(roles=[role]))
    pdf = make_attachment("m.pdf", b"%PDF-1.7", "application/pdf")
    await h.commands.index(inter, attachment=pdf)
    inter.response.defer.assert_awaited_once_with(thinking=True)
    assert service.indexed[-1] == ("m.pdf", f"discord:{GUILD_A}", 8)


async def test_admin_commands_refused_in_dms(store):
    h = handlers_for(FakeService(), store)
    inter = make_interaction(None, manage=True)
    await h.commands.reindex(inter)
    assert "server" in inter.response.send_message.call_args.args[0]


async def test_ask_defers_with_thinking_then_follows_up(store):
    service = FakeService(citations=1)
    h = handlers_for(service, store)
    guild = make_guild(GUILD_B)
    inter = make_interaction(guild)
    shot = make_attachment("s.webp", png_bytes(), "image/webp")  # content is checked, not the label
    shot.read.return_value = _webp()

    await h.questions.ask(inter, "what is the warranty?", shot)

    inter.response.defer.assert_awaited_once_with(thinking=True)
    [kwargs] = sends(inter.followup.send)
    assert "2 years" in message_text(kwargs) and gallery_urls(kwargs)
    assert inter.followup.send.call_args.kwargs["wait"] is True  # the message comes back, to be edited
    assert_attachment_links(kwargs)
    assert service.turns[0].scope == f"discord:{GUILD_B}/{inter.channel.id}"
    assert service.turns[0].images[0].mime_type == "image/webp"


def _webp() -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (20, 20), (1, 2, 3)).save(buf, "WEBP")
    return buf.getvalue()


async def test_ask_failure_is_followed_up(store):
    h = handlers_for(FakeService(fail=RemoteError("The model is unavailable.")), store)
    inter = make_interaction(make_guild(GUILD_A))
    await h.questions.ask(inter, "warranty?")
    assert all_text(inter.followup.send) == "⚠️ The model is unavailable."


async def test_docs_lists_what_the_scope_sees(store):
    h = handlers_for(FakeService(), store)
    inter = make_interaction(make_guild(GUILD_A))
    await h.commands.docs(inter)
    inter.response.defer.assert_awaited_once_with(thinking=True)
    assert "Shared brochure" in all_text(inter.followup.send)


class ManualClock:
    """A `sleep` for the progress loop that returns only when the test lets an interval pass."""

    def __init__(self):
        self.slept: list[float] = []
        self._wake: asyncio.Future | None = None
        self._asleep = asyncio.Event()

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self._wake = asyncio.get_running_loop().create_future()
        self._asleep.set()
        await self._wake

    async def tick(self) -> None:
        """One interval passes: the loop wakes, does its edit, and is asleep again when this returns."""
        await self._asleep.wait()
        self._asleep.clear()
        self._wake.set_result(None)
        await self._asleep.wait()


def edited(edit: AsyncMock) -> list[str]:
    return [c.args[0] for c in edit.call_args_list]


async def test_progress_edits_are_throttled():
    clock = ManualClock()
    edit = AsyncMock()
    async with ProgressNotice(edit, interval=2.0, sleep=clock.sleep) as notice:
        for i in range(50):
            notice(Progress("embed", i + 1, 50, "manual.pdf"))
        assert edited(edit) == []  # nothing is shown before an interval has passed
        await clock.tick()
        assert edited(edit) == ["⏳ Indexing **manual.pdf**: embed 50/50…"]  # 50 updates, one edit: the latest
        await clock.tick()
        assert len(edited(edit)) == 1  # nothing new, no edit
        notice(Progress("publish", 1, 2, "manual.pdf"))
        notice(Progress("publish", 2, 2, "manual.pdf"))
        await clock.tick()
    assert edited(edit) == [
        "⏳ Indexing **manual.pdf**: embed 50/50…",
        "⏳ Indexing **manual.pdf**: publish 2/2…",
        "✅ Indexing finished.",
    ]
    assert set(clock.slept) == {2.0}  # it waits the interval it was given


async def test_client_registers_commands_without_connecting(store):
    client = build_client(FakeService(), store, Settings())
    try:
        await client.add_cogs()  # what setup_hook does before syncing the tree
        commands = {c.name: c for c in client.tree.get_commands()}
        admin = ("index", "remove", "scope", "indexing", "watch", "unwatch", "autoindex")
        assert set(commands) == {"ask", "reindex", "docs", "status", *admin}
        assert all(commands[name].default_permissions.manage_guild for name in admin)
        assert [c.value for c in commands["scope"].parameters[1].choices] == ["channel", "workspace"]
        assert commands["ask"].default_permissions is None
        assert [p.name for p in commands["ask"].parameters] == ["question", "image"]
        assert client.intents.message_content
        assert not client.is_ready()
        assert all(commands[name].guild_only for name in ("reindex", *admin))
        assert not commands["ask"].guild_only and not commands["docs"].guild_only
        for name in ("remove", "reindex", "scope"):
            assert commands[name].parameters[0].autocomplete  # this channel's and server's documents
        assert client.help_command is None  # no prefix commands: "@pixelrag help" is a question
    finally:
        await client.close()


async def test_custom_index_access_keeps_admin_commands_visible(store):
    client = build_client(FakeService(), store, Settings(extra={"DISCORD_INDEX_ROLE": "Librarian"}))
    try:
        await client.add_cogs()
        commands = {c.name: c for c in client.tree.get_commands()}
        assert all(commands[name].default_permissions is None for name in ("index", "reindex", "remove"))
        assert commands["index"].guild_only
    finally:
        await client.close()


def test_scope_for():
    assert scope_for(None) == SHARED_SCOPE
    assert scope_for(GUILD_A) == f"discord:{GUILD_A}"


# ---- end to end with the real service (local backend) -----------------------------------------


def make_pdf(title: str, pages: list[str]) -> bytes:
    import pymupdf

    doc = pymupdf.open()
    for text in pages:
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(72, 72, 520, 770), text, fontsize=12)
    doc.set_metadata({"title": title})
    data = doc.tobytes()
    doc.close()
    return data


MANUAL_A = make_pdf(
    "X200 Dishwasher Manual",
    [
        "Warranty\n\nThe X200 dishwasher warranty lasts 24 months from the date of purchase. "
        "Quote registration code QZ-7781 when you contact service.",
        "Cleaning the filter\n\nTwist the filter anticlockwise and rinse it under running water every week.",
    ],
)
BROCHURE = make_pdf(
    "Z9 Blender Brochure",
    [
        "Z9 Blender\n\nThe Z9 blender has a 1200 W motor and a 1.8 litre glass jug. Price: EUR 199.",
    ],
)


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings().with_(index_dir=tmp_path / "index")


def embed_titles(mock_send: AsyncMock) -> list[str]:
    """The cited pages, "Title p. N", from embeds or from a layout's sources lines."""
    titles = [e.title for k in sends(mock_send) for e in k.get("embeds", [])]
    for kwargs in sends(mock_send):
        for text in view_texts(kwargs):
            if text.startswith("📄 **Sources**"):
                titles += [f"{m[1]} p. {m[2]}" for m in re.finditer(r"\*\*\d+\.\*\* (.+?), p\. (\d+) \(", text)]
    return titles


async def test_guild_isolation_end_to_end(tmp_path, settings, store):
    from core.service import Service

    service = Service(settings)
    shared = tmp_path / "brochure.pdf"
    shared.write_bytes(BROCHURE)
    await service.index([str(shared)])  # the operator's shared collection (CLI)

    me = make_me()
    h = Handlers(service, store, settings, lambda: me)
    guild_a, guild_b = make_guild(GUILD_A), make_guild(GUILD_B)

    # a member with Manage Server indexes a PDF in guild A by attaching it with "index this"
    pdf = make_attachment("x200-manual.pdf", MANUAL_A, "application/pdf")
    idx = make_message(
        "index this",
        make_text_channel(guild_a),
        make_user(manage=True),
        guild=guild_a,
        mention_me=True,
        attachments=[pdf],
    )
    await h.questions.on_message(idx)
    assert "Indexed **X200 Dishwasher Manual**" in all_text(idx.create_thread.return_value.send)

    question = "How long is the X200 dishwasher warranty?"
    in_a = make_message(question, make_text_channel(guild_a), guild=guild_a, mention_me=True)
    await h.questions.on_message(in_a)
    thread_a = in_a.create_thread.return_value
    assert "X200 Dishwasher Manual p. 1" in embed_titles(thread_a.send)
    assert "24 months" in all_text(thread_a.send)
    for kwargs in sends(thread_a.send):
        assert_attachment_links(kwargs)
    assert any(kwargs.get("files") or kwargs.get("attachments") for kwargs in sends(thread_a.send))

    # guild B and DMs never see guild A's document
    in_b = make_message(question, make_text_channel(guild_b), guild=guild_b, mention_me=True)
    await h.questions.on_message(in_b)
    dm = make_dm()
    await h.questions.on_message(make_message(question, dm))
    for send in (in_b.create_thread.return_value.send, dm.send):
        assert sends(send)
        assert not any("X200 Dishwasher Manual" in t for t in embed_titles(send))
        assert "24 months" not in all_text(send) and "QZ-7781" not in all_text(send)

    # DMs do see the shared collection
    dm2 = make_dm()
    await h.questions.on_message(make_message("What does the Z9 blender cost?", dm2))
    assert "Z9 Blender Brochure p. 1" in embed_titles(dm2.send)

    # /docs in guild B lists only the shared collection; in guild A both
    inter_b = make_interaction(guild_b)
    await h.commands.docs(inter_b)
    assert "Z9 Blender Brochure" in all_text(inter_b.followup.send)
    assert "X200" not in all_text(inter_b.followup.send)
    inter_a = make_interaction(guild_a)
    await h.commands.docs(inter_a)
    assert "X200 Dishwasher Manual" in all_text(inter_a.followup.send)

    # guild B cannot remove guild A's document either
    rm = make_interaction(guild_b, manage=True)
    await h.commands.remove(rm, "X200 Dishwasher Manual")
    assert "No document called" in all_text(rm.followup.send)
    assert any(d.title == "X200 Dishwasher Manual" for d in await service.documents(f"discord:{GUILD_A}"))


async def test_a_channels_documents_stay_in_that_channel_end_to_end(settings, store):
    from core.service import Service

    service = Service(settings)
    me = make_me()
    h = Handlers(service, store, settings, lambda: me)
    guild = make_guild(GUILD_A)
    hr, general = make_text_channel(guild), make_text_channel(guild)

    choose = make_interaction(guild, manage=True, channel=hr)
    await h.commands.indexing(choose, "channel")
    assert "searched in this channel only" in all_text(choose.followup.send)
    pdf = make_attachment("x200-manual.pdf", MANUAL_A, "application/pdf")
    idx = make_message("index this", hr, make_user(manage=True), guild=guild, mention_me=True, attachments=[pdf])
    await h.questions.on_message(idx)
    summary = all_text(idx.create_thread.return_value.send)
    assert "Indexed **X200 Dishwasher Manual**" in summary and "Searched in this channel only" in summary

    question = "How long is the X200 dishwasher warranty?"
    in_hr = make_message(question, hr, guild=guild, mention_me=True)
    await h.questions.on_message(in_hr)
    assert "24 months" in all_text(in_hr.create_thread.return_value.send)
    # a follow-up in the thread the answer made is in the channel too
    follow = make_message(question, in_hr.create_thread.return_value, guild=guild)
    await h.questions.on_message(follow)
    assert "24 months" in all_text(in_hr.create_thread.return_value.send)
    elsewhere = make_message(question, general, guild=guild, mention_me=True)
    await h.questions.on_message(elsewhere)
    send = elsewhere.create_thread.return_value.send
    assert sends(send) and "24 months" not in all_text(send)
    assert not any("X200 Dishwasher Manual" in t for t in embed_titles(send))

    listing = make_interaction(guild, channel=general)
    await h.commands.docs(listing)
    assert "X200" not in all_text(listing.followup.send)
    listing = make_interaction(guild, channel=hr)
    await h.commands.docs(listing)
    assert "**This channel only** (1)" in all_text(listing.followup.send)
    # another channel can neither remove it nor move it
    remove, move = (make_interaction(guild, manage=True, channel=general) for _ in range(2))
    await h.commands.remove(remove, "X200 Dishwasher Manual")
    await h.commands.scope(move, "X200 Dishwasher Manual", "workspace")
    assert all("No document called" in all_text(i.followup.send) for i in (remove, move))
    assert [d.scope for d in await service.documents(f"discord:{GUILD_A}/{hr.id}")] == [f"discord:{GUILD_A}/{hr.id}"]

    move = make_interaction(guild, manage=True, channel=hr)
    await h.commands.scope(move, "X200 Dishwasher Manual", "workspace")
    assert "is now searched in the whole server" in all_text(move.followup.send)
    again = make_message(question, general, guild=guild, mention_me=True)
    await h.questions.on_message(again)
    assert "24 months" in all_text(again.create_thread.return_value.send)
    other_guild = make_guild(GUILD_B)
    theirs = make_message(question, make_text_channel(other_guild), guild=other_guild, mention_me=True)
    await h.questions.on_message(theirs)
    assert "24 months" not in all_text(theirs.create_thread.return_value.send)


async def test_slash_index_and_ask_end_to_end(settings, store):
    from core.service import Service

    service = Service(settings)
    me = make_me()
    h = Handlers(service, store, settings, lambda: me)
    guild = make_guild(GUILD_A)

    inter = make_interaction(guild, manage=True)
    await h.commands.index(inter, attachment=make_attachment("x200.pdf", MANUAL_A, "application/pdf"))
    inter.response.defer.assert_awaited_once_with(thinking=True)
    assert "Indexed **X200 Dishwasher Manual** (`x200.pdf`, 2 pages)" in all_text(inter.followup.send)

    ask = make_interaction(guild)
    await h.questions.ask(ask, "How do I clean the filter of the X200?")
    ask.response.defer.assert_awaited_once_with(thinking=True)
    [kwargs] = sends(ask.followup.send)  # streamed: sent at the first stage, edited into the answer
    assert "X200 Dishwasher Manual p. 2" in embed_titles(ask.followup.send)
    assert ask.followup.send.returned[0].edit.await_count >= 1
    assert_attachment_links(kwargs)

    rm = make_interaction(guild, manage=True)
    await h.commands.remove(rm, "x200.pdf")
    assert "Removed **X200 Dishwasher Manual**" in all_text(rm.followup.send)
    assert (await service.documents(f"discord:{GUILD_A}")) == []


async def test_progress_message_is_closed_when_done():
    clock = ManualClock()
    edit = AsyncMock()
    async with ProgressNotice(edit, interval=0.01, sleep=clock.sleep) as notice:
        notice(Progress("embed", 1, 2, "m.pdf"))
        await clock.tick()
    assert edit.call_args_list[-1].args[0] == "✅ Indexing finished."
    assert edited(edit) == ["⏳ Indexing **m.pdf**: embed 1/2…", "✅ Indexing finished."]


# ---- backend failures reach the user (gemini backend, nothing listening / failing fake) ------


async def test_backend_failure_when_indexing_is_shown(tmp_path, store):
    from core.service import Service

    settings = Settings().with_(
        index_dir=tmp_path / "index",
        backend="gemini",
        gemini_api_key="x",
        gemini_base_url=f"http://127.0.0.1:{closed_port()}",
        retry_attempts=2,
        retry_initial_delay_s=0.01,
    )
    me = make_me()
    h = Handlers(Service(settings), store, settings, lambda: me)
    inter = make_interaction(make_guild(GUILD_A), manage=True)
    await h.commands.index(inter, attachment=make_attachment("x200.pdf", MANUAL_A, "application/pdf"))
    [kwargs] = sends(inter.followup.send)
    assert kwargs["content"].startswith("⚠️ ") and "Gemini" in kwargs["content"]
    assert "Traceback" not in kwargs["content"] and len(kwargs["content"]) < 400


async def test_backend_failure_when_answering_is_shown(tmp_path, store):
    from core.service import Service
    from tests.fakes.gemini import FakeGemini

    async with FakeGemini() as fake:
        settings = fake.settings(
            Settings().with_(index_dir=tmp_path / "index"),
            embedding_dim=256,
            retry_attempts=2,
            retry_initial_delay_s=0.01,
        )
        service = Service(settings)
        me = make_me()
        h = Handlers(service, store, settings, lambda: me)
        guild = make_guild(GUILD_A)
        pdf = make_attachment("x200.pdf", MANUAL_A, "application/pdf")
        idx = make_message(
            "index this",
            make_text_channel(guild),
            make_user(manage=True),
            guild=guild,
            mention_me=True,
            attachments=[pdf],
        )
        await h.questions.on_message(idx)
        assert "Indexed" in all_text(idx.create_thread.return_value.send)

        fake.fail_always = 503  # Gemini goes down
        msg = make_message("How long is the X200 warranty?", make_text_channel(guild), guild=guild, mention_me=True)
        await h.questions.on_message(msg)
        text = all_text(msg.create_thread.return_value.send)
        assert "⚠️ Gemini kept" in text and "Traceback" not in text


async def test_bare_mention_gets_usage_in_place_without_a_thread(store):
    service = FakeService()
    h = handlers_for(service, store)
    guild = make_guild(GUILD_A)
    channel = make_text_channel(guild)
    msg = make_message("", channel, guild=guild, mention_me=True)
    await h.questions.on_message(msg)
    msg.create_thread.assert_not_called()
    assert "Ask me about the documents" in all_text(channel.send)
    assert service.turns == []


async def test_mention_through_the_bots_managed_role(store):
    service = FakeService()
    h = handlers_for(service, store)
    guild = make_guild(GUILD_A)
    role = MagicMock(spec=discord.Role)
    role.id = 777
    role.tags = MagicMock(spec=discord.RoleTags)
    role.tags.bot_id = ME_ID
    msg = make_message("<@&777> warranty?", make_text_channel(guild), guild=guild)
    msg.role_mentions = [role]
    await h.questions.on_message(msg)
    assert [t.question for t in service.turns] == ["warranty?"]


async def test_running_without_message_content_intent(store):
    client = build_client(FakeService(), store, Settings(extra={"DISCORD_MESSAGE_CONTENT": "0"}))
    try:
        assert not client.intents.message_content
        assert client.intents.guilds and client.intents.guild_messages and client.intents.dm_messages
    finally:
        await client.close()


# ---- attachments through discord.py's own HTTP client, against a loopback CDN -------------------


@pytest.fixture
async def cdn():
    from tests.fakes.discord import FakeDiscord

    async with FakeDiscord() as fake:
        yield fake


def big_png(width=900, height=700) -> bytes:
    """A screenshot of some hundred KB (it arrives in many pieces)."""
    import numpy as np

    rng = np.random.default_rng(3)
    buf = io.BytesIO()
    Image.fromarray(rng.integers(0, 255, (height, width, 3), dtype=np.uint8)).save(buf, "PNG")
    return buf.getvalue()


async def test_a_screenshot_is_read_whole_from_the_cdn(store, cdn):
    service = FakeService()
    h = handlers_for(service, store)
    png = big_png()
    assert len(png) > 500_000
    msg = make_message("which part is this?", make_dm(), attachments=[cdn.attachment("shot.png", png, "image/png")])
    await h.questions.on_message(msg)
    [turn] = service.turns
    assert turn.images[0].data == png and len(cdn.downloads) == 1


@pytest.mark.parametrize(
    "failure, expected",
    [
        ("expire", "no longer has this file"),
        ("forbid", "could not be downloaded from Discord (HTTP 403)"),
        ("fail", "could not be downloaded from Discord (HTTP 500)"),
        ("cut", "could not be downloaded from Discord (the connection dropped)"),
    ],
)
async def test_a_failed_attachment_read_is_named_and_the_question_still_answered(store, cdn, failure, expected):
    # Before: a dropped connection (aiohttp's ClientPayloadError) escaped as "Something went wrong".
    service = FakeService()
    h = handlers_for(service, store)
    att = cdn.attachment("shot.png", big_png(), "image/png")
    if failure == "cut":
        cdn.cut(att, 100_000)
    else:
        getattr(cdn, failure)(att)
    dm = make_dm()
    await h.questions.on_message(make_message("what is the warranty?", dm, attachments=[att]))
    text = all_text(dm.send)
    assert "shot.png: " in text and expected in text, text
    assert "went wrong" not in text
    assert service.turns and service.turns[0].images == ()


async def test_an_oversized_attachment_is_refused_before_downloading(store, cdn):
    service = FakeService()
    h = handlers_for(service, store)
    guild = make_guild(GUILD_A)
    channel = make_text_channel(guild)
    shot = cdn.attachment("huge.png", png_bytes(), "image/png", size=30 * 1024 * 1024)
    pdf = cdn.attachment("huge.pdf", b"%PDF-1.7 ...", "application/pdf", size=300 * 1024 * 1024)
    msg = make_message(
        "index this", channel, make_user(manage=True), guild=guild, mention_me=True, attachments=[shot, pdf]
    )
    await h.questions.on_message(msg)
    text = all_text(msg.create_thread.return_value.send)
    assert "huge.png: 31.5 MB is over the 5 MB limit for screenshots" in text
    assert "huge.pdf: 314.6 MB is over the 200 MB limit" in text
    assert not cdn.downloads and not service.indexed


# ---- feedback ---------------------------------------------------------------------------------


async def test_answers_carry_feedback_buttons_that_any_process_understands(store):
    from bot.discord.feedback import FeedbackButton

    service = FakeService()
    h = handlers_for(service, store)
    guild = make_guild(GUILD_A)
    msg = make_message("what is the warranty period?", make_text_channel(guild), guild=guild, mention_me=True)
    await h.questions.on_message(msg)
    [kwargs] = sends(msg.create_thread.return_value.send)
    ids = buttons(kwargs)  # in the layout's action row
    assert (
        len(ids) == 2 and ids[0].startswith("pixelrag-feedback:good:") and ids[1].startswith("pixelrag-feedback:bad:")
    )

    # A click, as discord.py's dynamic items resolve it (in whichever process, after a restart too).
    for custom_id, user in ((ids[1], 7), (ids[0], 7), (ids[1], 7), (ids[0], 8)):
        match = re.fullmatch(FeedbackButton.__discord_ui_compiled_template__, custom_id)
        button = await FeedbackButton.from_custom_id(MagicMock(), MagicMock(), match)
        click = make_interaction(guild, user=make_user(uid=user))
        click.client = MagicMock()
        click.client.ratings = store  # the bot keeps where the buttons' clicks go
        await button.callback(click)
        click.response.send_message.assert_awaited_once()
        assert click.response.send_message.call_args.kwargs["ephemeral"] is True
    [bad] = await store.ratings("bad")
    assert bad.user == f"{GUILD_A}:7" and bad.platform == "discord" and bad.question == "what is the warranty period?"
    assert [r.user for r in await store.ratings("good")] == [f"{GUILD_A}:8"]


async def test_a_clarifying_question_has_no_feedback_buttons(store):
    h = handlers_for(FakeService(clarify="Which product do you mean?"), store)
    guild = make_guild(GUILD_A)
    msg = make_message("and its width?", make_text_channel(guild), guild=guild, mention_me=True)
    await h.questions.on_message(msg)
    [kwargs] = sends(msg.create_thread.return_value.send)
    assert not buttons(kwargs) and "Which product" in message_text(kwargs)


async def test_a_password_in_an_index_address_appears_in_no_message(settings, store):
    # Before: the address was shown as given, user and password included. The server here wants them.
    import base64

    from aiohttp import web

    from core.service import Service

    async def pdf(request):
        wanted = "Basic " + base64.b64encode(b"admin:hunter2").decode()
        if request.headers.get("Authorization") != wanted:
            return web.Response(status=401)
        return web.Response(body=MANUAL_A, content_type="application/pdf")

    app = web.Application()
    app.router.add_get("/x200.pdf", pdf)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    base = f"http://admin:hunter2@127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
    try:
        h = Handlers(Service(settings.with_(allow_private_urls=True)), store, settings, make_me)
        guild = make_guild(GUILD_A)
        shown = []
        for url in (f"{base}/x200.pdf", f"{base}/gone.pdf"):
            inter = make_interaction(guild, manage=True)
            await h.commands.index(inter, url=url)
            shown += [all_text(inter.followup.send), str(inter.edit_original_response.call_args_list)]
    finally:
        await runner.cleanup()
    assert "Indexed **X200 Dishwasher Manual**" in shown[0] and "HTTP 404" in shown[2]
    assert "hunter2" not in "".join(shown) and r"http://\*\*\*@127.0.0.1" in shown[2]  # "***", escaped


async def test_discord_unreachable_at_start_is_said_and_tried_again(tmp_path, monkeypatch, caplog):
    # Before: aiohttp's ClientConnectorError ended `pixelrag discord` with a traceback.
    import logging

    from bot.discord import serve
    from tests.adapters.test_health import get

    monkeypatch.setattr(discord.http.Route, "BASE", f"http://127.0.0.1:{closed_port()}/api/v10")
    monkeypatch.setattr("bot.discord.client.LOGIN_RETRY_FIRST_S", 0.01)
    settings = Settings(index_dir=tmp_path / "index", backend="local", extra={"DISCORD_TOKEN": "x.y.z"})
    probes = closed_port()
    with caplog.at_level(logging.WARNING):
        bot = asyncio.ensure_future(serve(settings, health_port=probes))
        for _ in range(3000):  # until it has tried three times
            if sum("Discord cannot be reached" in r.getMessage() for r in caplog.records) >= 3:
                break
            await asyncio.sleep(0.01)
        try:
            assert await get(probes, "/readyz") == (503, "not connected to Discord's gateway\n")
        finally:
            bot.cancel()
            await asyncio.gather(bot, return_exceptions=True)
    tries = [r for r in caplog.records if "Discord cannot be reached" in r.getMessage()]
    assert len(tries) >= 3 and not [r for r in caplog.records if r.exc_info]


async def test_watch_and_unwatch_an_address_for_the_server_or_a_channel(store, tmp_path):
    from core import job_queue

    settings = Settings(index_dir=tmp_path / "index")
    h = Handlers(FakeService(), store, settings, me=lambda: make_me())
    guild = make_guild(GUILD_A)
    refused = make_interaction(guild, manage=False)
    await h.commands.watch(refused, "https://example.com/x9.pdf")
    assert "Manage Server" in refused.response.send_message.call_args.args[0]
    server, channel = make_interaction(guild, manage=True), make_interaction(guild, manage=True)
    await h.commands.watch(server, "https://example.com/x9.pdf")
    await h.commands.watch(channel, "https://example.com/y1.pdf", "channel")
    assert "Watching" in all_text(server.followup.send) and "the whole server" in all_text(server.followup.send)
    assert "this channel only" in all_text(channel.followup.send)
    again = make_interaction(guild, manage=True)
    await h.commands.watch(again, "https://example.com/x9.pdf")
    assert "watched here already" in all_text(again.followup.send)
    queue = await job_queue(settings).open()
    try:
        watched = {s.location: s.scope for s in await queue.sources()}
        assert watched == {
            "https://example.com/x9.pdf": f"discord:{GUILD_A}",
            "https://example.com/y1.pdf": f"discord:{GUILD_A}/{channel.channel.id}",
        }
        other = make_interaction(make_guild(GUILD_B), manage=True)
        await h.commands.unwatch(other, "https://example.com/x9.pdf")  # another server's: not found
        assert "No watched source" in all_text(other.followup.send)
        done = make_interaction(guild, manage=True)
        await h.commands.unwatch(done, "https://example.com/x9.pdf")
        assert "No longer watching" in all_text(done.followup.send)
        assert [s.location for s in await queue.sources()] == ["https://example.com/y1.pdf"]
    finally:
        await queue.close()


async def test_autoindex_indexes_pdfs_shared_in_that_channel_for_that_channel(store):
    service = FakeService()
    h = handlers_for(service, store)
    guild = make_guild(GUILD_A)
    channel = make_text_channel(guild)
    shared = make_message(
        "our new manual", channel, guild=guild, attachments=[make_attachment("m.pdf", b"%PDF-1.7", "application/pdf")]
    )
    await h.questions.on_message(shared)
    assert service.indexed == []  # autoindex off: a shared PDF is no one's business

    refused = make_interaction(guild, manage=False, channel=channel)
    await h.commands.autoindex(refused, True)
    assert "Manage Server" in refused.response.send_message.call_args.args[0]
    on = make_interaction(guild, manage=True, channel=channel)
    await h.commands.autoindex(on, True)
    assert "Autoindex is on" in all_text(on.followup.send)

    again = make_message(
        "our new manual", channel, guild=guild, attachments=[make_attachment("m.pdf", b"%PDF-1.7", "application/pdf")]
    )
    await h.questions.on_message(again)
    assert service.indexed == [("m.pdf", f"discord:{GUILD_A}/{channel.id}", 8)]  # this channel's collection
    again.add_reaction.assert_awaited_once_with("📥")
    assert "autoindex on" in all_text(again.reply)

    elsewhere = make_message(
        "x",
        make_text_channel(guild),
        guild=guild,
        attachments=[make_attachment("n.pdf", b"%PDF-1.7", "application/pdf")],
    )
    await h.questions.on_message(elsewhere)
    assert len(service.indexed) == 1  # another channel of the server: off there


async def test_status_shows_the_indexing_under_way_in_any_process_and_nothing_of_other_servers(store, tmp_path):
    import time

    from core import job_queue, new_jobs

    settings = Settings(index_dir=tmp_path / "index")
    h = Handlers(FakeService(), store, settings, lambda: make_me())
    guild = make_guild(GUILD_A)
    queue = await job_queue(settings).open()
    try:  # another process's worker halfway through this server's upload; another server's job waiting
        _, mine = new_jobs(["manual.pdf"], f"discord:{GUILD_A}", kind="upload")
        _, theirs = new_jobs(["plans <@&1>.pdf"], "discord:9999", kind="upload")
        await queue.add(mine + theirs, {j.id: b"%PDF" for j in mine + theirs})
        job = await queue.take("host-b:77:abc", 60, batch=mine[0].batch)
        progress = {"stage": "embed", "done": 10, "total": 40, "since": time.time() - 5}
        await queue.renew(job.id, "host-b:77:abc", 60, progress)
        await queue.beat("host-b:77:abc", time.time())
    finally:
        await queue.close()
    inter = make_interaction(guild)
    await h.commands.status(inter)
    text = all_text(inter.followup.send)
    assert "**Documents searched here:** 1 (2 pages)" in text
    assert "manual.pdf (embed 10/40, 2.0/s, about 15 s left)" in text, text
    assert "**Jobs waiting:** 0 · **indexing workers alive:** 1" in text
    assert "plans" not in text and "host-b" not in text
