"""The embedded local backend end to end: index the generated brochure, ask about pixel-only values."""

from __future__ import annotations

import io
import shutil

import pytest
from PIL import Image

from core.config import Settings
from core.errors import BadInput
from core.records import Exchange, QueryImage, Turn
from core.service import Service
from tests.conftest import text_pdf


@pytest.fixture
def service(tmp_path, brochure_index) -> Service:
    index_dir = tmp_path / "index"
    shutil.copytree(brochure_index, index_dir)
    return Service(Settings(index_dir=index_dir, backend="local"))


def quotes(answer) -> str:
    return " | ".join(c.quote for c in answer.citations)


async def test_value_only_in_a_drawing_is_found_quoted_and_highlighted(service, tmp_path):
    answer = await service.answer(Turn("What is the mounting hole spacing of the HydroFlow HF-300?"))
    assert answer.hits[0].page == 3
    assert "148 mm" in answer.citations[0].quote
    first = answer.citations[0]
    assert first.page == 3 and first.highlight and first.highlight.kind == "exact"
    # the drawing's labels exist only as pixels: the highlight box must lie inside the raster image
    x0, y0, x1, y1 = first.highlight.box
    assert 0.08 < x0 < x1 < 0.95 and 0.12 < y0 < y1 < 0.65
    assert first.preview and first.crop
    crop = Image.open(io.BytesIO(first.crop))
    assert crop.width < Image.open(io.BytesIO(first.preview)).width * 2  # a crop, not the page
    assert "quote" in answer.markdown.lower()  # the local backend says it quotes


async def test_scanned_page_without_text_layer_is_read_by_ocr(service, tmp_path):
    answer = await service.answer(Turn("How long is the warranty on the pump?"))
    assert answer.hits[0].page == 4
    assert "36 months" in quotes(answer)
    assert answer.topic == "warranty"


async def test_spec_table_row_is_quoted_with_its_value(service, tmp_path):
    answer = await service.answer(Turn("What is the maximum system pressure?"))
    assert answer.hits[0].page == 2
    assert "10 bar" in answer.citations[0].quote


async def test_missing_price_is_a_limitation_not_a_guess(service, tmp_path):
    answer = await service.answer(Turn("What is the price of the HF-300 pump?"))
    assert any("price" in text.lower() for text in answer.limitations)


async def test_screenshot_query_is_read_with_ocr(service, brochure, tmp_path):
    import pymupdf

    page = pymupdf.open(brochure)[3]
    png = page.get_pixmap(dpi=100, clip=pymupdf.Rect(40, 240, 560, 330)).tobytes("png")
    answer = await service.answer(Turn("", images=(QueryImage(png, "image/png", "shot.png"),)))
    assert answer.hits[0].page == 4


async def test_a_screenshot_finds_the_page_it_was_cut_from_where_its_words_fit_others_as_well(tmp_path):
    # Three pages with the same caption and labels, each with another photo-like picture: the words
    # cannot tell them apart, the pixels can (core/answering/page_match.py).
    import numpy as np
    import pymupdf
    from PIL import ImageDraw

    doc = pymupdf.open()
    for seed in (1, 2, 3):
        rng = np.random.default_rng(seed)
        picture = Image.new("RGB", (600, 400), "white")
        draw = ImageDraw.Draw(picture)
        for _ in range(40):
            x, y, w, h = (int(v) for v in rng.integers(0, 540, 4) % [540, 340, 60, 60])
            draw.rectangle(
                (x, y, x + w + 10, y + h + 10),
                outline="black",
                width=3,
                fill=tuple(int(c) for c in rng.integers(0, 255, 3)),
            )
        out = io.BytesIO()
        picture.save(out, "PNG")
        page = doc.new_page()
        page.insert_text((50, 60), "ACME R200 relay board: jumper caps J1 J2 J3 (top view)", fontsize=11)
        page.insert_image(pymupdf.Rect(50, 100, 530, 420), stream=out.getvalue())
    pdf = tmp_path / "r200-photos.pdf"
    doc.save(pdf)
    service = Service(Settings(index_dir=tmp_path / "index", backend="local"))
    await service.index([str(pdf)])
    shot = pymupdf.open(pdf)[2].get_pixmap(dpi=120, clip=pymupdf.Rect(150, 180, 450, 380)).tobytes("png")
    answer = await service.answer(
        Turn("What are these jumpers for?", images=(QueryImage(shot, "image/png", "shot.png"),))
    )
    assert answer.hits[0].page == 3


async def test_follow_up_carries_the_subject_and_reads_fresh_pages(service, tmp_path):
    first = await service.answer(Turn("What is the maximum head of the HydroFlow HF-300?"))
    history = (Exchange(first.question, first.markdown, first.interpreted_question),)
    second = await service.answer(Turn("And its weight?", history=history))
    assert "HydroFlow HF-300" in second.interpreted_question and second.changed_question
    assert "2.6 kg" in quotes(second)


