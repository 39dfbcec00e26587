"""The App Home tab as Block Kit: the documents a workspace can search, the indexing in progress,
and how to add documents. A pure function; home.py publishes what it returns.

Limits honoured (Block Kit reference: 100 blocks in a Home tab, section text <= 3000 characters,
header text <= 150; views.publish refuses views over 250 kB): each group lists at most
`MAX_LISTED` documents, several to a section, and says how many more there are. `markdown` blocks
are for messages only, so everything here is mrkdwn sections and context blocks.
"""

from __future__ import annotations

from collections.abc import Sequence

from core import Document, own_and_shared, plural

from .render import SECTION_LIMIT, escape

MAX_VIEW_BLOCKS = 100
MAX_LISTED = 40  # per group: a Home tab is a glance, `/pixelrag list` has the rest
MAX_GAPS = 10  # the most asked: the CSV export has the rest
TITLE_CHARS = 150
HEADER_CHARS = 150


def header(text: str) -> dict:
    return {"type": "header", "text": {"type": "plain_text", "text": text[:HEADER_CHARS], "emoji": True}}


def section(text: str) -> dict:
    return {"type": "section", "text": {"type": "mrkdwn", "text": text[:SECTION_LIMIT]}}


def context(text: str) -> dict:
    return {"type": "context", "elements": [{"type": "mrkdwn", "text": text[:SECTION_LIMIT]}]}


def document_line(document: Document) -> str:
    title = " ".join(document.title.split()) or document.file_name
    if len(title) > TITLE_CHARS:
        title = title[: TITLE_CHARS - 1] + "…"
    return f"• *{escape(title)}* — {plural(document.page_count, 'page')} · `{document.doc_id}`"


def packed(lines: list[str]) -> list[dict]:
    """Lines joined into as few sections as fit Slack's 3,000 characters each."""
    blocks, current = [], ""
    for line in lines:
        if current and len(current) + 1 + len(line) > SECTION_LIMIT:
            blocks.append(section(current))
            current = ""
        current = f"{current}\n{line}" if current else line
    if current:
        blocks.append(section(current))
    return blocks


def document_blocks(heading: str, scope_note: str, documents: list[Document]) -> list[dict]:
    pages = sum(d.page_count for d in documents)
    blocks = [
        section(f"*{heading}* — {plural(len(documents), 'document')}, {plural(pages, 'page')}"),
        context(scope_note),
    ]
    blocks += packed([document_line(d) for d in documents[:MAX_LISTED]])
    if len(documents) > MAX_LISTED:
        blocks.append(
            context(
                f"…and {len(documents) - MAX_LISTED} more not shown here. `/pixelrag list` in a channel lists them."
            )
        )
    return blocks


def home_view(
    documents: list[Document],
    scope: str,
    indexing: list[str],
    command: str = "/pixelrag",
    costs: dict[str, str] | None = None,
    gaps: list[list[str]] | None = None,
    watched: Sequence[str] = (),
    queue_note: str = "",
) -> dict:
    """The Home tab for a workspace (scope `slack:<team>`), with its usage (usage.summary) and its coverage
    gaps (each as bot/gaps.gap_lines gives it) when given; `queue_note`: the jobs waiting and the workers
    alive."""
    own, shared = own_and_shared(documents, scope)
    blocks = [
        header("pixelrag: answers from your PDFs"),
        section(
            "Ask a question in the *Messages* tab: every question starts its own thread, titled after it, and "
            "the answer streams in with the cited pages and their highlighted quotes. Follow-up questions in "
            "the thread keep its context. In a channel, mention me and I answer in a thread."
        ),
        {"type": "divider"},
        header("Documents you can search"),
    ]
    if indexing:
        names = ", ".join(escape(n) for n in indexing)
        blocks.append(
            section(
                f":hourglass_flowing_sand: *Indexing now:* {names}. They can be searched once "
                "they are done; this tab updates then."
            )
        )
    if queue_note:
        blocks.append(context(escape(queue_note)))
    if not documents:
        blocks.append(section("No documents yet: add one as shown below."))
    if own:
        blocks += document_blocks("This workspace", "Added here; every channel of this workspace searches them.", own)
    if shared:
        blocks += document_blocks("Shared collection", "Added by the operator; every workspace searches them.", shared)
    blocks.append(context(f"Documents kept to one channel are searched there only: `{command} list` in it shows them."))
    if watched:
        blocks.append(section("*Kept current* (checked by the workers)"))
        blocks += packed([f"• {escape(line)}" for line in watched[:MAX_LISTED]])
    blocks += [
        {"type": "divider"},
        header("Adding documents"),
        section(
            f"• `{command} index https://…/file.pdf` — add a PDF from a link\n"
            "• Send me a PDF in the Messages tab, or mention me with “index this” on a channel message with "
            "a PDF attached\n"
            f"• `{command} reindex [document]` rebuilds, `{command} remove <document>` removes, "
            f"`{command} list` lists, `{command} scope <document> channel|workspace` moves one\n"
            f"• `{command} indexing channel` keeps what is indexed in a channel to that channel"
        ),
        context("Adding and removing documents is for workspace admins and the users in SLACK_INDEX_USERS."),
    ]
    if gaps is not None:
        blocks += gap_blocks(gaps, scope)
    if costs:
        blocks += [header("Usage"), section("\n".join(f"• *{escape(k)}:* {escape(v)}" for k, v in costs.items()))]
    return {"type": "home", "blocks": blocks[:MAX_VIEW_BLOCKS]}


def gap_blocks(gaps: list[list[str]], scope: str) -> list[dict]:
    """What the documents could not answer: for the people who keep them (admins see it)."""
    blocks = [{"type": "divider"}, header("Questions the documents could not answer")]
    if not gaps:
        return blocks + [section("None in the last 30 days: every question found its answer.")]
    lines = [escape(gap[0]) + "\n" + "\n".join(f"_{escape(line.strip())}_" for line in gap[1:]) for gap in gaps]
    blocks += packed([f"• {line}" for line in lines[:MAX_GAPS]])
    more = f"…and {len(gaps) - MAX_GAPS} more. " if len(gaps) > MAX_GAPS else ""
    blocks.append(
        context(
            f"{more}Last 30 days, from every channel of this workspace, the most asked first; shown to admins "
            f"only. `pixelrag gaps --scope {scope} --csv` exports them."
        )
    )
    return blocks
