"""`pixelrag migrate --to postgresql://…`: an embedded index copied into the database as it is (the
same vectors, words, page images and source PDFs, nothing embedded again), and the bots' SQLite
thread memory with it (turns, pending replies, ratings, workspace choices; delivery claims are
short-lived and stay).
Both can be run again: documents already in the database are replaced, turns already copied skipped."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Sequence
from pathlib import Path

from ..config import Settings
from ..embedded.index_folder import IndexFolder
from ..embedded.threads import EmbeddedThreads
from ..errors import BadInput
from ..indexing import build_key
from ..records import IndexReport
from .database import open_pool, unbounded
from .pages import PostgresPages


async def migrate_index(settings: Settings, url: str) -> IndexReport:
    store = IndexFolder(settings.index_dir)
    snap = await asyncio.to_thread(store.open)  # every check: a damaged index is not copied
    if snap is None:
        raise BadInput(f"{settings.index_dir} holds no index to migrate.")
    target = PostgresPages(url)
    try:
        keys = [build_key(d.scope, d.source) for d in snap.documents]
        async with target.building(keys, lambda holder: None, []) as build:
            if build.built_with not in (None, snap.built_with) and build.pages_total:
                raise BadInput(
                    f"The database holds an index built with {build.built_with}; this one was built "
                    f"with {snap.built_with}. Migrate into an empty database."
                )
            rows = snap.page_rows()
            by_doc: dict[str, list] = {}
            for page in snap.pages:
                by_doc.setdefault(page.doc_id, []).append(page)
            added = []
            for doc in snap.documents:
                await build.save_source(doc, store.source_path(doc.sha256).read_bytes())
                pages = by_doc.get(doc.doc_id, [])
                for page in pages:
                    await build.save_page_image(
                        page.content_hash, store.page_image_path(page.content_hash).read_bytes()
                    )
                added.append((doc, pages, [rows[p.content_hash] for p in pages]))
            name, total = await build.publish(snap.built_with, set(), added)
        return IndexReport(tuple(snap.documents), total, 0, len(snap.pages), name)
    finally:
        await target.close()


async def migrate_threads(paths: Sequence[Path], url: str) -> int:
    """Copy the turns and ratings of these SQLite thread stores, what workspaces chose (where chat indexing
    goes; a choice already in the database stays) and the HTTP API's keys; the number of turns copied."""
    pool = await open_pool(url)
    copied = 0
    try:
        for path in paths:
            await (await EmbeddedThreads(path).open()).close()  # its schema brought up to date first
            with sqlite3.connect(path) as db:
                turns = db.execute(
                    "SELECT id, platform, workspace, channel, thread, question, interpreted, answer, "
                    "cited, retrieved, pending_reply, created, scope, gap, vector FROM turns ORDER BY id"
                ).fetchall()
                ratings = db.execute("SELECT turn_id, user, rating, created FROM feedback").fetchall()
                choices = db.execute("SELECT platform, workspace, name, value FROM choices").fetchall()
                keys = db.execute("SELECT name, scope, digest, created, revoked FROM api_keys").fetchall()
            async with pool.connection() as conn:
                async with conn.transaction():
                    await unbounded(conn)
                    new_ids = {}
                    for t in turns:
                        row = await (
                            await conn.execute(
                                "INSERT INTO pixelrag_turns (platform, workspace, channel, thread, question,"
                                " interpreted, answer, cited, retrieved, pending_reply, created, scope, gap, vector)"
                                " SELECT %s, %s, %s, %s, %s, %s, %s, %s::jsonb, %s::jsonb, %s::jsonb, to_timestamp(%s),"
                                " %s, %s, %s WHERE NOT EXISTS (SELECT 1 FROM pixelrag_turns WHERE platform = %s AND"
                                " workspace = %s AND channel = %s AND thread = %s AND question = %s"
                                " AND created = to_timestamp(%s)) RETURNING id",
                                (*t[1:12], t[12], t[13], t[14], *t[1:6], t[11]),
                            )
                        ).fetchone()
                        if row:
                            new_ids[t[0]] = row[0]
                    for turn_id, user, rating, created in ratings:
                        if turn_id in new_ids:
                            await conn.execute(
                                'INSERT INTO pixelrag_feedback (turn_id, "user", rating, created)'
                                " VALUES (%s, %s, %s, to_timestamp(%s))",
                                (new_ids[turn_id], user, rating, created),
                            )
                    for choice in choices:
                        await conn.execute(
                            "INSERT INTO pixelrag_choices VALUES (%s, %s, %s, %s) ON CONFLICT DO NOTHING", choice
                        )
                    for key in keys:  # a name already in the database keeps its key there
                        await conn.execute(
                            "INSERT INTO pixelrag_api_keys VALUES (%s, %s, %s, %s, %s) ON CONFLICT DO NOTHING", key
                        )
            copied += len(new_ids)
    finally:
        await pool.close()
    return copied
