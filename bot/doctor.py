"""`pixelrag doctor`: every service the settings name, tried once with the real client libraries, so that a
misconfigured install is found out in one run instead of one failure at a time.

Each check gives lines of (status, what, detail): "ok", "FAIL" or "skip" (not configured, so not tried).
Nothing is changed anywhere: the database is read, not migrated; Socket Mode is handed a connection
address that is never opened; Discord is logged in to over HTTP, never the gateway."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from core import PixelragError, Service, Settings
from core.backends import make_backend
from core.errors import first_line, plural

from .slack import manifest as slack_manifest

OK, FAIL, SKIP = "ok", "FAIL", "skip"
CHECK_TIMEOUT_S = 20.0  # one service that does not answer fails its line; the others still run


@dataclass(frozen=True)
class Finding:
    status: str
    what: str
    detail: str


Findings = list[Finding]


async def diagnose(settings: Settings, manifest: Path = slack_manifest.MANIFEST) -> Findings:
    checks: list[tuple[str, Callable[[], Awaitable[Findings]]]] = [
        ("index", lambda: index_check(settings)),
        ("slack", lambda: slack_checks(settings, manifest)),
        ("discord", lambda: discord_check(settings)),
        ("gemini", lambda: gemini_check(settings)),
        ("typesafe", lambda: typesafe_check(settings)),
    ]
    found: Findings = []
    for what, check in checks:
        try:
            found += await asyncio.wait_for(check(), CHECK_TIMEOUT_S)
        except TimeoutError:
            found.append(Finding(FAIL, what, f"no answer within {CHECK_TIMEOUT_S:.0f} s"))
        except PixelragError as exc:
            found.append(Finding(FAIL, what, str(exc)))
    return found


def report(findings: Findings) -> tuple[str, int]:
    """The lines to print, and the exit code: 0 only when nothing failed."""
    width = max((len(f.what) for f in findings), default=0)
    lines = [f"{f.status:<4}  {f.what:<{width}}  {f.detail}" for f in findings]
    failed = sum(f.status == FAIL for f in findings)
    lines.append(f"{failed} check(s) failed." if failed else "All checks passed.")
    return "\n".join(lines), 1 if failed else 0


# --- the index: a folder, or a PostgreSQL database ---------------------------------------------------
async def index_check(settings: Settings) -> Findings:
    if settings.database_url:
        return await database_check(settings, settings.database_url)
    if not settings.index_dir.exists():
        return [Finding(OK, "index", f"{settings.index_dir}: nothing indexed yet (`pixelrag index` creates it)")]
    service = Service(settings)
    try:
        if problem := await service.readiness():
            return [Finding(FAIL, "index", problem)]
        status = await service.status()
    finally:
        await service.close()
    return [
        Finding(
            OK,
            "index",
            f"{settings.index_dir}: {plural(status['documents'], 'document')}, {plural(status['pages'], 'page')}",
        ),
        *built_with_check(settings, status.get("built_with")),
    ]


def built_with_check(settings: Settings, built_with: dict | None) -> Findings:
    """Whether the configured backend can query what the index was built with."""
    if not built_with:
        return []
    try:
        make_backend(settings).check_index(built_with)
    except PixelragError as exc:
        return [Finding(FAIL, "index backend", str(exc))]
    return [Finding(OK, "index backend", f"built with {built_with.get('backend')} ({built_with.get('model')})")]


async def database_check(settings: Settings, url: str) -> Findings:
    try:
        import psycopg
    except ImportError:
        return [Finding(FAIL, "database", "psycopg is not installed: pip install 'pixelrag-docbot[postgres]'")]
    from core.postgres.database import MIGRATIONS

    try:
        conn = await psycopg.AsyncConnection.connect(url, connect_timeout=10, autocommit=True)
    except psycopg.OperationalError as exc:
        return [Finding(FAIL, "database", f"cannot reach PIXELRAG_DATABASE_URL ({first_line(exc)})")]
    async with conn:

        async def one(sql: str, *params):
            row = await (await conn.execute(sql, params or None)).fetchone()
            return row[0] if row else None

        found = [Finding(OK, "database", f"PostgreSQL {conn.info.server_version // 10000} reachable")]
        installed = await one("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
        available = await one("SELECT default_version FROM pg_available_extensions WHERE name = 'vector'")
        if installed:
            found.append(Finding(OK, "pgvector", f"version {installed}"))
        elif available:
            found.append(Finding(OK, "pgvector", f"version {available} available; created at the first start"))
        else:
            found.append(Finding(FAIL, "pgvector", "the server has no pgvector extension: install it there"))
        newest = len(MIGRATIONS)
        schema = (
            await one("SELECT max(version) FROM pixelrag_schema")
            if await one("SELECT to_regclass('pixelrag_schema')")
            else None
        )
        if schema is None:
            found.append(Finding(OK, "schema", f"empty database: schema {newest} is created at the first start"))
        elif schema > newest:
            found.append(Finding(FAIL, "schema", f"schema {schema} is newer than this pixelrag's {newest}: upgrade"))
        else:
            moved = "" if schema == newest else f"; migrated to {newest} at the next start"
            found.append(Finding(OK, "schema", f"schema {schema}{moved}"))
        if schema and await one("SELECT to_regclass('pixelrag_index')"):
            found += built_with_check(settings, await one("SELECT built_with FROM pixelrag_index WHERE pages > 0"))
        return found


# --- Slack ------------------------------------------------------------------------------------------
async def slack_checks(settings: Settings, manifest: Path) -> Findings:
    from slack_sdk.web.async_client import AsyncWebClient

    from .slack.settings import SlackSettings

    options = SlackSettings.parse(settings)
    if not (options.bot_token or options.app_token or options.signing_secret):
        return [Finding(SKIP, "slack", "SLACK_BOT_TOKEN is not set")]
    client = AsyncWebClient(base_url=options.api_url, timeout=int(settings.request_timeout_s))
    return [*await bot_token_check(client, options, manifest), await connection_check(client, options)]


async def bot_token_check(client, options, manifest: Path) -> Findings:
    from slack_sdk.errors import SlackApiError

    what = "slack bot token"
    if not options.bot_token.startswith("xoxb-"):
        return [Finding(FAIL, what, "SLACK_BOT_TOKEN must be the Bot User OAuth Token (xoxb-…)")]
    try:
        me = await client.auth_test(token=options.bot_token)
    except SlackApiError as exc:
        return [Finding(FAIL, what, f"Slack refused SLACK_BOT_TOKEN ({exc.response.get('error')})")]
    except Exception as exc:  # noqa: BLE001 - the network's many ways to fail are one line each
        return [Finding(FAIL, what, f"cannot reach Slack at {options.api_url} ({first_line(exc)})")]
    team = f"{me.get('team')} ({me.get('team_id')})"
    return [
        Finding(OK, what, f"workspace {team} as @{me.get('user')}"),
        scopes_check(me.headers.get("x-oauth-scopes"), manifest),
    ]


def scopes_check(granted_header: str | None, manifest: Path) -> Finding:
    try:
        wanted = slack_manifest.bot_scopes(slack_manifest.load(manifest))
    except PixelragError as exc:
        return Finding(FAIL, "slack scopes", str(exc))
    if granted_header is None:
        return Finding(FAIL, "slack scopes", "Slack did not say which scopes the token has (no x-oauth-scopes)")
    granted = {s.strip() for s in granted_header.split(",") if s.strip()}
    if missing := sorted(wanted - granted):
        return Finding(
            FAIL,
            "slack scopes",
            f"the token lacks {', '.join(missing)} (manifest.yml asks for them): add them under OAuth & "
            "Permissions → Bot Token Scopes and reinstall the app",
        )
    return Finding(OK, "slack scopes", f"all {len(wanted)} scopes manifest.yml asks for")


async def connection_check(client, options) -> Finding:
    """How Slack reaches the bot: Socket Mode (an app-level token) or the Events API (a signing secret)."""
    from slack_sdk.errors import SlackApiError

    if options.app_token:
        if not options.app_token.startswith("xapp-"):
            return Finding(FAIL, "slack app token", "SLACK_APP_TOKEN must be an app-level token (xapp-…)")
        try:
            await client.apps_connections_open(app_token=options.app_token)
        except SlackApiError as exc:
            error = exc.response.get("error")
            return Finding(
                FAIL, "slack app token", f"Slack refused SLACK_APP_TOKEN ({error}); it needs connections:write"
            )
        except Exception as exc:  # noqa: BLE001
            return Finding(FAIL, "slack app token", f"cannot reach Slack ({first_line(exc)})")
        return Finding(OK, "slack app token", "Socket Mode can connect")
    if options.signing_secret:
        return Finding(OK, "slack signing secret", "set: `pixelrag slack --http` checks it on every request")
    return Finding(
        FAIL, "slack connection", "set SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (pixelrag slack --http)"
    )


# --- Discord ----------------------------------------------------------------------------------------
async def discord_check(settings: Settings) -> Findings:
    import discord

    from .discord.settings import DiscordSettings

    options = DiscordSettings.parse(settings.extra)
    if not options.token:
        return [Finding(SKIP, "discord", "DISCORD_TOKEN is not set")]
    client = discord.Client(intents=discord.Intents.none())
    try:
        await client.login(options.token)
        app = await client.application_info()
    except discord.LoginFailure:
        return [Finding(FAIL, "discord token", "Discord refused DISCORD_TOKEN: copy the bot token again")]
    except discord.HTTPException as exc:
        return [Finding(FAIL, "discord token", f"Discord answered {exc.status} ({first_line(exc)})")]
    except Exception as exc:  # noqa: BLE001
        return [Finding(FAIL, "discord token", f"cannot reach Discord ({first_line(exc)})")]
    finally:
        await client.close()
    found = [Finding(OK, "discord token", f"application {app.name} ({app.id})")]
    intent_on = app.flags.gateway_message_content or app.flags.gateway_message_content_limited
    if options.message_content and not intent_on:
        found.append(
            Finding(
                FAIL,
                "discord intent",
                "the Message Content intent is off in the Developer Portal (Bot → Privileged Gateway Intents): "
                "turn it on, or set DISCORD_MESSAGE_CONTENT=0 to run on mentions and slash commands only",
            )
        )
    else:
        said = "on" if intent_on else "off, and DISCORD_MESSAGE_CONTENT=0 does without it"
        found.append(Finding(OK, "discord intent", f"Message Content {said}"))
    return found


# --- the model services -----------------------------------------------------------------------------
async def gemini_check(settings: Settings) -> Findings:
    if not settings.gemini_api_key:
        return [Finding(SKIP, "gemini", "no GEMINI_API_KEY: the local backend reads")]
    from google.genai import errors

    from core.backends.gemini.calls import GeminiCalls

    calls = GeminiCalls(settings)
    needs = {settings.embedding_model: "batchEmbedContents", settings.reader_model: "generateContent"}
    needs.setdefault(settings.context_model, "generateContent")
    found: Findings = []
    try:
        for model, method in needs.items():
            try:
                info = await calls.models.get(model=model)
            except errors.APIError as exc:
                found.append(Finding(FAIL, "gemini", f"{model}: {exc.code} {exc.message}"))
                continue
            except Exception as exc:  # noqa: BLE001
                found.append(Finding(FAIL, "gemini", f"cannot reach the Gemini API ({first_line(exc)})"))
                break
            if method not in (info.supported_actions or []):
                found.append(Finding(FAIL, "gemini", f"{model} does not offer {method}"))
            else:
                found.append(Finding(OK, "gemini", f"{model}: the key may use it ({method})"))
    finally:
        await calls.aclose()
    return found


async def typesafe_check(settings: Settings) -> Findings:
    if settings.jev != "rerank":
        return [Finding(SKIP, "typesafe", "Jev is off (PIXELRAG_JEV)")]
    if not settings.typesafe_api_key:
        return [Finding(FAIL, "typesafe", "PIXELRAG_JEV=rerank needs TYPESAFE_API_KEY")]
    from typesafe_sdk import AsyncTypeSafeClient

    async with AsyncTypeSafeClient(
        api_key=settings.typesafe_api_key, base_url=settings.typesafe_base_url, timeout=settings.jev_timeout_s
    ) as client:
        try:
            listing = await client.models.list()
        except Exception as exc:  # noqa: BLE001 - the SDK's errors, and the network's
            return [Finding(FAIL, "typesafe", f"TypeSafe refused or did not answer ({first_line(exc)})")]
    names = [m.name for m in listing.models]
    if settings.typesafe_model not in names:
        return [Finding(FAIL, "typesafe", f"{settings.typesafe_model} is not offered (offered: {', '.join(names)})")]
    return [Finding(OK, "typesafe", f"{settings.typesafe_model} offered to this key")]
