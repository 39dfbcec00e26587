"""The `pixelrag` command: index, ask, status, chat (console), slack, discord, web, mcp, keys, doctor."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from dataclasses import asdict
from pathlib import Path

from core import (
    BadInput,
    IndexRequests,
    PixelragError,
    Service,
    Settings,
    Turn,
    load_settings,
    thread_memory,
    usage_summary,
)

from .cli_arguments import build_parser
from .cli_jobs import cmd_jobs, cmd_sources, cmd_worker, located, queue_index
from .cli_settings import settings_of as _settings
from .logs import configure as configure_logs
from .terminal import ProgressBar, exit_code, print_answer, print_report, printable, read_image, save_images


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
    if args.detach:
        return await queue_index(_settings(args, existing=False), sources, args.title or (), args.json)
    settings = _settings(args, existing=False)
    async with Service(settings) as service:
        # Queued as jobs and worked on here; any `pixelrag worker` running meanwhile helps.
        requests = IndexRequests(service, work_here=True, lease_s=settings.job_lease_s, ends_with_asker=True)
        report = await requests.index(located(sources), titles=args.title or (), progress=ProgressBar())
    print_report(report, args.json)
    return exit_code(report)


async def cmd_reindex(args) -> int:
    settings = _settings(args)
    async with Service(settings) as service:
        requests = IndexRequests(service, work_here=True, lease_s=settings.job_lease_s, ends_with_asker=True)
        report = await requests.reindex(args.scope, args.document, progress=ProgressBar())
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
    status.update(await indexing_queue(service.settings))
    status.update(await usage_of_every_workspace(service.settings))
    status["documents_list"] = [
        {"title": d.title, "file": d.file_name, "pages": d.page_count, "scope": d.scope, "id": d.doc_id}
        for d in documents
    ]
    print(
        json.dumps(status, indent=2, ensure_ascii=False)
        if args.json
        else printable(
            "\n".join(_status_line(k, v) for k, v in status.items() if k != "documents_list")
            + "".join(f"\n  - {d['title']} ({d['pages']} pages, {d['scope']})" for d in status["documents_list"])
        )
    )
    return 0


LISTED = ("jobs_running", "jobs_failed_lately", "workers", "sources")  # a line each


def _status_line(key: str, value) -> str:
    if key in LISTED:
        return f"{key}: {len(value)}" + "".join(f"\n  - {item}" for item in value)
    return f"{key}: {value}"


async def indexing_queue(settings: Settings) -> dict:
    """The jobs, workers and watched sources; nothing where no job was ever queued (status creates no file)."""
    from core import existing_job_queue, queue_status

    queue = existing_job_queue(settings)
    if queue is None:
        return {}
    try:
        return await queue_status(await queue.open())
    except PixelragError as exc:
        return {"jobs": f"unavailable: {exc}"}
    finally:
        await queue.close()


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


async def cmd_web(args) -> int:
    from bot.web.server import serve_web

    await serve_web(_settings(args), args.host, args.port, args.scope)
    return 0


async def cmd_mcp(args) -> int:
    """An MCP server for one local agent over stdio; it asks in the web chat's thread memory, as /mcp does."""
    from .web.mcp import serve_stdio
    from .web.server import web_threads

    settings = _settings(args)
    await serve_stdio(settings, web_threads(settings), args.scope)
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


async def cmd_gaps(args) -> int:
    """The coverage gaps of every bot's thread memory, the most asked first."""
    from core import gaps_csv

    from .gaps import gap_lines, gap_record, gaps_for

    if args.days <= 0:
        raise BadInput("--days must be more than 0.")
    async with Service(_settings(args, existing=False)) as service:
        gaps, titles = await gaps_for(service, args.scope, args.days)
    if args.csv:
        sys.stdout.write(gaps_csv(gaps, titles))
    elif args.json:
        print(json.dumps([gap_record(g, titles) for g in gaps], indent=2, ensure_ascii=False))
    elif not gaps:
        print(f"No unanswered questions in the last {args.days:g} days{f' in {args.scope}' if args.scope else ''}.")
    else:
        print(f"{len(gaps)} thing(s) the documents did not answer in the last {args.days:g} days:")
        for gap in gaps:
            print("\n".join(gap_lines(gap, titles)))
    return 0


async def cmd_keys(args) -> int:
    """Keys of the HTTP API, kept (hashed) with the web chat's thread memory, where `pixelrag web` reads them."""
    from core import add_key, revoke_key

    from .web.server import web_threads

    if args.action in ("add", "revoke") and not args.name:
        raise BadInput(f"pixelrag keys {args.action} NAME: give the key's name.")
    threads = await web_threads(_settings(args, existing=args.action != "add")).open()
    try:
        if args.action == "add":
            key = await add_key(threads, args.name, args.scope)
            print(f"API key {args.name} for {args.scope} (shown once; keep it secret):\n{key}")
        elif args.action == "revoke":
            await revoke_key(threads, args.name)
            print(f"API key {args.name} revoked.")
        else:
            keys = await threads.api_keys()
            if args.json:
                print(json.dumps([asdict(k) for k in keys], indent=2))
            for k in [] if args.json else keys:
                state = f"revoked {_day(k.revoked)}" if k.revoked else "active"
                print(f"{k.name}\t{k.scope}\tcreated {_day(k.created)}\t{state}")
            if not keys and not args.json:
                print("No API keys yet: pixelrag keys add NAME [--scope …].")
    finally:
        await threads.close()
    return 0


def _day(at: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at))


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


COMMANDS = {  # the subcommands bot/cli_arguments.py defines
    "index": cmd_index,
    "reindex": cmd_reindex,
    "remove": cmd_remove,
    "repair": cmd_repair,
    "migrate": cmd_migrate,
    "ask": cmd_ask,
    "status": cmd_status,
    "chat": cmd_chat,
    "slack": cmd_slack,
    "discord": cmd_discord,
    "web": cmd_web,
    "worker": cmd_worker,
    "sources": cmd_sources,
    "jobs": cmd_jobs,
    "mcp": cmd_mcp,
    "doctor": cmd_doctor,
    "feedback": cmd_feedback,
    "gaps": cmd_gaps,
    "keys": cmd_keys,
    "eval": cmd_eval,
}


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        args.environment = load_settings(extra_prefixes=("SLACK_", "DISCORD_"))
        configure_logs(args.environment, args.verbose)
        return asyncio.run(COMMANDS[args.command](args))
    except PixelragError as exc:
        print(printable(f"pixelrag: {exc}"), file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
