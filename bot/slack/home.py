"""The App Home tab: published when a user opens it, and again for the workspace's recent viewers
when its documents change (an indexing job finished, a document removed).

Slack sends `app_home_opened` (manifest: features.app_home.home_tab_enabled and the bot event
app_home_opened) with `tab` "home" or "messages"; the Home tab is a per-user view set with
`views.publish` (user_id + a view of type "home"; no scope needed). Sources: docs.slack.dev
surfaces/app-home and the views.publish reference. Who has opened the tab is kept in this process
only (a few dozen per workspace): a replica that did not see the opening does not refresh that
user's tab, who gets a fresh one the next time the tab is opened.
"""

from __future__ import annotations

import logging
from collections import OrderedDict

from slack_sdk.web.async_client import AsyncWebClient

from core import RemoteError, Service, ThreadMemory, tenant, usage_summary, workspace_of

from ..gaps import DEFAULT_DAYS, gap_lines, gaps_for
from ..job_worker import queue_summary
from .home_view import home_view
from .permissions import may_index
from .settings import SlackSettings

log = logging.getLogger("pixelrag.slack")

RECENT_VIEWERS = 50  # refreshed per workspace after a change; views.publish is Tier 4 (100+ a minute)


class AppHome:
    def __init__(self, service: Service, slack: SlackSettings, threads: ThreadMemory):
        self.service = service
        self.slack = slack
        self.command = slack.command
        self.threads = threads  # the workspace's usage
        self.viewers: dict[str, OrderedDict[str, None]] = {}  # scope -> users, most recent last

    async def opened(self, client: AsyncWebClient, scope: str, user: str) -> None:
        viewers = self.viewers.setdefault(scope, OrderedDict())
        viewers[user] = None
        viewers.move_to_end(user)
        while len(viewers) > RECENT_VIEWERS:
            viewers.popitem(last=False)
        await self.publish(client, scope, [user])

    async def changed(self, client: AsyncWebClient, scope: str) -> None:
        """The workspace's documents changed: its recent viewers get the new tab. (The shared
        collection changes only through the CLI, in another process: tabs catch up when reopened.)
        A change in one channel's collection is the workspace's tab too: what it shows may have moved."""
        scope = workspace_of(scope)
        await self.publish(client, scope, list(self.viewers.get(scope) or ()))

    async def publish(self, client: AsyncWebClient, scope: str, users: list[str]) -> None:
        """Each user's tab; those who may manage the documents see the coverage gaps too (the questions
        come from every channel of the workspace, private ones included)."""
        if not users:
            return
        views: dict[bool, dict] = {}
        for user in users:
            try:
                manages = await may_index(client, self.slack, user)
            except RemoteError:
                manages = False  # Slack cannot say: the tab without the gaps
            try:
                if manages not in views:
                    views[manages] = await self._view(scope, manages)
                await client.views_publish(user_id=user, view=views[manages])
            except Exception as exc:
                log.warning("Home tab not published for %s in %s: %s", user, scope, exc)

    async def _view(self, scope: str, with_gaps: bool) -> dict:
        documents = await self.service.documents(scope)
        costs = await usage_summary([self.threads], *tenant(scope))
        gaps = None
        if with_gaps:
            found, titles = await gaps_for(self.service, scope, DEFAULT_DAYS, self.threads)
            gaps = [gap_lines(gap, titles) for gap in found]
        queue = await queue_summary(self.service.settings, scope)
        watched = queue["sources"] if queue else []
        # Jobs under way in any process (with their progress), and builds of this one that are not jobs.
        indexing = queue["jobs_running"] if queue else []
        indexing += [n for n in self.service.indexing_now(scope) if not any(j.startswith(n) for j in indexing)]
        note = ""
        if queue and (indexing or queue["jobs_queued"]):
            workers = len(queue["workers"])
            note = f"Jobs waiting: {queue['jobs_queued']}; indexing workers alive: {workers}."
        return home_view(documents, scope, indexing, self.command, costs, gaps, watched, note)
