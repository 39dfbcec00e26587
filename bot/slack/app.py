"""The Slack app: Bolt with pixelrag's middleware and listeners registered.

Global middleware drops what is never a question (other bots, edits, joins); listener middleware
decides whether a message is addressed to the bot and claims the delivery once (middleware.py); the listeners then
hand the work to background tasks, so Slack gets its acknowledgement at once (Bolt runs with
process_before_response, the same in Socket Mode, over HTTP and in tests).
"""

from __future__ import annotations

import logging
import re

from slack_bolt.async_app import AsyncApp
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler, AsyncServerErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from core import Conversation, Service, Settings, ThreadMemory, channel_scope

from ..background import BackgroundTasks
from . import render
from .agent import AgentView
from .commands import SlackCommands
from .feedback import SlackFeedback
from .files import SlackFiles
from .home import AppHome
from .identity import SlackIdentity
from .indexing import SlackIndexing
from .middleware import Claims, ignore_bots_and_edits, team_of
from .questions import SlackQuestions
from .settings import SlackSettings


class SlackBot:
    """The parts behind the listeners, for serve() and tests: `tasks.drain()` waits for the work."""

    def __init__(
        self, settings: Settings, slack: SlackSettings, service: Service, threads: ThreadMemory, client: AsyncWebClient
    ):
        self.service = service
        self.identity = SlackIdentity(client)
        self.tasks = BackgroundTasks()
        files = SlackFiles(
            slack.bot_token, settings.request_timeout_s, settings.max_image_bytes, settings.max_pdf_bytes
        )
        self.agent = AgentView(service)
        self.home = AppHome(service, slack, threads)
        indexing = SlackIndexing(service, files, slack.progress_interval_s, on_change=self.home.changed)
        conversation = Conversation(service, threads, settings.history_exchanges)
        self.questions = SlackQuestions(slack, conversation, threads, files, indexing, self.tasks, self.agent)
        self.claims = Claims(conversation, threads)
        self.command = SlackCommands(slack, service, indexing, self.tasks, threads)
        self.feedback = SlackFeedback(threads)

    async def drain(self) -> None:
        await self.tasks.drain()

    async def app_home_opened(self, ack, event: dict, body: dict, client: AsyncWebClient, context) -> None:
        """The Home tab gets its view; the Messages tab (the agent view) its suggested prompts."""
        await ack()
        scope = f"slack:{team_of(body, event, context)}"
        user, tab = event.get("user") or "", event.get("tab")
        if tab == "home" and user:
            self.tasks.spawn(self.home.opened(client, scope, user), f"home tab for {user}")
        elif tab == "messages" and event.get("channel"):
            where = channel_scope(scope, event["channel"])
            self.tasks.spawn(self.agent.offer_prompts(client, event["channel"], where), f"prompts for {user}")


def make_client(settings: Settings, slack: SlackSettings) -> AsyncWebClient:
    client = AsyncWebClient(
        token=slack.bot_token or None, base_url=slack.api_url, timeout=int(settings.request_timeout_s)
    )
    # Rate limits (429, honouring Retry-After) and 5xx are retried; connection errors already are.
    client.retry_handlers.extend(
        [AsyncRateLimitErrorRetryHandler(max_retry_count=2), AsyncServerErrorRetryHandler(max_retry_count=2)]
    )
    return client


def build_app(
    settings: Settings, service: Service, threads: ThreadMemory, client: AsyncWebClient | None = None
) -> tuple[AsyncApp, SlackBot]:
    slack = SlackSettings.parse(settings)
    client = client or make_client(settings, slack)
    bot = SlackBot(settings, slack, service, threads, client)
    app = AsyncApp(
        client=client,
        before_authorize=bot.identity.before_authorize,
        signing_secret=slack.signing_secret,
        request_verification_enabled=bool(slack.signing_secret),
        process_before_response=True,
        logger=logging.getLogger("pixelrag.slack.bolt"),
    )
    claims, questions = bot.claims, bot.questions
    app.use(ignore_bots_and_edits)
    app.event("app_mention", middleware=[claims.claim])(questions.on_question)
    app.event("message", middleware=[claims.addressed, claims.claim])(questions.on_question)
    app.command(slack.command)(bot.command)
    app.action(render.FEEDBACK_ACTION)(bot.feedback)

    # A page button opens its URL in the browser; Slack reports the click as well, which needs no more than an ack.
    @app.action(re.compile(f"^{render.OPEN_PAGE_ACTION}-"))
    async def page_opened(ack) -> None:
        await ack()

    app.event("app_home_opened")(bot.app_home_opened)

    # Subscribed but not acted on: unhandled events get a 404, which Slack retries.
    @app.event("file_shared")
    async def ignore(ack) -> None:
        await ack()

    return app, bot
