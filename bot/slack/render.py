"""Answer records -> Slack messages (Block Kit), the end of a streamed answer, and the file list
for the evidence upload.

Pure functions, no network: the adapter posts what these return. The reader's Markdown goes into
`markdown` blocks as written (tables, lists, code); our own lines (limitations, sources, notes) are
mrkdwn sections. Slack limits honoured here: section text <= 3000 characters, markdown blocks <=
12,000 characters each and together per message, <= 50 blocks per message, and a conservative
total per message (payloads near 13k characters of blocks get msg_blocks_too_long).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from bot.progress import pace
from bot.text_split import clip
from bot.text_split import split_text as split_pieces
from core import Answer, Citation, Document, IndexReport, Progress, grouped, kind_of

SECTION_LIMIT = 3000
MARKDOWN_PIECE = 10_000  # of one markdown block (Slack: 12,000), leaving room in its message
BLOCKS_PER_MESSAGE = 50
CHARS_PER_MESSAGE = 11_000
MAX_UPLOADS = 10
FEEDBACK_ACTION = "pixelrag_feedback"
OPEN_PAGE_ACTION = "pixelrag_open_page"  # a URL button's click is reported too, and acknowledged
BUTTON_TEXT = 75  # Slack's limit for a button's text
MAX_OPEN_BUTTONS = 10  # as many pages as an answer has previews
FALLBACK_LIMIT = 3000  # the notification `text`; Slack allows more, but a notification is a preview
# Blocks have no colour in Slack: a topic's tint is its coloured marker (the same hues as Discord's embeds).
TOPIC_MARKS = {
    "warranty": ":large_blue_circle:",
    "complaint": ":red_circle:",
    "service": ":large_orange_circle:",
    "instructions": ":large_green_circle:",
    "price": ":large_yellow_circle:",
    "other": ":white_circle:",
}

COLLECTIONS = {"channel": "This channel only", "workspace": "This workspace", "shared": "Shared collection"}

HELP = """*pixelrag* answers questions about your team's PDFs from the page images.
• Mention me with a question (attach a screenshot if it helps); I answer in a thread and keep following that thread.
• `/pixelrag index <url> [channel|workspace]` — add a PDF for this channel only or the whole workspace \
(or mention me with “index this” on a message with a PDF attached)
• `/pixelrag reindex [document]` — rebuild one document or all the documents of this channel and workspace
• `/pixelrag list` — documents this channel can search, and where each one is visible
• `/pixelrag remove <document>` — remove a document of this channel or workspace
• `/pixelrag scope <document> channel|workspace` — make a document this channel's only, or the whole workspace's
• `/pixelrag indexing channel|workspace` — where documents indexed in a chat go by default (the workspace)
• `/pixelrag watch <url> [channel|workspace]` — keep a PDF's address current: checked daily, a new version \
replaces the old (`/pixelrag unwatch <url>` stops it)
• `/pixelrag autoindex on|off` — index every PDF shared in this channel, for this channel, without a mention
• `/pixelrag status` — index and backend status
• `/pixelrag help` — this text
Indexing and removing are limited to workspace admins and the users listed in SLACK_INDEX_USERS."""


def escape(text: str) -> str:
    """Slack's three control characters; everything else is literal in mrkdwn."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def slack_markdown(markdown: str) -> str:
    """The core's Markdown as a markdown block's (or a stream's) text. Every `<` is an entity, so what a
    document prints as `<!channel>`, `<@U…>` or `<https://…|label>` shows as written and never pings or
    links; the core already made Markdown links inert (core/markup.py). One character at a time, so a
    stream's pieces come out as the whole would."""
    return markdown.replace("<", "&lt;")


def plain(text: str) -> str:
    """Text for fields Slack shows as they are (file titles, alt texts, task titles, prompts), where an
    entity would show as typed: a word joiner after each `<` keeps `<!channel>` from forming, unseen."""
    return text.replace("<", "<\u2060")


def split_text(text: str, limit: int = SECTION_LIMIT) -> list[str]:
    return split_pieces(text, limit)


