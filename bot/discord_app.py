"""Discord adapter: messages and app commands in, core service calls, rendered answers out.

Thin on purpose: deciding whether a message is for us, reading attachments, choosing where to
reply, permissions and error reporting live here; retrieval and reading live in core.service.
`DiscordHandlers` takes discord objects and is what the tests drive with spec'd mocks;
`PixelragClient` only wires gateway events and the command tree to it.
"""
from __future__ import annotations

import asyncio
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Awaitable, Callable

import aiohttp
import discord
from discord import app_commands

from core.config import Settings
from core.query_images import validate_query_image
from core.errors import BadInput, PixelragError, failure_reason, megabytes
from core.records import SHARED_SCOPE, Answer, Exchange, IndexReport, Progress, QueryImage, Turn
from core.threads import ThreadStore

from .discord_render import Outgoing, render_answer, render_documents, text_messages
from .progress import ThrottledProgress

if TYPE_CHECKING:
    from core.service import Service

log = logging.getLogger("pixelrag.discord")

IMAGE_TYPES = {"image/png": "image/png", "image/jpeg": "image/jpeg", "image/jpg": "image/jpeg", "image/webp": "image/webp"}
IMAGE_SUFFIXES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp"}
INDEX_REQUEST = re.compile(r"\bindex\b", re.IGNORECASE)  # "index this" next to an attached PDF
PROGRESS_EVERY_S = 2.0  # edit a progress message at most this often (Discord rate limits edits)
INTERACTION_BUDGET_S = 14 * 60  # interaction tokens expire after 15 minutes
GENERIC_FAILURE = "⚠️ Something went wrong on my side; the details are in the bot's log."
USAGE = ("Ask me about the documents indexed here, e.g. `@pixelrag what is the warranty period?` "
         "You can attach a screenshot (PNG, JPEG or WebP), or a PDF with “index this”.")


def scope_for(guild_id: int | None) -> str:
    """Guild documents are the guild's own; DMs see only the operator's shared collection."""
    return f"discord:{guild_id}" if guild_id else SHARED_SCOPE


def thread_key(channel: object, guild_id: int | None) -> tuple[str, str, str, str]:
    workspace = str(guild_id) if guild_id else "dm"
    if isinstance(channel, discord.Thread):
        return ("discord", workspace, str(channel.parent_id), str(channel.id))
    channel_id = str(getattr(channel, "id", ""))
    return ("discord", workspace, channel_id, channel_id)


def strip_mentions(text: str, me: discord.abc.User, role_ids: set[int] = frozenset()) -> str:
    text = re.sub(rf"<@!?{me.id}>", " ", text or "")
    for rid in role_ids:
        text = text.replace(f"<@&{rid}>", " ")
    return re.sub(r"[ \t]+", " ", text).strip()


def describe_report(report: IndexReport) -> str:
    lines = [
        f"Indexed **{d.title}** (`{d.file_name}`, {d.page_count} pages)." for d in report.documents
    ]
    if report.documents:
        lines.append(f"-# {report.pages_embedded} pages read, {report.pages_reused} reused from the previous index.")
    lines += [f"Already up to date: **{d.title}** (unchanged)." for d in report.unchanged]
    lines += [f"⚠️ {s}" for s in report.skipped + report.warnings]
    return "\n".join(lines) or "Nothing was indexed."


def describe_progress(p: Progress) -> str:
    if p.stage == "wait":
        return "⏳ Waiting for another build of the index to finish…"
    what = f" **{p.document}**" if p.document else ""
    return f"⏳ Indexing{what}: {p.stage} {p.done}/{p.total}…"


