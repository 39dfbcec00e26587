"""The `pixelrag` command: index, ask, status, chat (console), slack, discord, doctor."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path

from core import (
    SHARED_SCOPE,
    BadInput,
    PixelragError,
    Service,
    Settings,
    Turn,
    load_settings,
    thread_memory,
    usage_summary,
)

from .logs import configure as configure_logs
from .terminal import ProgressBar, exit_code, print_answer, print_report, printable, read_image, save_images


def _settings(args, existing: bool = True) -> Settings:
    """The settings, with the command line's choices. `existing`: an index folder named on purpose (by
    --index or PIXELRAG_INDEX_DIR) must exist, so that a misspelt one is not taken for an empty index."""
    # Read once by main(), which set up logging from them; read here when called on its own.
    settings = getattr(args, "environment", None) or load_settings(extra_prefixes=("SLACK_", "DISCORD_"))
    if getattr(args, "index", None):
        settings = settings.with_(index_dir=Path(args.index))
    named = settings.index_dir != Settings().index_dir  # not the default ./index, which a new install lacks
    if existing and named and not settings.database_url and not settings.index_dir.exists():
        raise BadInput(f"{settings.index_dir}: no such index folder (`pixelrag index` creates one).")
    if getattr(args, "backend", None):
        settings = settings.with_(backend=args.backend)
    if getattr(args, "jev", None) is not None:  # --jev / --no-jev win over PIXELRAG_JEV
        settings = settings.with_(jev="rerank" if args.jev else "off")
    return settings


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


def pdf_sources(sources: list[str], recursive: bool, titled: bool) -> list[str]:
    """The sources with each folder replaced by the PDFs in it (in its subfolders too when `recursive`),
    in name order; each folder's count is said on stderr."""
    out: list[str] = []
    for source in sources:
        folder = Path(source)
        try:
            is_folder = folder.is_dir()
        except OSError:  # a name too long for the file system: refused with its reason when read
            is_folder = False
        if not is_folder:
            out.append(source)
            continue
        if titled:
            raise BadInput(f"{source}: --title names one PDF; it cannot be given with a folder.")
        found = sorted(
            p
            for p in (folder.rglob("*") if recursive else folder.iterdir())
            if p.is_file() and p.suffix.lower() == ".pdf"
        )
        if not found:
            deeper = "" if recursive else " (--recursive looks in its subfolders too)"
            raise BadInput(f"{source}: no PDF files in this folder{deeper}.")
        print(f"{source}: {len(found)} PDF file{'s' if len(found) != 1 else ''}", file=sys.stderr)
        out += [str(p) for p in found]
    return out


async def cmd_index(args) -> int:
    sources = pdf_sources(args.sources, args.recursive, bool(args.title))
    async with Service(_settings(args, existing=False)) as service:
        report = await service.index(sources, titles=args.title or (), progress=ProgressBar())
    print_report(report, args.json)
    return exit_code(report)


SCOPE_HELP = (
    "the collection instead of the shared one, as `status` names it (slack:T1, slack:T1/C9, discord:G1/…): "
    "a chat's documents, for the operator"
)


async def cmd_reindex(args) -> int:
    async with Service(_settings(args)) as service:
        report = await service.reindex(args.scope, args.document, progress=ProgressBar())
    print_report(report, args.json)
    return exit_code(report)


async def cmd_remove(args) -> int:
    async with Service(_settings(args)) as service:
        doc = await service.remove(args.scope, args.document, progress=ProgressBar())
    print(json.dumps({"removed": doc.title, "id": doc.doc_id}) if args.json else printable(f"removed: {doc.title}"))
    return 0


async def cmd_migrate(args) -> int:
    from core import migrate_index, migrate_threads

    from .thread_files import sqlite_thread_files

    settings = _settings(args)
    report = await migrate_index(settings, args.to)
    print_report(report, args.json)
    files = sqlite_thread_files(settings)
    turns = await migrate_threads(files, args.to)
    print(
        f"thread memory: {turns} turns copied from {len(files)} file(s)", file=sys.stderr if args.json else sys.stdout
    )
    return exit_code(report)


async def cmd_repair(args) -> int:
    async with Service(_settings(args)) as service:
        name, moved = await service.repair()
    print(f"active snapshot: {name}" if name else "no intact snapshot was left: the index is empty now")
    for path, documents in moved:
        was = "; ".join(f"“{d.title}” ({d.file_name}) in {d.scope}" for d in documents) or "its title is unknown"
        print(printable(f"moved to be indexed again: {path} — {was}"))
    if moved:
        print(f"to index them again as they were: pixelrag index {moved[0][0].parent}")
    return 0


