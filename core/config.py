"""Settings, read once from the environment (and an optional .env file) into one typed object."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from dotenv import dotenv_values

from .errors import BadInput

BACKENDS = ("local", "gemini")
URL_CHARACTERS = re.compile(r"[A-Za-z0-9._~:/%\[\]-]+")
LOG_FORMATS = ("plain", "json")
JEV_MODES = ("off", "rerank")  # PIXELRAG_JEV: the TypeSafe Jev page selector (core/jev/selector.py), opt-in only


@dataclass(frozen=True)
class Settings:
    index_dir: Path = Path("index")
    backend: str = "local"  # "local" or "gemini"
    gemini_api_key: str | None = None
    gemini_base_url: str | None = None  # loopback fakes in tests, proxies
    embedding_model: str = "gemini-embedding-2"
    embedding_dim: int = 3072
    reader_model: str = "gemini-3.5-flash"
    context_model: str = "gemini-3.5-flash-lite"
    render_dpi: int = 200
    jpeg_quality: int = 85
    max_pages: int = 1000
    max_pdf_bytes: int = 200_000_000
    max_image_bytes: int = 5_000_000
    allow_private_urls: bool = False  # let chat users index URLs on loopback/private networks
    top_k: int = 4
    embed_batch_pages: int = 6  # pages per batchEmbedContents request (keeps bodies < 4 MiB)
    embed_concurrency: int = 4
    request_timeout_s: float = 60.0
    answer_timeout_s: float = 90.0  # everything one question may take, retries included
    download_timeout_s: float = 300.0  # one PDF download from a URL, start to end
    retry_attempts: int = 5
    retry_initial_delay_s: float = 1.0
    ocr_dpi: int = 150
    index_workers: int = field(default_factory=lambda: os.cpu_count() or 1)  # processes drawing pages
    history_exchanges: int = 4
    history_chars: int = 12_000
    database_url: str | None = None  # PostgreSQL shared by several processes; None: files under index_dir
    jev: str = "off"  # "rerank": TypeSafe Jev picks top_k of 8 candidates (a key alone never turns it on)
    typesafe_api_key: str | None = None
    typesafe_base_url: str | None = None  # loopback fakes in tests, proxies
    typesafe_model: str = "jev-1.14.0"  # pinned: the jev-latest alias lags behind it
    jev_timeout_s: float = 15.0  # the selector's share of a question's budget, retries included
    log_format: str = "plain"  # "json": one JSON object per log line, for log collectors
    user_questions_per_hour: int = 0  # chat questions one person may ask an hour (0: no limit)
    workspace_questions_per_day: int = 0  # chat questions one workspace or server may ask a day (0: no limit)
    public_url: str | None = None  # where the page viewer is reached; None: citations carry no links
    link_secret: str | None = None  # signs the links; None: one generated once and kept by the store
    link_days: int = 90  # how long a link opens its page
    workers: int = 1  # indexing workers a chat process runs beside its bot (0: dedicated `pixelrag worker`s do it)
    job_lease_s: float = 60.0  # a killed worker's job is taken again after this (renewed every quarter of it)
    extra: dict[str, str] = field(default_factory=dict)  # adapters' own variables (see load_settings)

    def with_(self, **changes) -> Settings:
        return replace(self, **changes)


def load_settings(
    env: dict[str, str] | None = None, dotenv: Path | None = Path(".env"), extra_prefixes: tuple[str, ...] = ()
) -> Settings:
    """Settings from the environment and .env; variables starting with `extra_prefixes` (the chat
    adapters' SLACK_*, DISCORD_*) are passed through in `extra` for the adapters to read."""
    # .env as python-dotenv reads it (quotes, `export`, comments); real environment variables win.
    try:
        values = (
            {k: v for k, v in dotenv_values(dotenv).items() if v is not None} if dotenv and dotenv.is_file() else {}
        )
    except UnicodeDecodeError as exc:
        raise BadInput(f"{dotenv}: not UTF-8 text (byte {exc.start} cannot be read); save it as UTF-8.") from None
    values.update(os.environ if env is None else env)

    def num(name: str, default, lo, hi, cast=int):
        return number(values, name, default, lo, hi, cast)

    key = values.get("GOOGLE_API_KEY") or values.get("GEMINI_API_KEY") or None
    backend = (values.get("PIXELRAG_BACKEND") or ("gemini" if key else "local")).strip().lower()
    if backend not in BACKENDS:
        raise BadInput(f"PIXELRAG_BACKEND={values['PIXELRAG_BACKEND']!r} is not a backend; use local or gemini.")
    base = Settings()
    return Settings(
        index_dir=Path(values.get("PIXELRAG_INDEX_DIR") or base.index_dir),
        backend=backend,
        gemini_api_key=key,
        gemini_base_url=values.get("GOOGLE_GEMINI_BASE_URL") or None,
        embedding_model=values.get("PIXELRAG_EMBEDDING_MODEL") or base.embedding_model,
        embedding_dim=num("PIXELRAG_EMBEDDING_DIM", base.embedding_dim, 128, 3072),
        reader_model=values.get("PIXELRAG_READER_MODEL") or base.reader_model,
        context_model=values.get("PIXELRAG_CONTEXT_MODEL") or base.context_model,
        render_dpi=num("PIXELRAG_RENDER_DPI", base.render_dpi, 50, 600),
        jpeg_quality=num("PIXELRAG_JPEG_QUALITY", base.jpeg_quality, 30, 95),
        max_pages=num("PIXELRAG_MAX_PAGES", base.max_pages, 1, 100_000),
        embed_concurrency=num("PIXELRAG_EMBED_CONCURRENCY", base.embed_concurrency, 1, 64),
        request_timeout_s=num("PIXELRAG_REQUEST_TIMEOUT", base.request_timeout_s, 1, 3600, float),
        answer_timeout_s=num("PIXELRAG_ANSWER_TIMEOUT", base.answer_timeout_s, 5, 3600, float),
        download_timeout_s=num("PIXELRAG_DOWNLOAD_TIMEOUT", base.download_timeout_s, 5, 7200, float),
        retry_attempts=num("PIXELRAG_RETRY_ATTEMPTS", base.retry_attempts, 1, 20),
        index_workers=num("PIXELRAG_INDEX_WORKERS", base.index_workers, 1, 256),
        allow_private_urls=flag(values, "PIXELRAG_ALLOW_PRIVATE_URLS"),
        database_url=database_url(values.get("PIXELRAG_DATABASE_URL")),
        jev=jev_mode(values.get("PIXELRAG_JEV")),
        typesafe_api_key=(values.get("TYPESAFE_API_KEY") or "").strip() or None,
        typesafe_base_url=(values.get("TYPESAFE_BASE_URL") or "").strip() or None,
        typesafe_model=(values.get("TYPESAFE_MODEL") or "").strip() or base.typesafe_model,
        jev_timeout_s=num("PIXELRAG_JEV_TIMEOUT", base.jev_timeout_s, 0.1, 600, float),
        log_format=log_format(values.get("PIXELRAG_LOG_FORMAT")),
        user_questions_per_hour=num("PIXELRAG_USER_QUESTIONS_PER_HOUR", 0, 0, 1_000_000),
        workspace_questions_per_day=num("PIXELRAG_WORKSPACE_QUESTIONS_PER_DAY", 0, 0, 100_000_000),
        public_url=public_url(values.get("PIXELRAG_PUBLIC_URL")),
        link_secret=link_secret(values.get("PIXELRAG_LINK_SECRET")),
        link_days=num("PIXELRAG_LINK_DAYS", base.link_days, 1, 3650),
        workers=num("PIXELRAG_WORKERS", base.workers, 0, 1),
        job_lease_s=num("PIXELRAG_JOB_LEASE_S", base.job_lease_s, 2, 3600, float),
        extra={k: v for k, v in values.items() if extra_prefixes and k.startswith(extra_prefixes)},
    )


def database_url(raw: str | None) -> str | None:
    url = (raw or "").strip()
    if url and not url.startswith(("postgresql://", "postgres://")):
        raise BadInput("PIXELRAG_DATABASE_URL must be a PostgreSQL URL (postgresql://user:password@host/database).")
    return url or None


def public_url(raw: str | None) -> str | None:
    """The viewer's public base address: http(s), a host, perhaps a path; no query, fragment or password."""
    url = (raw or "").strip().rstrip("/")
    if not url:
        return None
    parts = urlsplit(url)
    if (
        not URL_CHARACTERS.fullmatch(url)  # links are built on it: nothing a chat's link syntax would read
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.query
        or parts.fragment
        or "@" in parts.netloc
    ):
        raise BadInput(
            f"PIXELRAG_PUBLIC_URL={raw!r} is not a base address; use one like https://pixelrag.example.com "
            "(http or https, a host and perhaps a path; no query, fragment or password)."
        )
    return url


def link_secret(raw: str | None) -> str | None:
    secret = (raw or "").strip()
    if secret and len(secret) < 32:
        raise BadInput(
            f"PIXELRAG_LINK_SECRET has {len(secret)} characters; use at least 32 random ones "
            "(python -c 'import secrets; print(secrets.token_urlsafe(32))'), or leave it unset for one "
            "kept with the index."
        )
    return secret or None


def log_format(raw: str | None) -> str:
    fmt = (raw or "").strip().lower() or "plain"
    if fmt not in LOG_FORMATS:
        raise BadInput(f"PIXELRAG_LOG_FORMAT={raw!r} is not a format; use json (or plain, the default).")
    return fmt


def jev_mode(raw: str | None) -> str:
    mode = (raw or "").strip().lower() or "off"
    if mode not in JEV_MODES:
        raise BadInput(f"PIXELRAG_JEV={raw!r} is not a mode; use rerank (or off, the default).")
    return mode


def number(values: Mapping[str, str], name: str, default, lo, hi, cast=int):
    """A numeric setting within [lo, hi]; unset or empty means `default`; anything else is BadInput."""
    raw = (values.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = cast(raw)
    except ValueError:
        kind = "a whole number" if cast is int else "a number"
        raise BadInput(
            f"{name}={raw!r} is not {kind}; use a value from {lo:g} to {hi:g} (default {default:g})."
        ) from None
    if not lo <= value <= hi:
        raise BadInput(f"{name}={raw} is out of range; use a value from {lo:g} to {hi:g} (default {default:g}).")
    return value


def flag(values: Mapping[str, str], name: str, default: bool = False) -> bool:
    """An on/off setting: 1/true/yes/on or 0/false/no/off; unset, empty or anything else means `default`."""
    raw = (values.get(name) or "").strip().lower()
    if raw in ("1", "true", "yes", "on"):
        return True
    if raw in ("0", "false", "no", "off"):
        return False
    return default