@dataclass(frozen=True)
class Access:
    """Who may index and remove documents: Manage Server, plus an optional role and user ids."""
    role: str = ""  # role id or name, from DISCORD_INDEX_ROLE
    users: frozenset[int] = frozenset()  # from DISCORD_INDEX_USERS

    @classmethod
    def from_settings(cls, settings: Settings) -> "Access":
        raw_users = [u for u in re.split(r"[\s,]+", settings.extra.get("DISCORD_INDEX_USERS", "")) if u]
        if bad := [u for u in raw_users if not u.isdigit()]:
            raise BadInput(f"DISCORD_INDEX_USERS must list numeric user ids (Developer Mode → Copy User ID); "
                           f"not ids: {', '.join(bad)}.")
        users = frozenset(int(u) for u in raw_users)
        return cls(settings.extra.get("DISCORD_INDEX_ROLE", "").strip(), users)

    @property
    def customised(self) -> bool:
        return bool(self.role or self.users)

    def allows(self, user: discord.abc.User, permissions: discord.Permissions | None) -> bool:
        if user.id in self.users:
            return True
        if self.role and isinstance(user, discord.Member):
            if any(str(r.id) == self.role or r.name == self.role for r in user.roles):
                return True
        return permissions is not None and (permissions.manage_guild or permissions.administrator)

    def refusal(self) -> str:
        who = "Manage Server permission"
        if self.role:
            who += f" or the “{self.role}” role"
        return f"🔒 Only members with {who} can add or remove documents here."


class ProgressNotice(ThrottledProgress):
    """Indexing progress in one Discord message, closed with a final word when the job ends."""

    def __init__(self, edit: Callable[[str], Awaitable[object]], interval: float = PROGRESS_EVERY_S):
        super().__init__(edit, describe_progress, interval)

    async def __aexit__(self, exc_type, exc, tb) -> None:
        await super().__aexit__(exc_type, exc, tb)
        if self.shown is not None:  # don't leave a stale "⏳ 3/10" behind; the result follows
            try:
                await self._edit("✅ Indexing finished." if exc is None else "⚠️ Indexing stopped.")
            except discord.HTTPException:
                log.warning("could not edit the progress message", exc_info=True)


Send = Callable[..., Awaitable[object]]


async def deliver(send: Send, messages: list[Outgoing]) -> None:
    """Send each message; if one with files or embeds is refused, send its text with a visible note."""
    for out in messages:
        try:
            await send(**out.kwargs())
        except discord.HTTPException:
            if not (out.files or out.embeds):
                raise
            log.warning("sending citations failed; falling back to text", exc_info=True)
            note = "-# ⚠️ The page previews could not be uploaded."
            await send(content=f"{out.content}\n\n{note}" if out.content else note)