def section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text}}


def context(text: str) -> dict:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text[:SECTION_LIMIT]}]}


def source_line(citation: Citation) -> str:
    line = f"• {escape(citation.label)}"
    if citation.quote:
        quote = " ".join(citation.quote.split())
        quote = quote if len(quote) <= 160 else quote[:157].rstrip() + "…"
        line += f" — “{escape(quote)}”"
    if citation.highlight is not None and citation.highlight.kind == "approximate":
        line += " _(approximate highlight)_"
    return line


def open_page_blocks(citations: Sequence[Citation]) -> list[dict]:
    """A button per cited page that opens it in the page viewer (when citations carry links). Buttons,
    not links in the text: Slack never unfurls a button's URL, so no preview fetches the page."""
    pages: dict[tuple[str, int], Citation] = {}
    for citation in citations:
        if citation.url:
            pages.setdefault((citation.doc_id, citation.page), citation)
    buttons = [
        {
            "type": "button",
            "text": {"type": "plain_text", "text": clip(f"Open p. {c.page} · {c.title}", BUTTON_TEXT), "emoji": False},
            "url": c.url,
            "action_id": f"{OPEN_PAGE_ACTION}-{n}",
        }
        for n, c in enumerate(pages.values())
    ][:MAX_OPEN_BUTTONS]
    return [{"type": "actions", "elements": buttons[i : i + 5]} for i in range(0, len(buttons), 5)]


def markdown(text: str) -> dict:
    return {"type": "markdown", "text": text}


def markdown_blocks(text: str) -> list[dict]:
    """Markdown already made safe for Slack (`slack_markdown`), split at paragraph ends into blocks Slack takes."""
    return [markdown(piece) for piece in split_text(text, MARKDOWN_PIECE)]


def answer_blocks(answer: Answer) -> list[dict]:
    """All blocks of an answer, in reading order, each within its block's limit."""
    blocks: list[dict] = []
    if answer.topic_label:  # only a topic the Jev selector decided with confidence
        blocks.append(
            context(f"{TOPIC_MARKS.get(answer.topic_label, TOPIC_MARKS['other'])} Topic: *{answer.topic_label}*")
        )
    if answer.changed_question and answer.interpreted_question.strip():
        blocks.append(context(f"Interpreted as: {escape(answer.interpreted_question.strip())}"))
    blocks += markdown_blocks(slack_markdown(answer.markdown)) or [section("_(no answer text)_")]
    return blocks + evidence_blocks(answer)


def evidence_blocks(answer: Answer) -> list[dict]:
    """What follows the answer's text: its limitations, its sources (one line per citation), notes."""
    blocks: list[dict] = []
    if answer.limitations:
        text = "*Limitations*\n" + "\n".join(f"• {escape(x)}" for x in answer.limitations)
        blocks.extend(section(p) for p in split_text(text))
    if answer.citations:
        text = "*Sources*\n" + "\n".join(source_line(c) for c in answer.citations)
        blocks.extend(section(p) for p in split_text(text))
        blocks += open_page_blocks(answer.citations)
    for note in answer.notes:
        blocks.append(context(f":warning: {escape(note)}"))
    return blocks


def pack_messages(blocks: list[dict], fallback: str) -> list[dict]:
    """Group blocks into chat.postMessage payloads (<= 50 blocks, bounded size), each with `text`."""
    messages: list[dict] = []
    current: list[dict] = []
    size = 0
    for block in blocks:  # markdown blocks count here too: their 12,000 per message is above the cap
        length = len(_block_chars(block))
        if current and (len(current) >= BLOCKS_PER_MESSAGE or size + length > CHARS_PER_MESSAGE):
            messages.append({"blocks": current})
            current, size = [], 0
        current.append(block)
        size += length
    if current:
        messages.append({"blocks": current})
    for i, message in enumerate(messages):
        text = fallback if i == 0 else _block_chars(message["blocks"][0])
        message["text"] = clip(text, FALLBACK_LIMIT)
    return messages


