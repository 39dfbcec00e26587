"""discord.py cogs: the gateway's message events and /ask wired to DiscordQuestions, the document
commands to DiscordCommands.

Only declarations live here (command names, parameters, checks); every callback delegates, so what
the bot does is tested on those classes without a command tree.
"""

from __future__ import annotations

import discord
from discord import app_commands
from discord.ext import commands

from .commands import DiscordCommands
from .questions import DiscordQuestions

WHERE = [
    app_commands.Choice(name="this channel only", value="channel"),
    app_commands.Choice(name="the whole server", value="workspace"),
]


class QuestionsCog(commands.Cog, name="Questions"):
    """Questions by mention, DM, reply or thread follow-up, and /ask."""

    def __init__(self, questions: DiscordQuestions):
        self.questions = questions

    @commands.Cog.listener()
    async def on_message(self, message: discord.Message) -> None:
        await self.questions.on_message(message)

    @app_commands.command(name="ask", description="Ask a question about the documents")
    @app_commands.describe(question="Your question", image="A screenshot to search with (PNG, JPEG or WebP)")
    async def ask(self, interaction: discord.Interaction, question: str, image: discord.Attachment | None = None):
        await self.questions.ask(interaction, question, image)


class DocumentsCog(commands.Cog, name="Documents"):
    """/docs for everyone; /index, /reindex, /remove, /scope, /indexing, /watch and /unwatch for those
    `Permissions` allows."""

    def __init__(self, documents: DiscordCommands):
        self.documents = documents
        # Manage Server hides the admin commands by default; with a custom role or user list they
        # stay visible and the handler's own check decides. Set per instance (the cog's own copies
        # of the commands), because the configuration is only known at run time.
        if not documents.permissions.customised:
            admin = (self.index, self.reindex, self.remove, self.scope, self.indexing, self.watch, self.unwatch)
            for command in (*admin, self.autoindex):
                command.default_permissions = discord.Permissions(manage_guild=True)

    @app_commands.command(name="index", description="Add a PDF (URL or attachment) to this server's documents")
    @app_commands.describe(
        url="A link to a PDF", attachment="A PDF file", where="Who searches it (the server's /indexing choice if unset)"
    )
    @app_commands.choices(where=WHERE)
    @app_commands.guild_only()
    async def index(
        self,
        interaction: discord.Interaction,
        url: str | None = None,
        attachment: discord.Attachment | None = None,
        where: app_commands.Choice[str] | None = None,
    ):
        await self.documents.index(interaction, url, attachment, where.value if where else None)

    @app_commands.command(name="scope", description="Make a document this channel's only, or the whole server's")
    @app_commands.describe(document="Title, file name or id", where="Who searches it")
    @app_commands.choices(where=WHERE)
    @app_commands.guild_only()
    async def scope(self, interaction: discord.Interaction, document: str, where: app_commands.Choice[str]):
        await self.documents.scope(interaction, document, where.value)

    @app_commands.command(name="indexing", description="Where documents indexed in a channel go from now on")
    @app_commands.describe(where="This channel only, or the whole server (the default)")
    @app_commands.choices(where=WHERE)
    @app_commands.guild_only()
    async def indexing(self, interaction: discord.Interaction, where: app_commands.Choice[str]):
        await self.documents.indexing(interaction, where.value)

    @app_commands.command(name="reindex", description="Rebuild this server's documents (or one of them)")
    @app_commands.describe(document="Title, file name or id; all when left empty")
    @app_commands.guild_only()
    async def reindex(self, interaction: discord.Interaction, document: str | None = None):
        await self.documents.reindex(interaction, document)

    @app_commands.command(name="watch", description="Keep a PDF's address current: checked daily, new versions indexed")
    @app_commands.describe(url="A link to a PDF", where="Who searches it (the server's /indexing choice if unset)")
    @app_commands.choices(where=WHERE)
    @app_commands.guild_only()
    async def watch(self, interaction: discord.Interaction, url: str, where: app_commands.Choice[str] | None = None):
        await self.documents.watch(interaction, url, where.value if where else None)

    @app_commands.command(name="unwatch", description="Stop keeping an address current (its document stays)")
    @app_commands.describe(url="The watched address, or its id")
    @app_commands.guild_only()
    async def unwatch(self, interaction: discord.Interaction, url: str):
        await self.documents.unwatch(interaction, url)

    @app_commands.command(name="autoindex", description="Index every PDF shared in this channel, for this channel")
    @app_commands.describe(on="On: without a mention; off: only when asked")
    @app_commands.guild_only()
    async def autoindex(self, interaction: discord.Interaction, on: bool):
        await self.documents.autoindex(interaction, on)

    @app_commands.command(name="status", description="Indexing under way, jobs waiting, workers, watched addresses")
    async def status(self, interaction: discord.Interaction):
        await self.documents.status(interaction)

    @app_commands.command(name="docs", description="List the documents I can answer from here")
    async def docs(self, interaction: discord.Interaction):
        await self.documents.docs(interaction)

    @app_commands.command(name="remove", description="Remove a document from this server's documents")
    @app_commands.describe(document="Title, file name or id")
    @app_commands.guild_only()
    async def remove(self, interaction: discord.Interaction, document: str):
        await self.documents.remove(interaction, document)

    @reindex.autocomplete("document")
    @remove.autocomplete("document")
    @scope.autocomplete("document")
    async def document_choices(self, interaction: discord.Interaction, current: str) -> list[app_commands.Choice[str]]:
        return await self.documents.document_choices(interaction, current)