class DiscordHandlers:
    """Everything the bot does, as async methods over discord objects."""

    def __init__(self, service: "Service", threads: ThreadStore, settings: Settings,
                 me: Callable[[], discord.abc.User | None] = lambda: None):
        self.service = service
        self.threads = threads
        self.settings = settings
        self.me = me  # the bot's own user, known once logged in
        self.access = Access.from_settings(settings)

    # ---- messages -------------------------------------------------------------------------

    def is_addressed(self, message: discord.Message, me: discord.abc.User) -> bool:
        """DMs, mentions (user or the bot's role), threads the bot owns, and replies to the bot."""
        channel = message.channel
        if isinstance(channel, discord.DMChannel):
            return True
        if any(u.id == me.id for u in message.mentions):
            return True
        if self._bot_role_ids(message, me):
            return True
        if isinstance(channel, discord.Thread) and channel.owner_id == me.id:
            return True
        ref = message.reference
        resolved = ref.resolved if ref is not None else None
        return isinstance(resolved, discord.Message) and resolved.author.id == me.id

    @staticmethod
    def _bot_role_ids(message: discord.Message, me: discord.abc.User) -> set[int]:
        # "@pixelrag" sometimes resolves to the bot's managed role instead of the bot user
        found = set()
        for role in message.role_mentions or ():
            tags = role.tags
            if tags is not None and tags.bot_id == me.id:
                found.add(role.id)
        return found

    async def on_message(self, message: discord.Message) -> None:
        me = self.me()
        if me is None or message.author.bot or message.author.id == me.id:
            return
        if message.type not in (discord.MessageType.default, discord.MessageType.reply):
            return  # joins, pins, thread-created notices
        if not self.is_addressed(message, me):
            return
        claim = f"discord:{message.id}"
        if not await self.threads.claim(claim):
            return  # a gateway resume can deliver the same message twice
        question = strip_mentions(message.content, me, self._bot_role_ids(message, me))
        reply = _Place(message.channel)
        try:
            await self._handle_message(message, question, reply)
        except PixelragError as exc:
            await self._say(reply.channel, f"⚠️ {exc}")
        except Exception:
            log.exception("failed to handle message %s", message.id)
            await self._say(reply.channel, GENERIC_FAILURE)
        await self.threads.finish(claim)

    async def _reply_place(self, message: discord.Message, question: str) -> discord.abc.Messageable:
        """A thread started from the message in text channels; in place in threads and DMs."""
        channel = message.channel
        if not isinstance(channel, discord.TextChannel):
            return channel
        name = (question.splitlines()[0] if question else "") or "Question about the documents"
        try:
            return await message.create_thread(name=name[:100], auto_archive_duration=1440)
        except discord.HTTPException:
            log.warning("could not create a thread in channel %s; replying in place", channel.id, exc_info=True)
            return channel

    async def _handle_message(self, message: discord.Message, question: str, reply: "_Place") -> None:
        guild_id = message.guild.id if message.guild else None
        images, pdfs, problems = await self._sort_attachments(message.attachments)
        if pdfs and INDEX_REQUEST.search(question):
            reply.channel = await self._reply_place(message, question)
            await self._index_from_message(message, pdfs, reply.channel, problems)
            return
        for att in pdfs:
            problems.append(f"{att.filename}: PDFs are not read as questions; attach it with “index this” "
                            "to add it to this server's documents.")
        if not question and not images:  # nothing to answer: say so in place, no thread
            await deliver(message.channel.send,
                          text_messages("\n".join(f"⚠️ {p}" for p in problems) + "\n\n" + USAGE))
            return
        place = reply.channel = await self._reply_place(message, question)
        key = thread_key(place, guild_id)
        async with place.typing():
            history = await self.threads.history(key, self.settings.history_exchanges)
            turn = Turn(question, tuple(images), scope_for(guild_id), "/".join(key), history)
            answer, messages = await self._answer(turn, self._upload_limit(message.guild), problems)
        await self.threads.add(key, Exchange.of(question, answer))
        await deliver(place.send, messages)

    async def _answer(self, turn: Turn, upload_limit: int, notes: list[str]) -> tuple[Answer, list[Outgoing]]:
        answer = await self.service.answer(turn)
        return answer, render_answer(answer, upload_limit, notes=notes)

    async def _sort_attachments(self, attachments) -> tuple[list[QueryImage], list[discord.Attachment], list[str]]:
        """Screenshots are read and checked now; PDFs wait for an index request; the rest is named."""
        images: list[QueryImage] = []
        pdfs: list[discord.Attachment] = []
        problems: list[str] = []
        for att in attachments or ():
            kind = attachment_kind(att)
            if kind == "pdf":
                pdfs.append(att)
            elif kind is None:
                what = att.content_type or Path(att.filename).suffix or "unknown"
                problems.append(f"{att.filename}: {what} files can't be used; attach PNG, JPEG or WebP "
                                "screenshots, or a PDF with “index this”.")
            else:
                try:
                    images.append(await self._read_image(att, kind))
                except BadInput as exc:
                    problems.append(str(exc))
        return images, pdfs, problems

    async def _read_image(self, att: discord.Attachment, mime: str) -> QueryImage:
        data = await self._download(att, self.settings.max_image_bytes, " for screenshots")
        return validate_query_image(QueryImage(data, mime, att.filename), self.settings.max_image_bytes)

    async def _download(self, att: discord.Attachment, limit: int, limit_note: str = "") -> bytes:
        """An attachment's bytes, refused before downloading when over `limit`; every failure (an
        expired link, a dropped connection, a timeout) becomes a message that names the file."""
        over = f"over the {megabytes(limit)} limit{limit_note}"
        if att.size > limit:
            raise BadInput(f"{att.filename}: {megabytes(att.size)} is {over}.")
        try:
            async with asyncio.timeout(self.settings.request_timeout_s):
                data = await att.read()
        except discord.NotFound as exc:
            raise BadInput(f"{att.filename}: Discord no longer has this file (the message was deleted or "
                           "its link expired); attach it again.") from exc
        except (discord.HTTPException, aiohttp.ClientError, TimeoutError) as exc:
            raise BadInput(f"{att.filename}: could not be downloaded from Discord ({failure_reason(exc)}); "
                           "try attaching it again.") from exc
        if len(data) > limit:  # the size Discord reported was wrong
            raise BadInput(f"{att.filename}: {megabytes(len(data))} is {over}.")
        return data

    async def _index_from_message(self, message: discord.Message, pdfs, place, problems: list[str]) -> None:
        if message.guild is None:
            raise BadInput("Indexing works in a server; in DMs I answer from the shared collection only.")
        perms = getattr(message.author, "guild_permissions", None)
        if not self.access.allows(message.author, perms):
            await self._say(place, self.access.refusal())
            return
        scope = scope_for(message.guild.id)
        status = await place.send(content=f"⏳ Indexing {', '.join(a.filename for a in pdfs)}…")
        lines = [f"⚠️ {p}" for p in problems]
        for att in pdfs:
            try:
                data = await self._download(att, self.settings.max_pdf_bytes)
                async with ProgressNotice(lambda text: status.edit(content=text)) as notice:
                    report = await self.service.index_bytes(data, att.filename, scope=scope, progress=notice)
                lines.append(describe_report(report))
            except PixelragError as exc:  # most messages name the file already ("a.pdf: not a PDF.")
                text = str(exc)
                lines.append(f"⚠️ {text}" if text.startswith(att.filename) else f"⚠️ {att.filename}: {text}")
        await deliver(place.send, text_messages("\n".join(lines)))

    @staticmethod
    def _upload_limit(guild: discord.Guild | None) -> int:
        return guild.filesize_limit if guild is not None else discord.utils.DEFAULT_FILE_SIZE_LIMIT_BYTES

    async def _say(self, place, text: str) -> None:
        """Last-resort visible message; a failure here can only be logged."""
        try:
            await deliver(place.send, text_messages(text))
        except Exception:
            log.exception("could not post a message to %s", getattr(place, "id", place))

    # ---- app commands ---------------------------------------------------------------------

    async def ask(self, interaction: discord.Interaction, question: str,
                  image: discord.Attachment | None = None) -> None:
        await interaction.response.defer(thinking=True)
        async with Replier(interaction) as reply:
            images, problems = [], []
            if image is not None:
                mime = attachment_kind(image)
                if mime in (None, "pdf"):
                    problems.append(f"{image.filename}: only PNG, JPEG or WebP screenshots can be used with /ask.")
                else:
                    try:
                        images.append(await self._read_image(image, mime))
                    except BadInput as exc:
                        problems.append(str(exc))
            question = question.strip()
            channel = interaction.channel
            # memory only where a conversation has a place: threads and DMs
            key = thread_key(channel, interaction.guild_id) if isinstance(channel, (discord.Thread, discord.DMChannel)) else None
            history = await self.threads.history(key, self.settings.history_exchanges) if key else ()
            turn = Turn(question, tuple(images), scope_for(interaction.guild_id),
                        "/".join(key) if key else f"discord/interaction/{interaction.id}", history)
            answer, messages = await self._answer(turn, self._upload_limit(interaction.guild), problems)
            if key:
                await self.threads.add(key, Exchange.of(question, answer))
            await reply.send_all(messages)

    async def index(self, interaction: discord.Interaction, url: str | None = None,
                    attachment: discord.Attachment | None = None) -> None:
        if not await self._may_manage(interaction):
            return
        await interaction.response.defer(thinking=True)
        async with Replier(interaction) as reply:
            scope = scope_for(interaction.guild_id)
            async with ProgressNotice(lambda text: interaction.edit_original_response(content=text)) as notice:
                if attachment is not None:
                    if attachment_kind(attachment) != "pdf":
                        raise BadInput(f"{attachment.filename}: only PDFs can be indexed.")
                    data = await self._download(attachment, self.settings.max_pdf_bytes)
                    report = await self.service.index_bytes(data, attachment.filename, scope=scope, progress=notice)
                elif url and url.strip():
                    report = await self.service.index([url.strip()], scope=scope, progress=notice)
                else:
                    raise BadInput("Give a PDF URL or attach a PDF to index.")
            await reply.send_all(text_messages(describe_report(report)))

    async def reindex(self, interaction: discord.Interaction, document: str | None = None) -> None:
        if not await self._may_manage(interaction):
            return
        await interaction.response.defer(thinking=True)
        async with Replier(interaction) as reply:
            async with ProgressNotice(lambda text: interaction.edit_original_response(content=text)) as notice:
                report = await self.service.reindex(scope_for(interaction.guild_id), document or None, progress=notice)
            await reply.send_all(text_messages(describe_report(report)))

    async def docs(self, interaction: discord.Interaction) -> None:
        await interaction.response.defer(thinking=True)
        async with Replier(interaction) as reply:
            scope = scope_for(interaction.guild_id)
            await reply.send_all(render_documents(self.service.documents(scope), scope))

    async def remove(self, interaction: discord.Interaction, document: str) -> None:
        if not await self._may_manage(interaction):
            return
        await interaction.response.defer(thinking=True)
        async with Replier(interaction) as reply:
            doc = await self.service.remove(scope_for(interaction.guild_id), document)
            await reply.send_all(text_messages(f"🗑️ Removed **{doc.title}** (`{doc.file_name}`) from this server's documents."))

    async def document_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        """Autocomplete for /remove and /reindex: this server's own documents."""
        scope = scope_for(interaction.guild_id)
        try:
            docs = [d for d in self.service.documents(scope) if d.scope == scope]
        except Exception:
            log.warning("document autocomplete failed", exc_info=True)
            return []
        needle = current.lower()
        return [app_commands.Choice(name=d.title[:100], value=d.doc_id)
                for d in docs if needle in d.title.lower() or needle in d.file_name.lower()][:25]

    async def _may_manage(self, interaction: discord.Interaction) -> bool:
        """Checked before deferring, so a refusal is a quick private reply."""
        if interaction.guild is None:
            await interaction.response.send_message(
                "Documents are managed in a server; in DMs I answer from the shared collection only.", ephemeral=True)
            return False
        if not self.access.allows(interaction.user, interaction.permissions):
            await interaction.response.send_message(self.access.refusal(), ephemeral=True)
            return False
        return True