def plain_pieces(message: dict) -> list[str]:
    """A chat.postMessage payload as plain texts (its blocks' text, no Block Kit), each within a section's
    size: the fallback when Slack refuses the blocks."""
    text = "\n\n".join(_block_chars(b) for b in message.get("blocks") or []) or message.get("text", "")
    return split_text(text) or ["(empty answer)"]


def render_answer(answer: Answer, turn_id: int | None = None) -> list[dict]:
    """chat.postMessage payloads (blocks + text) for an answer or a clarifying question; an answer of
    a stored turn ends with 👍 / 👎 buttons."""
    if answer.clarifying_question:
        question = escape(answer.clarifying_question.strip())
        blocks = [section(f":question: {piece}") for piece in split_text(question, SECTION_LIMIT - 20)]
        return pack_messages(blocks, answer.clarifying_question.strip())
    fallback = escape(" ".join(answer.markdown.split())) or "Answer"
    return with_feedback(pack_messages(answer_blocks(answer), fallback), turn_id)


def stream_end(answer: Answer, turn_id: int | None, overflow: str = "") -> tuple[list[dict], list[dict]]:
    """The blocks chat.stopStream puts under a streamed answer, and the messages that follow it: the
    text that did not fit in the streamed message (`overflow`, as streamed: already `slack_markdown`;
    then everything after it follows it too), the evidence beyond one message, and the feedback
    buttons at the very end."""
    if answer.clarifying_question:
        return [], []
    fallback = " ".join(overflow.split()) or "Sources of the answer above"
    messages = with_feedback(pack_messages(markdown_blocks(overflow) + evidence_blocks(answer), fallback), turn_id)
    if overflow or not messages:
        return [], messages
    return messages[0]["blocks"], messages[1:]


def with_feedback(messages: list[dict], turn_id: int | None) -> list[dict]:
    """👍 / 👎 under the answer's last message, for a stored turn; the block counts no characters."""
    if turn_id is None:
        return messages
    if messages and len(messages[-1]["blocks"]) < BLOCKS_PER_MESSAGE:
        messages[-1]["blocks"].append(feedback_block(turn_id))
    else:
        messages.append({"blocks": [feedback_block(turn_id)], "text": "Was this answer helpful?"})
    return messages


def feedback_block(turn_id: int) -> dict:
    """Slack's feedback buttons; each click reports its value, `good:<turn>` or `bad:<turn>`."""

    def button(text: str, rating: str, label: str) -> dict:
        return {
            "text": {"type": "plain_text", "text": text},
            "value": f"{rating}:{turn_id}",
            "accessibility_label": label,
        }

    return {
        "type": "context_actions",
        "elements": [
            {
                "type": "feedback_buttons",
                "action_id": FEEDBACK_ACTION,
                "positive_button": button("Good answer", "good", "Mark this answer as good"),
                "negative_button": button("Wrong or unhelpful", "bad", "Mark this answer as wrong or unhelpful"),
            }
        ],
    }


def upload_items(answer: Answer, limit: int = MAX_UPLOADS) -> list[dict]:
    """Page previews and highlight crops for files_upload_v2, each titled with its sources line
    ("document p. N (highlight) — “quote”"), which Slack shows with the image."""
    items: list[dict] = []
    for citation in answer.citations:
        stem = re.sub(r"[^\w.-]+", "_", Path(citation.title).stem)[:60] or "page"
        quote = " ".join(citation.quote.split())
        quote = f" — “{clip(quote, 100)}”" if quote else ""
        for data, kind, ext in ((citation.preview, "page", ".jpg"), (citation.crop, "highlight", ".png")):
            if not data:
                continue
            suffix = " (highlight)" if kind == "highlight" else ""
            items.append(
                {
                    "content": data,
                    "title": plain(f"{citation.title} p. {citation.page}{suffix}{quote}"),
                    "filename": f"{stem}-p{citation.page}-{kind}{ext}",
                    "alt_txt": plain(f"{citation.label}{' highlight' if suffix else ' preview'}"),
                }
            )
            if len(items) >= limit:
                return items
    return items


