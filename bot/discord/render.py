"""Core records -> Discord messages: an answer the classic way (text split at 2,000 characters, one
embed per citation: the fallback where a Components V2 layout, layout.py, is refused or turned off),
the /docs listing and an indexing report.

Pure functions over core records; nothing here talks to Discord. Each outgoing message respects
Discord's limits: 2,000 characters of content, 10 embeds (6,000 characters together) and 10 files,
and the guild's upload limit. An embed shows its image through "attachment://<name>", so an embed
always travels in the same message as the file it points at.
"""

from __future__ import annotations

import io
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import discord

from bot.text_split import clip
from bot.text_split import split_text as split_pieces
from core import Answer, Citation, Document, IndexReport, grouped, kind_of, literal

MAX_CONTENT = 2000
MAX_EMBEDS = 10
MAX_FILES = 10
MAX_EMBED_CHARS = 6000
MAX_QUOTE = 350
MAX_LINK = 512  # a link button's URL (an embed's takes more)
MAX_LABEL = 80  # a button's label

TOPIC_COLOURS = {
    "warranty": discord.Colour.blue(),
    "complaint": discord.Colour.red(),
    "service": discord.Colour.orange(),
    "instructions": discord.Colour.green(),
    "price": discord.Colour.gold(),
    "other": discord.Colour.light_grey(),
}


# Sent with every message and edit: discord.py adds the client's setting only to requests that carry
# `content`, and a Components V2 edit carries none, so Discord would parse its text displays' mentions.
NO_PINGS = discord.AllowedMentions.none()


def shown(markdown: str) -> str:
    """The core's Markdown as Discord text that pings and links nothing: `\\<` keeps `<@id>`, `<#id>` and
    `<@&id>` from forming, escape_mentions breaks `@everyone` and `@here` with a zero-width space (what
    the page prints stays readable); the core already made Markdown links inert (core/markup.py)."""
    return discord.utils.escape_mentions(markdown.replace("<", "\\<"))


def shown_text(text: str) -> str:
    """Plain text (a title, a quote, a question) as Discord Markdown that shows it as written."""
    return shown(literal(text))


def code(text: str) -> str:
    """Text in a code span, where nothing acts; a backtick in it would end the span early."""
    return "`" + text.replace("`", "'") + "`"


@dataclass
class Outgoing:
    """One message to send: content and/or embeds and files."""

    content: str | None = None
    embeds: list[discord.Embed] = field(default_factory=list)
    files: list[discord.File] = field(default_factory=list)
    upload_bytes: int = 0
    view: discord.ui.View | None = None  # the feedback buttons, under an answer's last message
    layout: discord.ui.LayoutView | None = None  # a Components V2 message (layout.py): no content, no embeds
    # what layout.py builds the LayoutView from
    texts: list[str] = field(default_factory=list)
    gallery: list = field(default_factory=list)
    sources: str = ""
    links: list[tuple[str, str]] = field(default_factory=list)  # (label, url) of link buttons
    colour: discord.Colour | None = None

    @property
    def text_length(self) -> int:
        return sum(len(t) for t in self.texts) + len(self.sources)

    @property
    def text(self) -> str:
        """What the message says, for a plain-text fallback."""
        if self.layout is None:
            return self.content or ""
        return "\n\n".join(self.texts + ([self.sources] if self.sources else []))

    def kwargs(self) -> dict:
        """Keyword arguments for Messageable.send / Webhook.send (empty lists left out)."""
        if self.layout is not None:
            return {"view": self.layout, "allowed_mentions": NO_PINGS, **({"files": self.files} if self.files else {})}
        out: dict = {"allowed_mentions": NO_PINGS}
        if self.content:
            out["content"] = self.content
        if self.embeds:
            out["embeds"] = self.embeds
        if self.files:
            out["files"] = self.files
        if self.view is not None:
            out["view"] = self.view
        return out

    def edit_kwargs(self) -> dict:
        """The same for Message.edit, replacing what a streamed message showed."""
        if self.layout is not None:
            return {"view": self.layout, "attachments": self.files, "allowed_mentions": NO_PINGS}
        return {
            "content": self.content,
            "embeds": self.embeds,
            "attachments": self.files,
            "view": self.view,
            "allowed_mentions": NO_PINGS,
        }