@dataclass
class _Place:
    """Where replies to a message go; becomes the new thread once one is created."""
    channel: discord.abc.Messageable


def attachment_kind(att: discord.Attachment) -> str | None:
    """'pdf', an image MIME type, or None when the file can't be used."""
    ctype = (att.content_type or "").split(";")[0].strip().lower()
    suffix = Path(att.filename or "").suffix.lower()
    if ctype == "application/pdf" or (not ctype and suffix == ".pdf"):
        return "pdf"
    if ctype in IMAGE_TYPES:
        return IMAGE_TYPES[ctype]
    if not ctype and suffix in IMAGE_SUFFIXES:
        return IMAGE_SUFFIXES[suffix]
    return None


class Replier:
    """Answers a deferred interaction; turns failures into a short visible message.

    Past the interaction token's lifetime (long indexing), results go to the channel instead.
    """

    def __init__(self, interaction: discord.Interaction):
        self.interaction = interaction
        self.started = time.monotonic()

    def _send(self) -> Send:
        if time.monotonic() - self.started < INTERACTION_BUDGET_S or self.interaction.channel is None:
            return self.interaction.followup.send
        return self.interaction.channel.send

    async def send_all(self, messages: list[Outgoing]) -> None:
        await deliver(self._send(), messages)

    async def __aenter__(self) -> "Replier":
        return self

    async def __aexit__(self, exc_type, exc, tb) -> bool:
        if exc is None or isinstance(exc, asyncio.CancelledError):
            return False
        if isinstance(exc, PixelragError):
            text = f"⚠️ {exc}"
        else:
            log.error("app command %s failed", getattr(self.interaction.command, "name", "?"),
                      exc_info=(exc_type, exc, tb))
            text = GENERIC_FAILURE
        try:
            await deliver(self._send(), text_messages(text))
        except Exception:
            log.exception("could not report a failure to the user")
        return True