async def cmd_ask(args) -> int:
    images = tuple(read_image(p) for p in (args.image or []))
    async with Service(_settings(args)) as service:
        answer = await service.answer(Turn(args.question or "", images), retrieve_only=args.retrieve_only)
    answer = save_images(answer, Path(args.out))
    if args.json:
        print(json.dumps(answer.to_json(), indent=2, ensure_ascii=False))
    else:
        print_answer(answer)
    return 0


async def cmd_status(args) -> int:
    async with Service(_settings(args)) as service:
        # Every check, source PDFs hashed: status is also the index's health check.
        documents, problems = await service.verify()
        status = await service.status()
    if problems:
        status["problems"] = problems
    status.update(await usage_of_every_workspace(service.settings))
    status["documents_list"] = [
        {"title": d.title, "file": d.file_name, "pages": d.page_count, "scope": d.scope, "id": d.doc_id}
        for d in documents
    ]
    print(
        json.dumps(status, indent=2, ensure_ascii=False)
        if args.json
        else printable(
            "\n".join(f"{k}: {v}" for k, v in status.items() if k != "documents_list")
            + "".join(f"\n  - {d['title']} ({d['pages']} pages, {d['scope']})" for d in status["documents_list"])
        )
    )
    return 0


async def usage_of_every_workspace(settings: Settings) -> dict[str, str]:
    """Every workspace's usage, from the Slack and Discord bots' thread memories (or the database)."""
    from .discord.settings import threads_db
    from .slack.settings import SlackSettings

    paths = [SlackSettings.parse(settings).threads_db, threads_db(settings)]
    if settings.database_url:  # one database holds both bots' threads
        stores = [thread_memory(settings, paths[0])]
    else:  # each bot's SQLite file, where it has run
        stores = [thread_memory(settings, p) for p in paths if p.exists()]
    try:
        return await usage_summary(stores, None, None)
    except PixelragError as exc:  # the index's status stands without it
        return {"usage": f"unknown: {exc}"}
    finally:
        for store in stores:
            await store.close()


async def cmd_chat(args) -> int:
    from bot.console import run_console

    return await run_console(_settings(args), Path(args.out))


async def cmd_slack(args) -> int:
    from bot.slack import serve

    await serve(_settings(args, existing=False), http=args.http, port=args.port, health_port=args.health_port)
    return 0


async def cmd_discord(args) -> int:
    from bot.discord import serve

    await serve(_settings(args, existing=False), health_port=args.health_port)
    return 0


async def cmd_doctor(args) -> int:
    from .doctor import diagnose, report
    from .slack.manifest import MANIFEST

    text, code = report(await diagnose(_settings(args, existing=False), Path(args.manifest or MANIFEST)))
    print(text)
    return code


async def cmd_feedback(args) -> int:
    from .feedback_export import export, write

    records = await export(_settings(args, existing=False), args.rating)
    write(records, Path(args.out) if args.out else None)
    where = args.out or "standard output"
    print(f"{len(records)} answer(s) rated {args.rating} written to {where}", file=sys.stderr)
    return 0


def lab() -> None:
    """The evaluation harness is the repository's eval/, beside the tests: the lab, not installed with the
    product. `pixelrag eval` finds it in the checkout the command runs from."""
    root = Path(__file__).resolve().parents[1]
    if not (root / "eval" / "harness.py").is_file():
        raise BadInput("`pixelrag eval` runs from a checkout of the repository (its eval/ is not installed).")
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))