def documents_text(documents: list[Document], scope: str) -> str:
    if not documents:
        return "No documents yet. Add one with `/pixelrag index <url>`."
    lines: list[str] = []
    for kind, docs in grouped(documents, scope):
        lines.append(f"*{COLLECTIONS[kind]}* ({len(docs)})")
        lines.extend(f"• {escape(d.title)} — {d.page_count} pages (`{d.doc_id}`)" for d in docs)
    return clip("\n".join(lines), SECTION_LIMIT)


def place_note(scope: str | None) -> str:
    """Under a summary of what was indexed into one channel's collection: that only it searches them."""
    if scope is None or kind_of(scope) != "channel":
        return ""
    return "\n_Searched in this channel only: `/pixelrag scope <document> workspace` shares one with the workspace._"


def autoindex_text(on: bool, command: str) -> str:
    if on:
        return (
            ":inbox_tray: Autoindex is on: every PDF shared in this channel is indexed for this channel, without a "
            f"mention. `{command} autoindex off` stops it."
        )
    return ":white_check_mark: Autoindex is off: PDFs shared here are indexed only when someone asks me to."


def indexing_place_text(place: str) -> str:
    if place == "channel":
        return ":white_check_mark: From now on, a document indexed in a channel is searched in that channel only."
    return ":white_check_mark: From now on, a document indexed in a channel is searched in the whole workspace."


def moved_text(report: IndexReport, place: str) -> str:
    titles = ", ".join(escape(d.title) for d in report.documents + report.unchanged)
    where = "this channel only" if place == "channel" else "the whole workspace"
    return f":white_check_mark: {titles} is now searched in {where}."


def progress_text(name: str, progress: Progress | None) -> str:
    if progress is None or progress.total <= 0:
        return f":hourglass_flowing_sand: Indexing {escape(name)}: starting…"
    if progress.stage == "wait":
        return f":hourglass_flowing_sand: Indexing {escape(name)}: waiting for another build of the index to finish…"
    doc = escape(progress.document or name)
    return (
        f":hourglass_flowing_sand: Indexing {doc}: {progress.stage} {progress.done} of {progress.total} pages"
        f"{pace(progress)}"
    )


def report_text(verb: str, report: IndexReport) -> str:
    lines = []
    if report.documents:
        names = ", ".join(escape(d.title) for d in report.documents)
        pages = sum(d.page_count for d in report.documents)
        line = f":white_check_mark: {verb} {names}: {pages} page{'s' if pages != 1 else ''}"
        unchanged = report.pages_reused
        lines.append(line + (f" ({unchanged} unchanged since the last build)." if unchanged else "."))
    lines += [
        f":white_check_mark: Already up to date: {escape(d.title)} (unchanged since it was indexed)."
        for d in report.unchanged
    ]
    lines += [f":warning: {escape(s)}" for s in report.skipped + report.warnings]
    return clip("\n".join(lines) or f"{verb} nothing.", SECTION_LIMIT)


def status_text(status: dict) -> str:
    lines = [f"• {escape(str(k))}: {escape(str(v))}" for k, v in status.items() if k != "indexing_now"]
    indexing = status.get("indexing_now") or []
    lines.append("• indexing now: " + (escape(", ".join(indexing)) if indexing else "nothing"))
    return clip("*pixelrag status*\n" + "\n".join(lines), SECTION_LIMIT)


def _block_chars(block) -> str:
    if isinstance(block, list):
        return "\n".join(_block_chars(b) for b in block)
    if isinstance(block.get("text"), str):  # a markdown block
        return block["text"]
    if isinstance(block.get("text"), dict):
        return block["text"].get("text", "")
    return "\n".join(_text(e.get("text", "")) for e in block.get("elements", []) if isinstance(e, dict))


def _text(text: str | dict) -> str:
    return text.get("text", "") if isinstance(text, dict) else text