# ---- gateway wiring ---------------------------------------------------------------------------

def register_commands(tree: app_commands.CommandTree, handlers: DiscordHandlers) -> None:
    # Manage Server hides the admin commands by default; with a custom role or user list they stay
    # visible and the handler's own check decides.
    admin = (lambda f: f) if handlers.access.customised else app_commands.default_permissions(manage_guild=True)

    @tree.command(name="ask", description="Ask a question about the documents")
    @app_commands.describe(question="Your question", image="A screenshot to search with (PNG, JPEG or WebP)")
    async def ask(interaction: discord.Interaction, question: str, image: discord.Attachment | None = None):
        await handlers.ask(interaction, question, image)

    @tree.command(name="index", description="Add a PDF (URL or attachment) to this server's documents")
    @app_commands.describe(url="A link to a PDF", attachment="A PDF file")
    @app_commands.guild_only()
    @admin
    async def index(interaction: discord.Interaction, url: str | None = None,
                    attachment: discord.Attachment | None = None):
        await handlers.index(interaction, url, attachment)

    @tree.command(name="reindex", description="Rebuild this server's documents (or one of them)")
    @app_commands.describe(document="Title, file name or id; all when left empty")
    @app_commands.guild_only()
    @admin
    async def reindex(interaction: discord.Interaction, document: str | None = None):
        await handlers.reindex(interaction, document)

    @tree.command(name="docs", description="List the documents I can answer from here")
    async def docs(interaction: discord.Interaction):
        await handlers.docs(interaction)

    @tree.command(name="remove", description="Remove a document from this server's documents")
    @app_commands.describe(document="Title, file name or id")
    @app_commands.guild_only()
    @admin
    async def remove(interaction: discord.Interaction, document: str):
        await handlers.remove(interaction, document)

    remove.autocomplete("document")(handlers.document_choices)
    reindex.autocomplete("document")(handlers.document_choices)


