"""The bot process: a discord.py Bot carrying the cogs, and `serve`, which opens the thread store
and the service, logs in and runs until stopped."""

from __future__ import annotations

import asyncio
import logging

import aiohttp
import discord
from discord.ext import commands

from core import BadInput, Service, Settings, ThreadMemory, failure_reason, thread_memory

from ..health import Check, serve_health
from ..job_worker import background_worker
from .cogs import DocumentsCog, QuestionsCog
from .commands import DiscordCommands
from .feedback import FeedbackButton
from .questions import DiscordQuestions
from .render import NO_PINGS, shown_text
from .settings import DiscordSettings, threads_db

log = logging.getLogger("pixelrag.discord")

LOGIN_RETRY_FIRST_S, LOGIN_RETRY_MAX_S = 1.0, 60.0  # waits between logins while Discord cannot be reached


class PixelragBot(commands.Bot):
    def __init__(self, service: Service, threads: ThreadMemory, settings: Settings, options: DiscordSettings):
        intents = discord.Intents.default()
        # privileged; without it only DMs and mentions carry text (DISCORD_MESSAGE_CONTENT=0 to run without)
        intents.message_content = options.message_content
        super().__init__(
            command_prefix=commands.when_mentioned,  # unused: on_message below never parses prefix commands
            help_command=None,
            intents=intents,
            # quoted documents must never ping @everyone or roles
            allowed_mentions=discord.AllowedMentions(everyone=False, roles=False, users=False, replied_user=True),
        )
        self.options = options
        self.ratings = threads  # where the feedback buttons' clicks go (feedback.KeepsRatings)
        self.questions = DiscordQuestions(service, threads, settings, me=lambda: self.user, options=options)
        self.document_commands = DiscordCommands(service, threads, settings, options)

    async def add_cogs(self) -> None:
        """Register the listeners and app commands (no connection needed)."""
        await self.add_cog(QuestionsCog(self.questions))
        await self.add_cog(DocumentsCog(self.document_commands))

    async def setup_hook(self) -> None:
        await self.add_cogs()
        self.add_dynamic_items(FeedbackButton)  # clicks on any answer's buttons, whenever it was sent
        if self.options.guild_id:  # development: guild commands appear at once
            guild = discord.Object(self.options.guild_id)
            self.tree.copy_global_to(guild=guild)
            await self.tree.sync(guild=guild)
        else:
            await self.tree.sync()

    async def on_message(self, message: discord.Message) -> None:
        # Bot's default would run prefix commands: "@pixelrag help …" is a question, and
        # QuestionsCog's listener is the only reader of messages.
        return

    async def on_ready(self) -> None:
        log.info("connected as %s to %d servers", self.user, len(self.guilds))


def build_client(
    service: Service, threads: ThreadMemory, settings: Settings, options: DiscordSettings | None = None
) -> PixelragBot:
    """The bot, not connected; its cogs are added by `setup_hook` when it logs in (or `add_cogs`)."""
    options = options if options is not None else DiscordSettings.parse(settings.extra)
    return PixelragBot(service, threads, settings, options)


def gateway_connected(client: discord.Client) -> Check:
    """Why the bot cannot hear Discord now (not yet or no longer on the gateway), or None."""

    async def connected() -> str | None:
        return None if client.is_ready() and not client.is_closed() else "not connected to Discord's gateway"

    return connected


async def serve(settings: Settings, health_port: int | None = None) -> None:
    """Run the bot until it is stopped; `pixelrag discord` calls this."""
    options = DiscordSettings.parse(settings.extra)
    if not options.token:
        raise BadInput("DISCORD_TOKEN is not set; see docs/discord.md.")
    if not logging.getLogger().handlers:
        discord.utils.setup_logging()
    threads = await thread_memory(settings, threads_db(settings)).open()
    service = Service(settings, costs=threads)  # a server's indexing costs are kept with its questions'
    await service.warm_up()
    clients: list[PixelragBot] = []  # the one trying now: a failed login leaves nothing to reuse

    async def connected() -> str | None:
        return await gateway_connected(clients[-1])() if clients else "not connected to Discord's gateway"

    probes = await serve_health(health_port, service, connected) if health_port else None

    async def tell(channel_id: str, text: str) -> None:
        client = clients[-1]
        channel = client.get_channel(int(channel_id)) or await client.fetch_channel(int(channel_id))
        await channel.send(shown_text(text), allowed_mentions=NO_PINGS)  # type: ignore[union-attr]

    try:
        async with background_worker(settings, service, ("discord", tell)):
            wait = LOGIN_RETRY_FIRST_S
            while True:
                clients[:] = [build_client(service, threads, settings, options)]
                try:
                    async with clients[0]:
                        await clients[0].start(options.token)  # discord.py reconnects by itself once logged in
                    return
                except (OSError, TimeoutError, aiohttp.ClientError, discord.DiscordServerError) as exc:
                    # Discord unreachable or failing as the bot starts: said, and tried again until it answers.
                    log.warning("Discord cannot be reached (%s); trying again in %.0f s", failure_reason(exc), wait)
                    await asyncio.sleep(wait)
                    wait = min(wait * 2, LOGIN_RETRY_MAX_S)
    except discord.LoginFailure as exc:
        raise BadInput("Discord refused DISCORD_TOKEN; copy the bot token again from the Developer Portal.") from exc
    except discord.PrivilegedIntentsRequired as exc:
        raise BadInput(
            "Enable “Message Content Intent” for the bot in the Developer Portal, "
            "or set DISCORD_MESSAGE_CONTENT=0 to run without it (mentions and slash commands only)."
        ) from exc
    finally:
        if probes:
            await probes.cleanup()
        await threads.close()
        await service.close()