async def cmd_eval(args) -> int:
    lab()
    for given in (args.questions, args.corpus):
        if not Path(given).exists():
            raise BadInput(f"{given}: no such file or folder.")
    from eval.harness import evaluate
    from eval.questions import load_document_languages, load_questions
    from eval.report import markdown_report

    settings = _settings(args, existing=False)
    if args.compare_jev:
        settings = settings.with_(jev="rerank")
    if not args.index:
        settings = settings.with_(index_dir=Path("index") / f"eval-{settings.backend}")
    questions = load_questions(args.questions, args.key_facts)
    log = (lambda line: print(line, file=sys.stderr)) if args.verbose_questions else None
    variants = tuple(v.strip() for v in args.variants.split(",") if v.strip())
    report = await evaluate(
        questions,
        Path(args.corpus),
        settings,
        k=args.k,
        reader=not args.retrieve_only,
        variants=variants,
        out_dir=Path(args.out) if args.out else None,
        log=log,
        compare_jev=args.compare_jev,
        document_languages=load_document_languages(args.document_languages) if args.document_languages else None,
    )
    print(markdown_report(report))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
        print(f"\nper-question results: {args.json}")
    jev = report.get("jev")
    if jev and (jev["fallbacks"] or jev["errors"]):  # after the report is written: a comparison with gaps fails
        print(
            f"pixelrag: the Jev comparison had {jev['fallbacks']} fallback(s) and {jev['errors']} error(s)",
            file=sys.stderr,
        )
        return 1
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pixelrag", description="Answer questions about PDFs by reading their pages.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log details to stderr")
    sub = parser.add_subparsers(dest="command", required=True)

    def common(p):
        p.add_argument("--index", help="index directory (default: $PIXELRAG_INDEX_DIR or ./index)")
        p.add_argument("--backend", choices=["local", "gemini"], help="default: gemini when a key is set, else local")
        p.add_argument("--json", action="store_true", help="print machine-readable JSON")

    p = sub.add_parser("index", help="index PDF files, folders of them, or URLs")
    p.add_argument("sources", nargs="+", metavar="FILE_FOLDER_OR_URL")
    p.add_argument("--recursive", "-r", action="store_true", help="a folder's subfolders too")
    p.add_argument("--title", action="append", help="title for the PDF in the same position (repeatable)")
    common(p)
    p.set_defaults(run=cmd_index)

    p = sub.add_parser("reindex", help="fetch the shared collection's documents again; embed only changed pages")
    p.add_argument("document", nargs="?", help="title, file name or id (default: all)")
    p.add_argument("--scope", default=SHARED_SCOPE, help=SCOPE_HELP)
    common(p)
    p.set_defaults(run=cmd_reindex)

    p = sub.add_parser("remove", help="remove a document from the shared collection")
    p.add_argument("document", help="title, file name or id")
    p.add_argument("--scope", default=SHARED_SCOPE, help=SCOPE_HELP)
    common(p)
    p.set_defaults(run=cmd_remove)

    p = sub.add_parser("repair", help="make the newest intact snapshot active after damage; keep stray PDFs")
    common(p)
    p.set_defaults(run=cmd_repair)

    p = sub.add_parser("migrate", help="copy the index folder into a PostgreSQL database, nothing embedded again")
    p.add_argument("--to", required=True, metavar="postgresql://…", help="the database (as PIXELRAG_DATABASE_URL)")
    common(p)
    p.set_defaults(run=cmd_migrate)

    p = sub.add_parser("ask", help="ask a question (and/or give a screenshot)")
    p.add_argument("question", nargs="?", default="")
    p.add_argument("--image", action="append", help="screenshot to use as (part of) the query")
    p.add_argument("--retrieve-only", action="store_true", help="stop after retrieval")
    p.add_argument("--out", default="out", help="folder for preview and highlight images (default ./out)")
    common(p)
    jev_option(p)
    p.set_defaults(run=cmd_ask)

    p = sub.add_parser("status", help="what the index holds")
    common(p)
    p.set_defaults(run=cmd_status)

    p = sub.add_parser("chat", help="talk to the bot in the terminal (same service as Slack and Discord)")
    p.add_argument("--out", default="out/chat", help="folder for images")
    common(p)
    p.set_defaults(run=cmd_chat)

    p = sub.add_parser("slack", help="run the Slack bot (Socket Mode unless --http)")
    p.add_argument("--http", action="store_true", help="serve the Events API at /slack/events")
    p.add_argument("--port", type=int, default=3000, help="the Events API's port; it serves /healthz and /readyz too")
    health_option(p, "Socket Mode")
    common(p)
    jev_option(p)
    p.set_defaults(run=cmd_slack)

    p = sub.add_parser("discord", help="run the Discord bot")
    health_option(p, "the bot")
    common(p)
    jev_option(p)
    p.set_defaults(run=cmd_discord)

    p = sub.add_parser("doctor", help="check every configured service, token, scope and the index; exit 1 on a failure")
    p.add_argument("--manifest", help="the Slack app manifest the token's scopes must cover (default: manifest.yml)")
    p.add_argument("--index", help="index directory (default: $PIXELRAG_INDEX_DIR or ./index)")
    p.add_argument("--backend", choices=["local", "gemini"], help="default: gemini when a key is set, else local")
    p.set_defaults(run=cmd_doctor)

    p = sub.add_parser("feedback", help="export the answers people rated in chat as evaluation questions")
    p.add_argument("action", choices=["export"])
    p.add_argument("--rating", choices=["bad", "good"], default="bad", help="which ratings (default: bad)")
    p.add_argument("--out", help="JSONL file to write (default: standard output)")
    p.add_argument("--index", help="index directory (default: $PIXELRAG_INDEX_DIR or ./index)")
    p.set_defaults(run=cmd_feedback)

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
    p.set_defaults(run=cmd_eval)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.environment = load_settings(extra_prefixes=("SLACK_", "DISCORD_"))
        configure_logs(args.environment, args.verbose)
        return asyncio.run(args.run(args))
    except PixelragError as exc:
        print(printable(f"pixelrag: {exc}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
