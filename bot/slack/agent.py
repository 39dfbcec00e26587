"""The agent view: Slack's messaging experience for apps since mid-2026 (`features.agent_view` in
manifest.yml), the app's Messages tab where every conversation is a thread.

A question there arrives as an ordinary `message` event with channel_type "im" (the manifest's
`message.im`) and is answered exactly as a mention is (questions.py: streamed, with thread memory
and feedback buttons). This module adds what the surface offers on top of a DM:
- the thread's title, from its first question (`assistant.threads.setTitle`, channel_id + thread_ts);
- suggested prompts naming this workspace's documents when the user opens the Messages tab
  (`app_home_opened` with tab "messages", which replaces the legacy `assistant_thread_started`;
  `assistant.threads.setSuggestedPrompts` with no thread_ts, which the agent view does not take).
Both need the `assistant:write` scope and are best effort: a refusal is logged, the answer goes on.
Sources: docs.slack.dev/ai/migrating-to-agent-messaging and the setSuggestedPrompts / setTitle
method references; Bolt 1.30 attaches set_suggested_prompts to app_home_opened(tab=messages) the
same way, without a thread_ts.
"""

from __future__ import annotations

import logging

from slack_sdk.web.async_client import AsyncWebClient

from core import Document, Service, own_and_shared

from .render import plain

log = logging.getLogger("pixelrag.slack")

TITLE_LIMIT = 60  # a thread list entry shows about this much; Slack documents no maximum
MAX_PROMPTS = 4  # setSuggestedPrompts: "up to four suggested prompts"
PROMPT_TITLE_LIMIT = 60
PROMPTS_HEADING = "Ask about your documents"


def shorten(text: str, limit: int) -> str:
    """`text` on one line, cut at a word end within `limit` characters (with an ellipsis)."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[: limit - 1]
    if " " in cut[limit // 2 :]:
        cut = cut[: cut.rindex(" ")]
    return cut.rstrip(" ,;:.-–—") + "…"


def thread_title(question: str, files: list[dict]) -> str:
    """The title of a thread started by `question` (and its attachments)."""
    if question.strip():
        return shorten(question, TITLE_LIMIT)
    names = [f.get("name") or "" for f in files]
    if any(n.lower().endswith(".pdf") for n in names):
        return shorten(f"Indexing {', '.join(n for n in names if n.lower().endswith('.pdf'))}", TITLE_LIMIT)
    return "Question about a screenshot" if files else "New question"


def suggested_prompts(documents: list[Document], scope: str) -> list[dict]:
    """One prompt per document, the workspace's own first, at most four."""
    own, shared = own_and_shared(documents, scope)
    prompts = []
    for document in (own + shared)[:MAX_PROMPTS]:
        title = " ".join(document.title.split()) or document.file_name
        prompts.append(
            {
                "title": plain(shorten(f"About {title}", PROMPT_TITLE_LIMIT)),
                "message": plain(f"What are the key facts in {shorten(title, 200)}?"),
            }
        )
    return prompts


class AgentView:
    def __init__(self, service: Service):
        self.service = service

    async def title(
        self, client: AsyncWebClient, channel: str, thread_ts: str, question: str, files: list[dict]
    ) -> None:
        try:
            await client.assistant_threads_setTitle(
                channel_id=channel, thread_ts=thread_ts, title=plain(thread_title(question, files))
            )
        except Exception as exc:
            log.info("thread title not set in %s/%s: %s", channel, thread_ts, exc)

    async def offer_prompts(self, client: AsyncWebClient, channel: str, scope: str) -> None:
        """Prompts for the Messages tab just opened. Without documents there is nothing to name:
        the manifest's static suggested prompts stay."""
        try:
            prompts = suggested_prompts(await self.service.documents(scope), scope)
            if prompts:
                await client.assistant_threads_setSuggestedPrompts(
                    channel_id=channel, prompts=prompts, title=PROMPTS_HEADING
                )
        except Exception as exc:
            log.info("suggested prompts not set in %s: %s", channel, exc)
