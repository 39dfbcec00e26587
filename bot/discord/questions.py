"""Questions on Discord: a message addressed to the bot, or /ask, becomes an answer in its place.

Deciding whether a message is for the bot, claiming its delivery (core's `Delivery`: a gateway resume
can deliver it twice), reading attachments, choosing where to reply and reporting failures happen
here; retrieval and reading are core's. A PDF sent with "index this" is indexed from the message.
The cogs only delegate, and the tests drive this class directly with spec'd mocks.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

import discord

from bot.triggers import asks_to_index
from core import (
    BadInput,
    Conversation,
    DatabaseUnavailable,
    PixelragError,
    Service,
    Settings,
    ThreadMemory,
    indexing_scope,
)

from .files import Attachments, kind
from .layout import render_both
from .permissions import Permissions
from .progress import ProgressNotice
from .render import NO_PINGS, describe_report, place_note, shown_text, text_messages
from .replies import GENERIC_FAILURE, Replier, deliver, say
from .routing import (
    AUTOINDEX,
    bot_role_ids,
    home_channel,
    is_addressed,
    reply_place,
    scope_for,
    strip_mentions,
    thread_key,
    upload_limit,
)
from .settings import DiscordSettings
from .stream import AnswerStream

log = logging.getLogger("pixelrag.discord")

AUTOINDEX_REACTION = "📥"  # on a message whose PDFs autoindex took
USAGE = (
    "Ask me about the documents indexed here, e.g. `@pixelrag what is the warranty period?` "
    "You can attach a screenshot (PNG, JPEG or WebP), or a PDF with “index this”."
)


class DiscordQuestions:
    def __init__(
        self,
        service: Service,
        threads: ThreadMemory,
        settings: Settings,
        me: Callable[[], discord.abc.User | None] = lambda: None,
        options: DiscordSettings | None = None,
    ):
        self.service = service
        self.threads = threads
        self.settings = settings
        self.options = options if options is not None else DiscordSettings.parse(settings.extra)
        self.me = me  # the bot's own user, known once logged in
        self.permissions = Permissions.of(self.options)
        self.files = Attachments(settings)
        self.conversation = Conversation(service, threads, settings.history_exchanges)
        self.clock, self.sleep = (
            time.monotonic,
            asyncio.sleep,
        )  # how streamed edits are spaced (tests pass time by hand)

    async def on_message(self, message: discord.Message) -> None:
        me = self.me()
        if me is None or message.author.bot or message.author.id == me.id:
            return
        if message.type not in (discord.MessageType.default, discord.MessageType.reply):
            return  # joins, pins, thread-created notices
        autoindex = False
        if not is_addressed(message, me):
            autoindex = await self._autoindexed(message)
            if not autoindex:
                return
        try:
            delivery = await self.conversation.claim(f"discord:{message.id}")
        except DatabaseUnavailable as exc:  # Discord delivers a message once: say so now
            log.warning("message %s not taken: %s", message.id, exc)
            await say(message.channel, f"⚠️ {shown_text(str(exc))}")
            return
        if delivery is None:
            return  # a gateway resume can deliver the same message twice
        question = strip_mentions(message.content, me, bot_role_ids(message, me))
        place = _Place(message.channel)
        async with delivery:  # finished at the end, failures included: they were shown
            try:
                if autoindex:
                    await self._autoindex(message)
                    return
                await self._handle_message(message, question, place)
            except PixelragError as exc:
                await say(place.channel, f"⚠️ {shown_text(str(exc))}")
            except Exception:
                log.exception("failed to handle message %s", message.id)
                await say(place.channel, GENERIC_FAILURE)

    async def _handle_message(self, message: discord.Message, question: str, place: _Place) -> None:
        guild_id = message.guild.id if message.guild else None
        images, pdfs, problems = await self.files.sort(message.attachments)
        if pdfs and asks_to_index(question):
            place.channel = await reply_place(message, question)
            await self._index_from_message(message, pdfs, place.channel, problems)
            return
        for att in pdfs:
            problems.append(
                f"{att.filename}: PDFs are not read as questions; attach it with “index this” "
                "to add it to this server's documents."
            )
        if not question and not images:  # nothing to answer: say so in place, no thread
            await deliver(
                message.channel.send, text_messages("\n".join(f"⚠️ {shown_text(p)}" for p in problems) + "\n\n" + USAGE)
            )
            return
        channel = place.channel = await reply_place(message, question)
        await self._answer(
            channel.send,
            thread_key(channel, guild_id),
            question,
            images,
            scope_for(guild_id, channel),
            upload_limit(message.guild),
            problems,
            str(message.author.id),
        )

    async def _answer(
        self, send, key, question: str, images, scope: str, limit: int, problems: list[str], user: str
    ) -> None:
        """Ask the conversation with a streamed reply: the stages and text as they come, then the answer.
        A failure once the reply is showing ends that message with the error."""
        stream = AnswerStream(
            send, interval=self.options.edit_interval, v2=self.options.layout_v2, clock=self.clock, sleep=self.sleep
        )
        try:
            reply = await self.conversation.ask(
                key,
                question,
                images,
                scope=scope,
                events=stream.event,
                render=lambda answer, turn_id: render_both(answer, limit, problems, turn_id),
                user=user,
            )
        except PixelragError as exc:
            if await stream.fail(str(exc)):
                return
            raise
        except Exception:
            if await stream.fail(GENERIC_FAILURE):
                log.exception("answering %r failed", question[:80])
                return
            raise
        await stream.finish(reply.rendered)

    async def _autoindexed(self, message: discord.Message) -> bool:
        """A PDF shared in a server channel where `/autoindex on` was said (its choice, per channel)."""
        if message.guild is None or not any(kind(a) == "pdf" for a in message.attachments):
            return False
        choice = f"{AUTOINDEX}:{home_channel(message.channel)}"
        return await self.threads.choice("discord", str(message.guild.id), choice) == "on"

    async def _autoindex(self, message: discord.Message) -> None:
        """Every PDF of the message indexed into this channel's collection: a reaction on the message, then
        one reply (what was indexed, how to remove it)."""
        assert message.guild is not None  # _autoindexed said so
        try:
            await message.add_reaction(AUTOINDEX_REACTION)
        except discord.HTTPException as exc:  # the reply says it all the same
            log.info("autoindex reaction not added: %s", exc)
        scope = scope_for(message.guild.id, message.channel)
        lines = []
        for att in [a for a in message.attachments if kind(a) == "pdf"]:
            try:
                data = await self.files.download(att, self.settings.max_pdf_bytes)
                report = await self.service.requests.index_bytes(
                    data, att.filename, scope=scope, notify=f"discord:{message.guild.id}:{message.channel.id}"
                )
                lines.append(describe_report(report) + place_note(scope, report))
            except PixelragError as exc:
                text = str(exc)
                lines.append(f"⚠️ {shown_text(text if text.startswith(att.filename) else f'{att.filename}: {text}')}")
        lines.append(
            "_Indexed because this channel has autoindex on: `/remove` removes a document, `/autoindex off` stops it._"
        )
        await deliver(message.reply, text_messages("\n".join(lines)))

    async def _index_from_message(self, message: discord.Message, pdfs, place, problems: list[str]) -> None:
        if message.guild is None:
            raise BadInput("Indexing works in a server; in DMs I answer from the shared collection only.")
        perms = getattr(message.author, "guild_permissions", None)
        if not self.permissions.allows(message.author, perms):
            await say(place, self.permissions.refusal())
            return
        scope = await indexing_scope(self.threads, scope_for(message.guild.id, message.channel))
        notify = f"discord:{message.guild.id}:{place.id}"  # told there should this process die first
        status = await place.send(
            content=f"⏳ Indexing {shown_text(', '.join(a.filename for a in pdfs))}…", allowed_mentions=NO_PINGS
        )
        lines = [f"⚠️ {shown_text(p)}" for p in problems]
        for att in pdfs:
            try:
                data = await self.files.download(att, self.settings.max_pdf_bytes)
                async with ProgressNotice(lambda text: status.edit(content=text)) as notice:
                    report = await self.service.requests.index_bytes(
                        data,
                        att.filename,
                        scope=scope,
                        progress=notice,
                        notify=notify,
                    )
                lines.append(describe_report(report) + place_note(scope, report))
            except PixelragError as exc:  # most messages name the file already ("a.pdf: not a PDF.")
                text = str(exc)
                lines.append(f"⚠️ {shown_text(text if text.startswith(att.filename) else f'{att.filename}: {text}')}")
        await deliver(place.send, text_messages("\n".join(lines)))

    async def ask(
        self, interaction: discord.Interaction, question: str, image: discord.Attachment | None = None
    ) -> None:
        await interaction.response.defer(thinking=True)
        async with Replier(interaction) as replier:
            images, problems = [], []
            if image is not None:
                mime = kind(image)
                if mime in (None, "pdf"):
                    problems.append(f"{image.filename}: only PNG, JPEG or WebP screenshots can be used with /ask.")
                else:
                    try:
                        images.append(await self.files.read_image(image, mime))
                    except BadInput as exc:
                        problems.append(str(exc))
            channel = interaction.channel
            # memory only where a conversation has a place: threads and DMs
            in_thread = isinstance(channel, (discord.Thread, discord.DMChannel))
            key = thread_key(channel, interaction.guild_id) if in_thread else None
            await self._answer(
                replier.sender(),
                key,
                question,
                images,
                scope_for(interaction.guild_id, channel),
                upload_limit(interaction.guild),
                problems,
                str(interaction.user.id),
            )


class _Place:
    """Where replies to a message go; becomes the new thread once one is created, so that a failure
    after that is reported in the thread."""

    def __init__(self, channel: discord.abc.Messageable):
        self.channel = channel