async def test_dangling_reference_gets_a_clarifying_question(service):
    answer = await service.answer(Turn("And what is its width?"))
    assert answer.clarifying_question and not answer.hits


async def test_retrieve_only_returns_four_unique_pages_with_scores(service):
    answer = await service.answer(Turn("pump dimensions"), retrieve_only=True)
    keys = [(h.doc_id, h.page) for h in answer.hits]
    assert len(keys) == 4 == len(set(keys))
    assert all(h.score > 0 for h in answer.hits) and not answer.citations
    assert {"embed_query", "search"} <= set(answer.timings)


async def test_empty_question_and_oversized_screenshot_are_refused(service):
    with pytest.raises(BadInput, match="Ask a question"):
        await service.answer(Turn("   "))
    big = QueryImage(b"\x89PNG" + b"0" * (5 * 1024 * 1024 + 1), "image/png", "huge.png")
    with pytest.raises(BadInput, match="over the 5 MB limit"):
        await service.answer(Turn("x", images=(big,)))


async def test_reindexing_unchanged_pages_embeds_and_ocrs_nothing(service, brochure, monkeypatch):
    def no_ocr(*args, **kwargs):
        raise AssertionError("OCR ran on an unchanged page")

    monkeypatch.setattr(service.backend.ocr, "page_words", no_ocr)
    report = await service.reindex("shared")
    assert report.pages_embedded == 0 and report.pages_reused == 4
    answer = await service.answer(Turn("mounting hole spacing"), retrieve_only=True)
    assert answer.hits[0].page == 3  # OCR words were carried over


async def test_tenants_see_only_their_documents_and_the_shared_ones(service, tmp_path):
    secret = text_pdf(tmp_path / "t1-secret.pdf", ["Project Zephyr flux capacitor rating is 1.21 gigawatts."])
    await service.index_bytes(secret.read_bytes(), secret.name, scope="slack:T1")  # as a chat attaches it
    own = await service.answer(Turn("flux capacitor rating", scope="slack:T1"))
    assert own.hits[0].title == "t1-secret.pdf" and "1.21" in quotes(own)
    other = await service.answer(Turn("flux capacitor rating", scope="slack:T2"))
    assert all(h.title != "t1-secret.pdf" for h in other.hits)
    assert "1.21" not in quotes(other) + other.markdown
    assert [d.file_name for d in await service.documents("slack:T2")] == ["hf300-brochure.pdf"]
    with pytest.raises(BadInput, match="only the operator"):
        await service.remove("slack:T1", "hf300-brochure.pdf")
    await service.remove("slack:T1", "t1-secret.pdf")
    assert [d.file_name for d in await service.documents("slack:T1")] == ["hf300-brochure.pdf"]


async def test_the_same_pdf_in_two_workspaces_is_two_documents_sharing_vectors(service, brochure, tmp_path):
    report = await service.index_bytes(brochure.read_bytes(), brochure.name, scope="slack:T9")  # as a chat attaches it
    assert report.pages_embedded == 0 and report.pages_reused == 4  # the shared copy's pages are reused
    mine = [d for d in await service.documents("slack:T9") if d.scope == "slack:T9"][0]
    shared = [d for d in await service.documents("slack:T9") if d.scope == "shared"][0]
    assert mine.doc_id != shared.doc_id and mine.sha256 == shared.sha256
    assert service.pages.store.open() is not None  # the index still passes its checks
    assert [d.scope for d in await service.documents("slack:T8")] == ["shared"]
    await service.remove("slack:T9", mine.doc_id)
    answer = await service.answer(Turn("mounting hole spacing", scope="slack:T9"), retrieve_only=True)
    assert answer.hits[0].doc_id == shared.doc_id


async def test_words_no_visible_document_contains_are_named(service, tmp_path):
    answer = await service.answer(Turn("Does the HF-300 support Bluetooth pairing?"))
    assert any("“bluetooth”" in text and "“pairing”" in text for text in answer.limitations)
    weight = await service.answer(Turn("How much does the HF-300 weigh?"))
    assert not any("weigh" in text for text in weight.limitations)  # "Weight" is on page 2 ...
    assert "Weight **2.6 kg**" in weight.markdown  # ... and quoted: "weigh" is "weight" less a letter
    secret = text_pdf(tmp_path / "zephyr.pdf", ["Zephyr pairing uses Bluetooth 5.0."])
    await service.index_bytes(secret.read_bytes(), secret.name, scope="slack:T1")  # as a chat attaches it
    other = await service.answer(Turn("Does the HF-300 support Bluetooth pairing?", scope="slack:T2"))
    assert any("“bluetooth”" in text for text in other.limitations)  # T1's words do not show through
    own = await service.answer(Turn("Does the HF-300 support Bluetooth pairing?", scope="slack:T1"))
    assert not any("bluetooth" in text for text in own.limitations)