@dataclass
class Rendered:
    """One answer, both ways: Components V2 messages, and the embed messages used where the layout
    is refused (an older client API, a proxy) or turned off (DISCORD_LAYOUT=embeds)."""

    v2: list[Outgoing]
    classic: list[Outgoing] = field(default_factory=list)


def split_text(text: str, limit: int = MAX_CONTENT) -> list[str]:
    return split_pieces(text, limit)


def status_text(documents: Sequence[Document], queue: dict | None) -> str:
    """/status: the documents searched here, and (where jobs were ever queued) the indexing under way,
    the jobs waiting, the workers alive and the watched addresses, each as bot/job_worker.queue_summary
    says them."""
    pages = sum(d.page_count for d in documents)
    lines = [f"**Documents searched here:** {len(documents)} ({pages} pages)"]
    if queue is not None:
        running = "; ".join(queue["jobs_running"]) or "nothing"
        lines += [
            f"**Indexing now:** {shown_text(running)}",
            f"**Jobs waiting:** {queue['jobs_queued']} · **indexing workers alive:** {len(queue['workers'])}",
        ]
        lines += [f"⚠️ Failed lately: {shown_text(line)}" for line in queue["jobs_failed_lately"]]
        lines += [f"**Kept current:** {shown_text(line)}" for line in queue["sources"]]
    return "\n".join(lines)


def text_messages(text: str) -> list[Outgoing]:
    return [Outgoing(content=chunk) for chunk in split_text(text)]


def _megabytes(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB"


def _safe_name(text: str) -> str:
    # attachment:// names must be plain: letters, digits, dot, dash, underscore
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text)[:60] or "file"


def page_link(cite: Citation) -> str | None:
    """The citation's page viewer link where Discord takes it (a link button's or an embed title's URL:
    512 characters at most); None without one."""
    return cite.url if cite.url and len(cite.url) <= MAX_LINK else None


@dataclass
class _Card:
    embed: discord.Embed
    files: list[discord.File]
    size: int


def _citation_card(index: int, cite: Citation, colour: discord.Colour, upload_limit: int, notes: list[str]) -> _Card:
    title = clip(shown_text(f"{cite.title} p. {cite.page}"), 256)
    quote = shown_text(clip(cite.quote.strip(), MAX_QUOTE))
    embed = discord.Embed(title=title, description=f"“{quote}”" if quote else None, colour=colour, url=page_link(cite))
    if cite.highlight is not None:
        embed.set_footer(text="exact highlight" if cite.highlight.kind == "exact" else "approximate region")
    else:
        embed.set_footer(text="page preview")

    files: list[discord.File] = []
    size = 0
    images = [
        (role, data, ext)
        for role, data, ext in (("highlight", cite.crop, ".png"), ("preview", cite.preview, ".jpg"))
        if data
    ]
    placed_image = False
    for role, data, suffix in images:
        if len(data) > upload_limit:
            notes.append(
                f"{cite.label}: the {role} image ({_megabytes(len(data))}) is over this server's "
                f"{_megabytes(upload_limit)} upload limit, so it is not shown."
            )
            continue
        name = _safe_name(f"c{index + 1}-p{cite.page}-{role}{suffix}")
        files.append(discord.File(io.BytesIO(data), filename=name, description=f"{cite.label} ({role})"))
        size += len(data)
        if not placed_image:  # the evidence crop when there is one, else the page
            embed.set_image(url=f"attachment://{name}")
            placed_image = True
        else:  # the whole page beside the crop, small
            embed.set_thumbnail(url=f"attachment://{name}")
    return _Card(embed, files, size)


