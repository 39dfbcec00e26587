"""Core records -> Components V2 messages (`discord.ui.LayoutView`): the answer's Markdown in text
displays, the page previews and highlight crops in a media gallery, the sources under them and the
👍 / 👎 buttons, in one message when it fits. Also the layout a streamed answer shows while it is
worked on.

Pure functions; nothing here talks to Discord. Discord's limits for a V2 message: 40 components
(nested ones included), 4,000 characters across its text displays, 1–10 items per media gallery,
10 files; a gallery item shows an uploaded file through "attachment://<name>", so the files travel
in the same message. A V2 message carries no `content` or embeds. Longer answers continue in further
messages, cut at paragraph ends; the evidence and buttons close the last one.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import discord

from bot.text_split import clip, split_text
from core import Answer, Citation, Step

from .feedback import feedback_row, feedback_view
from .render import (
    MAX_FILES,
    MAX_LABEL,
    TOPIC_COLOURS,
    Outgoing,
    Rendered,
    _megabytes,
    _safe_name,
    _with_notes,
    answer_text,
    page_link,
    render_answer,
    shown,
    shown_text,
)

MAX_TEXT = 4000  # characters across a V2 message's text displays
MAX_GALLERY = 10  # items in one media gallery
TEXT_PIECE = 3800  # an answer piece in one message, leaving room for a short sources line
SOURCE_QUOTE = 160  # characters of a quote in the sources line
MAX_ALT = 256  # a gallery item's description


@dataclass
class _Evidence:
    files: list[discord.File] = field(default_factory=list)
    alts: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    links: dict[tuple[str, int], tuple[str, str]] = field(default_factory=dict)  # page -> (label, url)
    size: int = 0


def _evidence(answer: Answer, upload_limit: int, notes: list[str]) -> list[_Evidence]:
    """The citations' images grouped into galleries that fit a message (10 files, the upload limit);
    one citation's images always stay together, beside its line in the sources."""
    groups: list[_Evidence] = []
    for i, cite in enumerate(answer.citations):
        files, alts, size = [], [], 0
        for role, data, suffix in (("highlight", cite.crop, ".png"), ("preview", cite.preview, ".jpg")):
            if not data:
                continue
            if len(data) > upload_limit:
                notes.append(
                    f"{cite.label}: the {role} image ({_megabytes(len(data))}) is over this server's "
                    f"{_megabytes(upload_limit)} upload limit, so it is not shown."
                )
                continue
            name = _safe_name(f"c{i + 1}-p{cite.page}-{role}{suffix}")
            alt = clip(f"{cite.label} ({role})", MAX_ALT)
            files.append(discord.File(io.BytesIO(data), filename=name, description=alt))
            alts.append(alt)
            size += len(data)
        last = groups[-1] if groups else None
        if (
            last is None
            or len(last.files) + len(files) > min(MAX_FILES, MAX_GALLERY)
            or last.size + size > upload_limit
        ):
            last = _Evidence()
            groups.append(last)
        last.files += files
        last.alts += alts
        last.size += size
        last.sources.append(_source_line(i, cite))
        if url := page_link(cite):
            last.links.setdefault(
                (cite.doc_id, cite.page), (clip(f"Open p. {cite.page} · {cite.title}", MAX_LABEL), url)
            )
    return groups


def _source_line(i: int, cite: Citation) -> str:
    kind = (
        "page preview"
        if cite.highlight is None
        else ("exact highlight" if cite.highlight.kind == "exact" else "approximate region")
    )
    quote = shown_text(clip(" ".join(cite.quote.split()), SOURCE_QUOTE))
    return f"**{i + 1}.** {shown_text(cite.title)}, p. {cite.page} ({kind})" + (f" — “{quote}”" if quote else "")


def _sources_text(group: _Evidence, first: bool) -> str:
    head = "📄 **Sources**" if first else "📄 **Sources** (continued)"
    return head + "\n" + "\n".join(group.sources)


