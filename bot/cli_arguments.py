"""The `pixelrag` command line's arguments: one subcommand each for index, reindex, remove, repair, migrate,
ask, status, chat, slack, discord, web, mcp, doctor, feedback, gaps, keys and eval (bot/cli.py runs them)."""

from __future__ import annotations

import argparse

from core import SHARED_SCOPE

SCOPE_HELP = (
    "the collection instead of the shared one, as `status` names it (slack:T1, slack:T1/C9, discord:G1/…): "
    "a chat's documents, for the operator"
)


def health_option(p, what: str) -> None:
    p.add_argument(
        "--health-port",
        type=int,
        metavar="PORT",
        help=f"serve /healthz and /readyz for probes on this port while {what} runs",
    )


def jev_option(p) -> None:
    p.add_argument(
        "--jev",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="let TypeSafe Jev pick the pages to read from 8 candidates (one extra request per "
        "question; default: $PIXELRAG_JEV)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pixelrag", description="Answer questions about PDFs by reading their pages.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    sub = parser.add_subparsers(dest="command", required=True)  # main() runs cmd_<command>
    for add in (document_commands, question_commands, bot_commands, eval_command):
        add(sub)
    return parser


def common_options(p) -> None:
    p.add_argument("--index", help="index directory (default: $PIXELRAG_INDEX_DIR or ./index)")
    p.add_argument("--backend", choices=["local", "gemini"], help="default: gemini when a key is set, else local")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")


def document_commands(sub) -> None:
    """index, reindex, remove, repair, migrate: what the index holds."""
    p = sub.add_parser("index", help="index PDF files, folders of them, or URLs")
    p.add_argument("sources", nargs="+", metavar="FILE_FOLDER_OR_URL")
    p.add_argument("--recursive", "-r", action="store_true", help="a folder's subfolders too")
    p.add_argument("--title", action="append", help="title for the PDF in the same position (repeatable)")
    p.add_argument(
        "--detach", action="store_true", help="only queue a job per PDF for `pixelrag worker`s; print their ids"
    )
    common_options(p)

    p = sub.add_parser("worker", help="work on queued indexing jobs until stopped (several may run, anywhere)")
    p.add_argument("--name", help="how status names this worker (default: host:pid:random)")
    common_options(p)

    p = sub.add_parser("sources", help="folders and addresses kept current: add, list, check, remove")
    p.add_argument("action", choices=["add", "list", "check", "remove"])
    p.add_argument("location", nargs="?", help="add: a folder or a PDF's address; check, remove: a source's id")
    p.add_argument("--every", default="1h", help="add: how often it is checked (30m, 1h, 1d; default 1h)")
    p.add_argument("--recursive", "-r", action="store_true", help="add: a folder's subfolders too")
    p.add_argument("--scope", default=SHARED_SCOPE, help="add: the collection it keeps current: " + SCOPE_HELP)
    p.add_argument("--yes", action="store_true", help="remove: without asking")
    p.add_argument("--json", action="store_true", help="list: machine-readable JSON")
    p.add_argument("--index", help="index directory (default: $PIXELRAG_INDEX_DIR or ./index)")

    p = sub.add_parser("jobs", help="the indexing jobs queued, running and lately ended, and the workers alive")
    p.add_argument("--hours", type=float, default=24, help="ended jobs of the last HOURS (default: 24)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.add_argument("--index", help="index directory (default: $PIXELRAG_INDEX_DIR or ./index)")

    p = sub.add_parser("reindex", help="fetch the shared collection's documents again; embed only changed pages")
    p.add_argument("document", nargs="?", help="title, file name or id (default: all)")
    p.add_argument("--scope", default=SHARED_SCOPE, help=SCOPE_HELP)
    common_options(p)

    p = sub.add_parser("remove", help="remove a document from the shared collection")
    p.add_argument("document", help="title, file name or id")
    p.add_argument("--scope", default=SHARED_SCOPE, help=SCOPE_HELP)
    common_options(p)

    p = sub.add_parser("repair", help="make the newest intact snapshot active after damage; keep stray PDFs")
    common_options(p)

    p = sub.add_parser("migrate", help="copy the index folder into a PostgreSQL database, nothing embedded again")
    p.add_argument("--to", required=True, metavar="postgresql://…", help="the database (as PIXELRAG_DATABASE_URL)")
    common_options(p)


def question_commands(sub) -> None:
    """ask, status, chat: questions from the terminal."""
    p = sub.add_parser("ask", help="ask a question (and/or give a screenshot)")
    p.add_argument("question", nargs="?", default="")
    p.add_argument("--image", action="append", help="screenshot to use as (part of) the query")
    p.add_argument("--retrieve-only", action="store_true", help="stop after retrieval")
    p.add_argument("--out", default="out", help="folder for preview and highlight images (default ./out)")
    common_options(p)
    jev_option(p)

    p = sub.add_parser("status", help="what the index holds")
    common_options(p)

    p = sub.add_parser("chat", help="talk to the bot in the terminal (same service as Slack and Discord)")
    p.add_argument("--out", default="out/chat", help="folder for images")
    common_options(p)


def bot_commands(sub) -> None:
    """slack, discord, web, mcp, doctor, feedback, gaps, keys: the bots and what serves them."""
    p = sub.add_parser("slack", help="run the Slack bot (Socket Mode unless --http)")
    p.add_argument("--http", action="store_true", help="serve the Events API at /slack/events")
    p.add_argument("--port", type=int, default=3000, help="the Events API's port; it serves /healthz and /readyz too")
    health_option(p, "Socket Mode")
    common_options(p)
    jev_option(p)

    p = sub.add_parser("discord", help="run the Discord bot")
    health_option(p, "the bot")
    common_options(p)
    jev_option(p)

    p = sub.add_parser("web", help="the browser chat, and the page viewer citations link to (PIXELRAG_PUBLIC_URL)")
    p.add_argument(
        "--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1: this machine only)"
    )
    p.add_argument("--port", type=int, default=8080, help="default 8080")
    p.add_argument("--scope", default=SHARED_SCOPE, help="the collection the chat searches: " + SCOPE_HELP)
    common_options(p)

    p = sub.add_parser("mcp", help="serve the documents to a local agent over stdio (MCP: search, ask, list)")
    p.add_argument("--scope", default=SHARED_SCOPE, help="the collection the agent sees: " + SCOPE_HELP)
    p.add_argument("--index", help="index directory (default: $PIXELRAG_INDEX_DIR or ./index)")
    p.add_argument("--backend", choices=["local", "gemini"], help="default: gemini when a key is set, else local")
    jev_option(p)

    p = sub.add_parser("doctor", help="check every configured service, token, scope and the index; exit 1 on a failure")
    p.add_argument("--manifest", help="the Slack app manifest the token's scopes must cover (default: manifest.yml)")
    p.add_argument("--index", help="index directory (default: $PIXELRAG_INDEX_DIR or ./index)")
    p.add_argument("--backend", choices=["local", "gemini"], help="default: gemini when a key is set, else local")

    p = sub.add_parser("feedback", help="export the answers people rated in chat as evaluation questions")
    p.add_argument("action", choices=["export"])
    p.add_argument("--rating", choices=["bad", "good"], default="bad", help="which ratings (default: bad)")
    p.add_argument("--out", help="JSONL file to write (default: standard output)")
    p.add_argument("--index", help="index directory (default: $PIXELRAG_INDEX_DIR or ./index)")

    p = sub.add_parser("gaps", help="the questions the documents could not answer, grouped (coverage gaps)")
    p.add_argument("--days", type=float, default=30, help="how far back (default: 30 days)")
    p.add_argument("--scope", help="one collection's list (a workspace's includes its channels): " + SCOPE_HELP)
    p.add_argument("--csv", action="store_true", help="print CSV, a row per gap")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON")
    p.add_argument("--index", help="index directory (default: $PIXELRAG_INDEX_DIR or ./index)")

    p = sub.add_parser("keys", help="API keys of pixelrag web's HTTP API: add, list, revoke")
    p.add_argument("action", choices=["add", "list", "revoke"])
    p.add_argument("name", nargs="?", help="the key's name (add, revoke)")
    p.add_argument("--scope", default=SHARED_SCOPE, help="the collection the key sees (add): " + SCOPE_HELP)
    p.add_argument("--index", help="index directory (default: $PIXELRAG_INDEX_DIR or ./index)")
    p.add_argument("--json", action="store_true", help="print machine-readable JSON (list)")


def eval_command(sub) -> None:
    """eval: the lab's harness (run from a checkout)."""
    p = sub.add_parser("eval", help="score retrieval (and the reader) on a questions file")
    p.add_argument("questions", metavar="QUESTIONS.jsonl")
    p.add_argument("--corpus", required=True, help="folder holding the PDFs the questions refer to")
    p.add_argument("--index", help="index directory (default: index/eval-<backend>; built or updated incrementally)")
    p.add_argument("--backend", choices=["local", "gemini"], help="default: gemini when a key is set, else local")
    p.add_argument("--k", type=int, default=4, help="pages retrieved and scored (default 4)")
    p.add_argument("--json", metavar="OUT", help="write the full report with each question's ranked pages")
    p.add_argument("--retrieve-only", action="store_true", help="score retrieval only; do not run the reader")
    p.add_argument("--key-facts", help="JSON {question id: [accepted forms]} for a set without key_fact fields")
    p.add_argument(
        "--document-languages",
        help="JSON {file: language}, or a list of {file, lang} (eval/broad/corpus.json): adds the questions asked "
        "in their page's language and in another as two groups",
    )
    p.add_argument("--out", help="folder for answer images (default: a temporary folder)")
    p.add_argument(
        "--variants",
        default="crop,half,jpeg40,rot2,screenshot",
        help="screenshot-query variants to run (comma-separated; default: all five)",
    )
    p.add_argument("--verbose-questions", action="store_true", help="print each question's ranking to stderr")
    jev_option(p)
    p.add_argument(
        "--compare-jev",
        action="store_true",
        help="rank every question by the dense ranking and by Jev from the same 8 candidates; "
        "exit 1 when the selector fell back or a question failed",
    )
