"""The core's half of `pixelrag doctor`: the index (or its database), the backend it was built with, the
Gemini models and the TypeSafe model the settings name, each tried once with the real client library.
Nothing is changed: the database is read, not migrated. The adapters add their platforms' checks."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from .backends import make_backend
from .config import Settings
from .errors import PixelragError, first_line, plural
from .postgres.database import MIGRATIONS

OK, FAIL, SKIP = "ok", "FAIL", "skip"
CHECK_TIMEOUT_S = 20.0  # one service that does not answer fails its line; the others still run


@dataclass(frozen=True)
class Finding:
    status: str  # OK, FAIL or SKIP (not configured, so not tried)
    what: str
    detail: str


Findings = list[Finding]
Check = Callable[[], Awaitable[Findings]]


async def run_checks(checks: list[tuple[str, Check]]) -> Findings:
    """Each check in turn, each within CHECK_TIMEOUT_S; a check that raises fails its own line only."""
    found: Findings = []
    for what, check in checks:
        try:
            found += await asyncio.wait_for(check(), CHECK_TIMEOUT_S)
        except TimeoutError:
            found.append(Finding(FAIL, what, f"no answer within {CHECK_TIMEOUT_S:.0f} s"))
        except PixelragError as exc:
            found.append(Finding(FAIL, what, str(exc)))
    return found


async def index_findings(settings: Settings, readiness: Callable[[], Awaitable[str | None]], status) -> Findings:
    """The index folder (through the service's readiness and status), or the database."""
    if settings.database_url:
        return await database_findings(settings, settings.database_url)
    if not settings.index_dir.exists():
        return [Finding(OK, "index", f"{settings.index_dir}: nothing indexed yet (`pixelrag index` creates it)")]
    if problem := await readiness():
        return [Finding(FAIL, "index", problem)]
    found = await status()
    holds = f"{plural(found['documents'], 'document')}, {plural(found['pages'], 'page')}"
    return [
        Finding(OK, "index", f"{settings.index_dir}: {holds}"),
        *built_with_findings(settings, found.get("built_with")),
    ]


def built_with_findings(settings: Settings, built_with: dict | None) -> Findings:
    """Whether the configured backend can query what the index was built with."""
    if not built_with:
        return []
    try:
        make_backend(settings).check_index(built_with)
    except PixelragError as exc:
        return [Finding(FAIL, "index backend", str(exc))]
    return [Finding(OK, "index backend", f"built with {built_with.get('backend')} ({built_with.get('model')})")]


async def database_findings(settings: Settings, url: str) -> Findings:
    try:
        import psycopg
    except ImportError:
        return [Finding(FAIL, "database", "psycopg is not installed: pip install 'pixelrag-docbot[postgres]'")]
    try:
        conn = await psycopg.AsyncConnection.connect(url, connect_timeout=10, autocommit=True)
    except (psycopg.OperationalError, psycopg.ProgrammingError) as exc:
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
            found += built_with_findings(settings, await one("SELECT built_with FROM pixelrag_index WHERE pages > 0"))
        return found


async def gemini_findings(settings: Settings) -> Findings:
    if not settings.gemini_api_key:
        return [Finding(SKIP, "gemini", "no GEMINI_API_KEY: the local backend reads")]
    from google.genai import errors

    from .backends.gemini.calls import GeminiCalls

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


async def typesafe_findings(settings: Settings) -> Findings:
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