async def test_the_index_is_opened_off_the_event_loop_and_ready_after_indexing(service, tmp_path, monkeypatch):
    # Opening verifies the snapshot and reads its arrays: on the loop it would stall a bot.
    import threading

    on_loop_thread = []
    real_open = service.pages.store.open

    def spy(*args, **kwargs):
        on_loop_thread.append(threading.current_thread() is threading.main_thread())
        return real_open(*args, **kwargs)

    monkeypatch.setattr(service.pages.store, "open", spy)
    await service.answer(Turn("mounting hole spacing"), retrieve_only=True)
    assert on_loop_thread == [False]
    await service.index([str(text_pdf(tmp_path / "note.pdf", ["Service interval: every 2,000 hours."]))])
    opened = len(on_loop_thread)
    answer = await service.answer(Turn("What is the service interval?"), retrieve_only=True)
    assert answer.hits[0].title == "note.pdf"
    assert len(on_loop_thread) == opened and not any(on_loop_thread)  # loaded when it was published


async def test_a_damaged_page_image_costs_its_citation_its_images_not_the_answer(service, monkeypatch):
    # Pages 2 and 1 are cited; the stored image of page 2 cannot be decoded. Its citations stay, without
    # images and with a note; page 1's citation is drawn as usual.
    from core.answering import pipeline as answering
    from core.records import ReaderPage

    real = answering.Answerer._check_citations

    def damage_page_two(self, drafts, attached):
        return real(
            self, drafts, [ReaderPage(rp.hit, rp.page, b"not a jpeg") if rp.hit.page == 2 else rp for rp in attached]
        )

    monkeypatch.setattr(answering.Answerer, "_check_citations", damage_page_two)
    answer = await service.answer(Turn("Which voltage does the HydroFlow HF-300 need?"))
    assert {c.page for c in answer.citations} == {1, 2}, answer.citations
    for c in answer.citations:
        assert (c.preview is None and c.crop is None) if c.page == 2 else (c.preview and c.crop)
    damaged = [note for note in answer.notes if "could not be drawn" in note]
    assert len(damaged) == sum(c.page == 2 for c in answer.citations) and all("p. 2" in n for n in damaged), (
        answer.notes
    )


async def test_a_step_is_embedded_while_the_one_before_still_is(service, tmp_path, monkeypatch):
    # A step's embedding waits on remote calls; the next step must not wait for it to finish, or the drawing
    # stalls behind every slow call. The first step's embedding holds until the second one has begun.
    import asyncio

    embedder = service.backend.embedder
    real, second_began, calls = embedder.embed_pages, asyncio.Event(), []

    async def held(pages, done):
        calls.append(len(pages))
        if len(calls) == 1:
            await asyncio.wait_for(second_began.wait(), timeout=30)  # one step at a time would time out here
        else:
            second_began.set()
        return await real(pages, done)

    monkeypatch.setattr(embedder, "embed_pages", held)
    pdf = text_pdf(tmp_path / "long.pdf", [f"Section {n}: the X{n} valve opens at {n} bar." for n in range(1, 21)])
    report = await service.index([str(pdf)])
    assert len(calls) >= 3 and sum(calls) == 20 and report.pages_embedded == 20
    answer = await service.answer(Turn("At what pressure does the X17 valve open?"), retrieve_only=True)
    assert answer.hits[0].title == "long.pdf" and answer.hits[0].page == 17  # every step's vectors in place


class Clock:
    """time.monotonic advancing one second per reading."""

    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


async def test_indexing_progress_carries_the_pace_and_time_left(service, tmp_path, monkeypatch):
    monkeypatch.setattr("core.indexing.document.time.monotonic", Clock())
    records = []
    pdf = text_pdf(tmp_path / "long.pdf", [f"Section {n}: the X{n} valve opens at {n} bar." for n in range(1, 21)])
    await service.index([str(pdf)], progress=records.append)
    embed = [p for p in records if p.stage == "embed"]
    paced = [p for p in embed if p.per_second]
    assert paced and embed[-1].done == 20 and embed[-1].seconds_left is None  # nothing left at the end
    for p in paced:
        if p.done < p.total:
            assert p.seconds_left == pytest.approx((p.total - p.done) / p.per_second)
    assert all(p.per_second == 0.0 for p in records if p.stage != "embed")


def test_the_terminal_slack_and_discord_show_the_same_pace():
    import io as text_io

    from bot.discord.progress import describe_progress
    from bot.progress import duration, pace
    from bot.slack.render import progress_text
    from bot.terminal import ProgressBar
    from core.records import Progress

    p = Progress("embed", 10, 250, "Manual", 1.6, 150.0)
    assert pace(p) == ", 1.6 pages/s, about 2 min left"
    assert [duration(s) for s in (0.2, 42, 3900)] == ["1 s", "42 s", "1 h 5 min"]
    assert pace(Progress("embed", 1, 250, "Manual")) == ""  # too early to tell

    class Terminal(text_io.StringIO):
        def isatty(self) -> bool:
            return True

    stream = Terminal()
    ProgressBar(stream)(p)
    for shown in (progress_text("Manual", p), describe_progress(p), stream.getvalue()):
        assert "1.6 pages/s, about 2 min left" in shown
