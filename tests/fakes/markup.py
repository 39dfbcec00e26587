"""What in a message's text would act in Slack or Discord: a mention that notifies, a broadcast, a link
whose target hides behind its label. The fakes (slack.py, discord.py) record every such thing a bot
sends, and the tests' fixtures fail on any: a PDF's `<!channel>` quoted in an answer pages a whole
workspace in real Slack, so the fakes treat it as the real services do, not as text.

Markdown is read as CommonMark (markdown-it-py), as Slack's markdown block and, near enough for links,
Discord read it; a backslash-escaped bracket forms no link there either.
"""

from __future__ import annotations

import html
import re

from markdown_it import MarkdownIt

# Slack's control sequences: <@U…> and <!subteam^…> mention, <!here>/<!channel>/<!everyone> broadcast,
# <#C…> links a channel, <https://…|label> is a link with a label of the sender's choosing.
SLACK_TOKEN = re.compile(r"<(?:[!@#]|[a-z][a-z0-9+.-]*:)[^<>\n]*>", re.I)
DISCORD_BROADCAST = re.compile(r"@(everyone|here)\b")
DISCORD_USER = re.compile(r"<@!?(\d+)>")
DISCORD_ROLE = re.compile(r"<@&(\d+)>")

_markdown = MarkdownIt("commonmark")


def slack_tokens(text: str) -> list[str]:
    """The control sequences in a text Slack would act on (in mrkdwn, in a markdown block or a stream,
    and, strictly, wherever else a bot sends them)."""
    return SLACK_TOKEN.findall(text)


def hidden_links(markdown: str) -> list[str]:
    """The targets of the links whose visible text is not the target itself, and of images."""
    found: list[str] = []
    for block in _markdown.parse(markdown):
        children = block.children or []
        for i, token in enumerate(children):
            if token.type == "image":
                found.append(str(token.attrs.get("src", "")))
            elif token.type == "link_open":
                href = str(token.attrs.get("href", ""))
                label = ""
                for inner in children[i + 1 :]:
                    if inner.type == "link_close":
                        break
                    label += inner.content
                if label.strip() not in (href, href.removeprefix("mailto:")):
                    found.append(href)
    return found


def displayed(markdown: str) -> str:
    """What a reader sees of Markdown: rendered as CommonMark, without its tags, entities decoded."""
    return html.unescape(re.sub(r"<[^>]+>", "", _markdown.render(markdown)))


def discord_pings(text: str, allowed_mentions: dict | None) -> list[str]:
    """The mentions in a message's text that Discord would notify, given the request's allowed_mentions
    (absent: Discord parses every kind)."""
    parse = {"everyone", "users", "roles"} if allowed_mentions is None else set(allowed_mentions.get("parse") or ())
    users = {str(u) for u in (allowed_mentions or {}).get("users") or ()}
    roles = {str(r) for r in (allowed_mentions or {}).get("roles") or ()}
    pings = [f"@{m}" for m in DISCORD_BROADCAST.findall(text) if "everyone" in parse]
    pings += [f"<@{u}>" for u in DISCORD_USER.findall(text) if "users" in parse or u in users]
    pings += [f"<@&{r}>" for r in DISCORD_ROLE.findall(text) if "roles" in parse or r in roles]
    return pings