def truthy(value: str | None, default: bool) -> bool:
    if value is None or value.strip() == "":
        return default
    return value.strip().lower() not in ("0", "false", "no", "off")


class PixelragClient(discord.Client):
    def __init__(self, handlers: DiscordHandlers, settings: Settings):
        intents = discord.Intents.default()
        # privileged; without it only DMs and mentions carry text (DISCORD_MESSAGE_CONTENT=0 to run without)
        intents.message_content = truthy(settings.extra.get("DISCORD_MESSAGE_CONTENT"), True)
        # quoted documents must never ping @everyone or roles
        super().__init__(intents=intents, allowed_mentions=discord.AllowedMentions(
            everyone=False, roles=False, users=False, replied_user=True))
        self.settings = settings
        self.handlers = handlers
        handlers.me = lambda: self.user
        self.tree = app_commands.CommandTree(self)
        register_commands(self.tree, handlers)

    async def setup_hook(self) -> None:
        guild_id = self.settings.extra.get("DISCORD_GUILD_ID", "").strip()
        if guild_id:  # development: guild commands appear at once (checked to be digits in serve())
            guild = discord.Object(int(guild_id))
            self.tree.copy_global_to(guild=guild)
            await self.tree.sync(guild=guild)
        else:
            await self.tree.sync()

    async def on_ready(self) -> None:
        log.info("connected as %s to %d servers", self.user, len(self.guilds))

    async def on_message(self, message: discord.Message) -> None:
        await self.handlers.on_message(message)


def build_client(service: "Service", threads: ThreadStore, settings: Settings) -> PixelragClient:
    return PixelragClient(DiscordHandlers(service, threads, settings), settings)


async def serve(settings: Settings) -> None:
    """Run the bot until it is stopped; `pixelrag discord` calls this."""
    token = settings.extra.get("DISCORD_TOKEN", "").strip()
    if not token:
        raise BadInput("DISCORD_TOKEN is not set; see the Discord setup section of the README.")
    guild_id = settings.extra.get("DISCORD_GUILD_ID", "").strip()
    if guild_id and not guild_id.isdigit():
        raise BadInput(f"DISCORD_GUILD_ID={guild_id!r} is not a server id (Developer Mode → Copy Server ID).")
    from core.service import Service  # imported late: the service loads the backend

    if not logging.getLogger().handlers:
        discord.utils.setup_logging()
    threads = await ThreadStore(settings.index_dir / "discord-threads.sqlite").open()
    service = Service(settings)
    await service.warm_up()
    client = build_client(service, threads, settings)
    try:
        async with client:
            await client.start(token)
    except discord.LoginFailure as exc:
        raise BadInput("Discord refused DISCORD_TOKEN; copy the bot token again from the Developer Portal.") from exc
    except discord.PrivilegedIntentsRequired as exc:
        raise BadInput("Enable “Message Content Intent” for the bot in the Developer Portal, "
                       "or set DISCORD_MESSAGE_CONTENT=0 to run without it (mentions and slash commands only).") from exc
    finally:
        await threads.close()