def render_answer(
    answer: Answer,
    upload_limit: int = discord.utils.DEFAULT_FILE_SIZE_LIMIT_BYTES,
    notes: list[str] | tuple[str, ...] = (),
) -> list[Outgoing]:
    """The messages that carry one answer, in order; `notes` are the adapter's own (unusable files)."""
    extra = list(notes)
    notes = []
    if answer.clarifying_question:
        text = f"❓ {shown_text(answer.clarifying_question.strip())}"
        return text_messages(_with_notes(text, extra + list(answer.notes)))

    colour = TOPIC_COLOURS.get(answer.topic, TOPIC_COLOURS["other"])
    cards = [_citation_card(i, c, colour, upload_limit, notes) for i, c in enumerate(answer.citations)]
    if answer.topic_label and not cards:  # no citation to tint: the label itself carries the colour
        cards.append(_Card(discord.Embed(description=f"Topic: {answer.topic_label}", colour=colour), [], 0))

    text = answer_text(answer, extra + list(answer.notes) + notes)

    messages = text_messages(text)
    for card in cards:
        last = messages[-1] if messages else None
        if last is None or not _fits(last, card, upload_limit):
            last = Outgoing()
            messages.append(last)
        last.embeds.append(card.embed)
        last.files.extend(card.files)
        last.upload_bytes += card.size
    return messages


def answer_text(answer: Answer, notes: list[str]) -> str:
    """The answer's words: topic, how the question was understood, the Markdown, limitations, notes."""
    parts: list[str] = []
    if answer.topic_label:  # only a topic the Jev selector decided with confidence
        parts.append(f"-# 🏷️ Topic: **{answer.topic_label}**")
    if answer.changed_question and answer.interpreted_question.strip():
        parts.append(f"> Interpreted as: *{shown_text(answer.interpreted_question.strip())}*")
    parts.append(shown(answer.markdown.strip()) or "(no answer text)")
    missing = [lim for lim in answer.limitations if lim.strip() and lim.strip() not in answer.markdown]
    if missing:
        parts.append("**Limitations**\n" + "\n".join(f"- {shown_text(lim.strip())}" for lim in missing))
    return _with_notes("\n\n".join(parts), notes)


def _fits(msg: Outgoing, card: _Card, upload_limit: int) -> bool:
    return (
        len(msg.embeds) + 1 <= MAX_EMBEDS
        and len(msg.files) + len(card.files) <= MAX_FILES
        and sum(len(e) for e in msg.embeds) + len(card.embed) <= MAX_EMBED_CHARS
        and msg.upload_bytes + card.size <= upload_limit
    )


def _with_notes(text: str, notes: list[str]) -> str:
    if not notes:
        return text
    return text + "\n\n" + "\n".join(f"-# ⚠️ {shown_text(n.strip())}" for n in notes if n.strip())


COLLECTIONS = {"channel": "This channel only", "workspace": "This server", "shared": "Shared collection"}


def render_documents(docs: list[Document], scope: str) -> list[Outgoing]:
    """The /docs listing, grouped by where each document is visible: this channel only, this server,
    the shared collection."""
    if not docs:
        return text_messages("No documents are indexed yet. Someone with Manage Server can add one with `/index`.")
    lines: list[str] = []
    for kind, group in grouped(docs, scope):
        lines.append(f"**{COLLECTIONS[kind]}** ({len(group)})")
        lines += [f"- {shown_text(d.title)} — {code(d.file_name)}, {d.page_count} pages (`{d.doc_id}`)" for d in group]
        lines.append("")
    return text_messages("\n".join(lines))


def place_note(scope: str, report: IndexReport) -> str:
    """Under a summary of what was indexed into one channel's collection: that only it searches them."""
    if not report.documents or kind_of(scope) != "channel":
        return ""
    return "\n-# Searched in this channel only: `/scope` shares a document with the whole server."


def describe_report(report: IndexReport) -> str:
    """What an indexing run did, for the message that closes it."""
    lines = [
        f"Indexed **{shown_text(d.title)}** ({code(d.file_name)}, {d.page_count} pages)." for d in report.documents
    ]
    if report.documents:
        lines.append(f"-# {report.pages_embedded} pages read, {report.pages_reused} reused from the previous index.")
    lines += [f"Already up to date: **{shown_text(d.title)}** (unchanged)." for d in report.unchanged]
    lines += [f"⚠️ {shown_text(s)}" for s in report.skipped + report.warnings]
    return "\n".join(lines) or "Nothing was indexed."
