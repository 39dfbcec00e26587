"""The app commands that manage documents: /index, /reindex, /docs, /scope, /indexing, /remove, /watch,
/unwatch,
and the autocomplete of a document's name. Who may change documents is `Permissions`' to say,
checked before the interaction is deferred so that a refusal is a quick private reply.
"""

from __future__ import annotations

import logging

import discord
from discord import app_commands

from bot.job_worker import queue_summary
from core import (
    BadInput,
    Service,
    Settings,
    ThreadMemory,
    channel_of,
    choose_indexing_place,
    collection,
    hide_credentials,
    indexing_scope,
    job_queue,
    own_and_shared,
    own_scopes,
    tenant,
    unwatch,
    watch_address,
)

from .files import Attachments, kind
from .permissions import Permissions
from .progress import ProgressNotice
from .render import code, describe_report, place_note, render_documents, shown_text, status_text, text_messages
from .replies import Replier
from .routing import AUTOINDEX, home_channel, scope_for
from .settings import DiscordSettings

log = logging.getLogger("pixelrag.discord")

PLACES = {"channel": "this channel only", "workspace": "the whole server"}


class DiscordCommands:
    def __init__(
        self, service: Service, threads: ThreadMemory, settings: Settings, options: DiscordSettings | None = None
    ):
        self.service = service
        self.threads = threads
        self.settings = settings
        self.permissions = Permissions.of(options if options is not None else DiscordSettings.parse(settings.extra))
        self.files = Attachments(settings)

    async def index(
        self,
        interaction: discord.Interaction,
        url: str | None = None,
        attachment: discord.Attachment | None = None,
        where: str | None = None,
    ) -> None:
        if not await self._may_manage(interaction):
            return
        await interaction.response.defer(thinking=True)
        async with Replier(interaction) as replier:
            scope = await indexing_scope(self.threads, _scope(interaction), where)
            async with ProgressNotice(lambda text: interaction.edit_original_response(content=text)) as notice:
                if attachment is not None:
                    if kind(attachment) != "pdf":
                        raise BadInput(f"{attachment.filename}: only PDFs can be indexed.")
                    data = await self.files.download(attachment, self.settings.max_pdf_bytes)
                    report = await self.service.requests.index_bytes(
                        data, attachment.filename, scope=scope, progress=notice, notify=_notify(interaction)
                    )
                elif url and url.strip():
                    report = await self.service.requests.index(
                        [url.strip()], scope=scope, progress=notice, notify=_notify(interaction)
                    )
                else:
                    raise BadInput("Give a PDF URL or attach a PDF to index.")
            await replier.send_all(text_messages(describe_report(report) + place_note(scope, report)))

    async def reindex(self, interaction: discord.Interaction, document: str | None = None) -> None:
        if not await self._may_manage(interaction):
            return
        await interaction.response.defer(thinking=True)
        async with Replier(interaction) as replier:
            async with ProgressNotice(lambda text: interaction.edit_original_response(content=text)) as notice:
                report = await self.service.requests.reindex(
                    _scope(interaction), document or None, notice, _notify(interaction)
                )
            await replier.send_all(text_messages(describe_report(report)))

    async def docs(self, interaction: discord.Interaction) -> None:
        await interaction.response.defer(thinking=True)
        async with Replier(interaction) as replier:
            scope = _scope(interaction)
            await replier.send_all(render_documents(await self.service.documents(scope), scope))

    async def status(self, interaction: discord.Interaction) -> None:
        """What this channel searches, the indexing under way with its progress (any process's), the jobs
        waiting, the workers alive and the watched addresses."""
        await interaction.response.defer(thinking=True)
        async with Replier(interaction) as replier:
            scope = _scope(interaction)
            documents = await self.service.documents(scope)
            queue = await queue_summary(self.settings, scope)
            await replier.send_all(text_messages(status_text(documents, queue)))

    async def scope(self, interaction: discord.Interaction, document: str, where: str) -> None:
        """Make a document this channel's only, or the whole server's."""
        if not await self._may_manage(interaction):
            return
        await interaction.response.defer(thinking=True)
        async with Replier(interaction) as replier:
            scope = _scope(interaction)
            report = await self.service.move(scope, document, collection(scope, where))
            titles = ", ".join(f"**{shown_text(d.title)}**" for d in report.documents + report.unchanged)
            await replier.send_all(text_messages(f"✅ {titles} is now searched in {PLACES[where]}."))

    async def indexing(self, interaction: discord.Interaction, where: str) -> None:
        """Where documents indexed in a channel of this server go from now on."""
        if not await self._may_manage(interaction):
            return
        await interaction.response.defer(thinking=True)
        async with Replier(interaction) as replier:
            await choose_indexing_place(self.threads, _scope(interaction), where)
            await replier.send_all(
                text_messages(f"✅ From now on, a document indexed in a channel is searched in {PLACES[where]}.")
            )

    async def watch(self, interaction: discord.Interaction, url: str, where: str | None = None) -> None:
        """Keep a PDF's address current in this channel's or the server's collection (checked daily)."""
        if not await self._may_manage(interaction):
            return
        await interaction.response.defer(thinking=True)
        async with Replier(interaction) as replier:
            scope = await indexing_scope(self.threads, _scope(interaction), where)
            queue = await job_queue(self.settings).open()
            try:
                notify = f"discord:{interaction.guild_id}:{interaction.channel_id}"
                source = await watch_address(queue, url.strip(), scope, notify=notify)
            finally:
                await queue.close()
            place = PLACES["channel" if channel_of(scope) else "workspace"]
            await replier.send_all(
                text_messages(
                    f"👀 Watching {code(hide_credentials(source.location))} for {place}: it is indexed now and "
                    "checked every day; a new version replaces the old."
                )
            )

    async def unwatch(self, interaction: discord.Interaction, url: str) -> None:
        if not await self._may_manage(interaction):
            return
        await interaction.response.defer(thinking=True)
        async with Replier(interaction) as replier:
            queue = await job_queue(self.settings).open()
            try:
                source = await unwatch(queue, own_scopes(_scope(interaction)), url.strip())
            finally:
                await queue.close()
            await replier.send_all(
                text_messages(f"🔕 No longer watching {code(hide_credentials(source.location))}; its document stays.")
            )

    async def autoindex(self, interaction: discord.Interaction, on: bool) -> None:
        """Every PDF shared in this channel indexed for this channel, without a mention (or no longer)."""
        if not await self._may_manage(interaction):
            return
        await interaction.response.defer(thinking=True)
        async with Replier(interaction) as replier:
            _, guild = tenant(_scope(interaction))
            channel = home_channel(interaction.channel)
            await self.threads.choose("discord", guild, f"{AUTOINDEX}:{channel}", "on" if on else "off")
            text = (
                "📥 Autoindex is on: every PDF shared in this channel is indexed for this channel, without a mention."
                if on
                else "✅ Autoindex is off: PDFs shared here are indexed only when someone asks me to."
            )
            await replier.send_all(text_messages(text))

    async def remove(self, interaction: discord.Interaction, document: str) -> None:
        if not await self._may_manage(interaction):
            return
        await interaction.response.defer(thinking=True)
        async with Replier(interaction) as replier:
            doc = await self.service.remove(_scope(interaction), document)
            await replier.send_all(
                text_messages(
                    f"🗑️ Removed **{shown_text(doc.title)}** ({code(doc.file_name)}) from this server's documents."
                )
            )

    async def document_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        """Autocomplete for /remove, /reindex and /scope: this channel's and this server's own documents."""
        scope = _scope(interaction)
        try:
            docs = own_and_shared(await self.service.documents(scope), scope)[0]
        except Exception:
            log.warning("document autocomplete failed", exc_info=True)
            return []
        needle = current.lower()
        return [
            app_commands.Choice(name=d.title[:100], value=d.doc_id)
            for d in docs
            if needle in d.title.lower() or needle in d.file_name.lower()
        ][:25]

    async def _may_manage(self, interaction: discord.Interaction) -> bool:
        """Checked before deferring, so a refusal is a quick private reply."""
        if interaction.guild is None:
            await interaction.response.send_message(
                "Documents are managed in a server; in DMs I answer from the shared collection only.", ephemeral=True
            )
            return False
        if not self.permissions.allows(interaction.user, interaction.permissions):
            await interaction.response.send_message(self.permissions.refusal(), ephemeral=True)
            return False
        return True


def _scope(interaction: discord.Interaction) -> str:
    return scope_for(interaction.guild_id, interaction.channel)


def _notify(interaction: discord.Interaction) -> str:
    """Where the request is told its end should this process die first (core.told_later)."""
    return f"discord:{interaction.guild_id}:{interaction.channel_id}"