def render_layout(
    answer: Answer,
    upload_limit: int = discord.utils.DEFAULT_FILE_SIZE_LIMIT_BYTES,
    notes: list[str] | tuple[str, ...] = (),
    turn_id: int | None = None,
) -> list[Outgoing]:
    """The V2 messages that carry one answer, in order; buttons under the last (stored turns only)."""
    extra = list(notes)
    if answer.clarifying_question:
        text = _with_notes(f"❓ {shown_text(answer.clarifying_question.strip())}", extra + list(answer.notes))
        messages = [_message(None, [piece]) for piece in split_text(text, TEXT_PIECE)]
        for out in messages:
            out.layout = _view(out, None, False, None)
        return messages
    image_notes: list[str] = []
    groups = _evidence(answer, upload_limit, image_notes)
    text = answer_text(answer, extra + list(answer.notes) + image_notes)
    colour = TOPIC_COLOURS.get(answer.topic, TOPIC_COLOURS["other"])

    pieces = split_text(text, TEXT_PIECE) or ["(no answer text)"]
    messages = [_message(colour, [piece]) for piece in pieces]
    for n, group in enumerate(groups):
        sources = _sources_text(group, n == 0)
        last = messages[-1]
        if last.text_length + len(sources) > MAX_TEXT or last.files:
            last = _message(colour, [])
            messages.append(last)
        _add_evidence(last, group, sources)
    buttons = turn_id is not None
    for out in messages:
        out.layout = _view(out, colour, buttons and out is messages[-1], turn_id)
    return messages


def _message(colour, texts: list[str]) -> Outgoing:
    out = Outgoing()
    out.texts = list(texts)
    out.colour = colour
    return out


def _add_evidence(out: Outgoing, group: _Evidence, sources: str) -> None:
    out.files += group.files
    out.upload_bytes += group.size
    out.gallery = list(zip(group.files, group.alts))
    out.sources = sources
    out.links = list(group.links.values())


def _view(out: Outgoing, colour, buttons: bool, turn_id: int | None) -> discord.ui.LayoutView:
    view = discord.ui.LayoutView(timeout=None)
    container: discord.ui.Container[discord.ui.LayoutView] = discord.ui.Container(accent_colour=colour)
    for text in out.texts:
        container.add_item(discord.ui.TextDisplay(text))
    if out.sources:
        if out.texts:
            container.add_item(discord.ui.Separator())
        if out.gallery:  # a citation whose images could not be drawn or uploaded still has its line
            container.add_item(
                discord.ui.MediaGallery(*[discord.MediaGalleryItem(f, description=alt) for f, alt in out.gallery])
            )
        container.add_item(discord.ui.TextDisplay(out.sources))
        for i in range(0, len(out.links), 5):  # a link button per cited page opens it in the page viewer
            row: discord.ui.ActionRow[discord.ui.LayoutView] = discord.ui.ActionRow()
            for label, url in out.links[i : i + 5]:
                row.add_item(discord.ui.Button(style=discord.ButtonStyle.link, label=label, url=url))
            container.add_item(row)
    view.add_item(container)
    if buttons and turn_id is not None:  # buttons only under a stored turn
        view.add_item(feedback_row(turn_id))
    return view


# ---- while the answer is worked on ------------------------------------------------------------

STATUS_TEXT = 3000  # of the streamed answer shown while it is written (the rest arrives with the final layout)
MARKS = {"in_progress": "⏳", "complete": "✅", "error": "⚠️"}


def status_lines(steps: list[Step]) -> str:
    lines = []
    for step in steps:
        line = f"-# {MARKS.get(step.status, '⏳')} {shown_text(step.title)}"
        if step.detail:
            line += f" — {shown_text(step.detail)}"
        lines.append(clip(line, 300))
    return "\n".join(lines)


def status_text(steps: list[Step], text: str, error: str | None, limit: int) -> str:
    """The stages, the answer so far (its start, clipped) and an error that ended it, within `limit`."""
    head = status_lines(steps) or "-# ⏳ Working on it…"
    tail = f"\n\n⚠️ {shown_text(error)}" if error else ""
    room = limit - len(head) - len(tail) - 2
    body = clip(shown(text.strip()), max(room, 0)) if text.strip() and room > 20 else ""
    return head + (f"\n\n{body}" if body else "") + tail


def status_layout(steps: list[Step], text: str, error: str | None = None) -> discord.ui.LayoutView:
    view = discord.ui.LayoutView(timeout=None)
    view.add_item(
        discord.ui.Container(discord.ui.TextDisplay(status_text(steps, text, error, min(STATUS_TEXT, MAX_TEXT))))
    )
    return view


def render_both(answer: Answer, limit: int, problems: list[str], turn_id: int | None) -> Rendered:
    """The answer as a Components V2 layout and as embeds (where the layout is refused)."""
    return Rendered(
        render_layout(answer, limit, notes=problems, turn_id=turn_id),
        with_feedback(render_answer(answer, limit, notes=problems), answer, turn_id),
    )


def with_feedback(messages: list[Outgoing], answer: Answer, turn_id: int | None) -> list[Outgoing]:
    """An answer of a stored turn gets 👍 / 👎 under its last message; a clarifying question does not."""
    if turn_id is not None and not answer.clarifying_question and messages:
        messages[-1].view = feedback_view(turn_id)
    return messages
