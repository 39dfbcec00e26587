"""The gemini backend through the whole service, against the loopback fake Gemini server."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from pathlib import Path

import numpy as np
import pytest

from core.config import Settings
from core.embedded.index_folder import IndexFolder
from core.errors import IndexProblem, RemoteError
from core.records import Turn
from core.service import Service
from tests.conftest import ROOT, corpus_pdf, text_pdf
from tests.fakes.gemini import API_KEY, EMBED, GENERATE, FakeGemini

TITLE = "HydroFlow HF-300 product brochure"


@pytest.fixture
async def fake():
    async with FakeGemini() as server:
        yield server


def gemini_settings(fake: FakeGemini, tmp_path: Path, **changes) -> Settings:
    return fake.settings(
        Settings(index_dir=tmp_path / "index"),
        embedding_dim=128,
        retry_initial_delay_s=0.01,
        request_timeout_s=2.0,
        **changes,
    )


def reader_reply(prompt_page: str, quote: str, box=None, extra=()):
    """A handler answering the reader call with a citation of the page labelled `prompt_page`."""

    def handler(body: dict) -> dict:
        text = json.dumps(body)
        if "standalone_question" in text:
            return {"standalone_question": "x", "needs_clarification": False, "clarifying_question": ""}
        refs = dict(re.findall(r"Page (P\d): ([^\"\\]+)", text))
        ref = next(r for r, label in refs.items() if label.strip().endswith(prompt_page))
        cites = [{"page_ref": ref, "quote": quote, **({"box_2d": box} if box else {})}, *extra]
        return {"answer": f"**{quote}**", "citations": cites, "limitations": [], "topic": "other"}

    return handler


async def test_index_then_ask_end_to_end(fake, brochure, tmp_path):
    service = Service(gemini_settings(fake, tmp_path))
    report = await service.index([str(brochure)])
    assert report.pages_embedded == 4 and fake.requests[EMBED] == 1 and fake.embed_sizes == [4]
    fake.handler = reader_reply(
        "page 3",
        "Mounting hole spacing 148 mm",
        box=[560, 230, 600, 520],
        extra=[{"page_ref": "P9", "quote": "invented"}, {"page_ref": "P1", "quote": "Figure 3: installation drawing"}],
    )
    answer = await service.answer(Turn("dimensions installation drawing in millimetres"))
    assert answer.backend == "gemini" and answer.hits[0].page == 3 and len(answer.hits) == 4
    assert fake.requests[GENERATE] == 1  # no history: no context call, one reader call
    reader_body = json.dumps(fake.generate_bodies()[-1])
    assert reader_body.count("image/jpeg") <= 4
    # the drawing's label is only pixels here (no OCR in this backend): the reader's box is approximate
    by_quote = {c.quote: c for c in answer.citations}
    drawing = by_quote["Mounting hole spacing 148 mm"]
    assert drawing.highlight.kind == "approximate"
    assert drawing.highlight.box == pytest.approx((0.23, 0.56, 0.52, 0.60))
    assert drawing.crop and drawing.preview
    caption = by_quote["Figure 3: installation drawing"]
    assert caption.highlight.kind == "exact" and caption.highlight.pdf_rect is not None
    assert "invented" not in by_quote and any("dropped" in n for n in answer.notes)


async def test_reindexing_unchanged_pages_makes_no_embedding_request(fake, brochure, tmp_path):
    service = Service(gemini_settings(fake, tmp_path))
    await service.index([str(brochure)])
    before = fake.requests[EMBED]
    report = await service.reindex("shared")
    assert fake.requests[EMBED] == before and report.pages_embedded == 0 and report.pages_reused == 4


async def test_a_changed_page_is_the_only_one_embedded_again(fake, tmp_path):
    service = Service(gemini_settings(fake, tmp_path))
    pages = [f"Section {i}: torque value {i * 10} Nm." for i in range(1, 6)]
    await service.index([str(text_pdf(tmp_path / "manual.pdf", pages))])
    pages[2] = "Section 3: torque value 99 Nm (revised)."
    text_pdf(tmp_path / "manual.pdf", pages)
    fake.embed_sizes.clear()
    report = await service.reindex("shared", "manual.pdf")
    assert report.pages_embedded == 1 and report.pages_reused == 4 and fake.embed_sizes == [1]
    assert len(await service.documents("shared")) == 1  # the new version replaced the old one


async def test_persistent_failure_leaves_the_previous_snapshot_active(fake, brochure, tmp_path):
    service = Service(gemini_settings(fake, tmp_path, retry_attempts=2))
    await service.index([str(brochure)])
    active = service.pages.store.active_name()
    fake.fail_always = 503
    with pytest.raises(RemoteError, match="503"):
        await service.index([str(text_pdf(tmp_path / "new.pdf", ["new document"]))])
    fake.fail_always = None
    assert service.pages.store.active_name() == active
    assert [d.file_name for d in await service.documents("shared")] == ["hf300-brochure.pdf"]


async def test_a_build_killed_midway_leaves_the_old_snapshot_active(tmp_path, brochure):
    async with FakeGemini(latency=0.3) as fake:
        settings = gemini_settings(fake, tmp_path)
        await Service(settings).index([str(brochure)])
        active = IndexFolder(settings.index_dir).active_name()
        question = Turn("technical specifications: rated power, supply voltage")
        hits_before = (await Service(settings).answer(question, retrieve_only=True)).hits
        big = text_pdf(tmp_path / "big.pdf", [f"Page {i} of a long manual." for i in range(40)])
        env = {
            **os.environ,
            "GEMINI_API_KEY": API_KEY,
            "GOOGLE_GEMINI_BASE_URL": fake.url,
            "PIXELRAG_EMBEDDING_DIM": "128",
            "PIXELRAG_EMBED_CONCURRENCY": "1",
            "PYTHONPATH": str(ROOT),
        }
        env.pop("GOOGLE_API_KEY", None)
        before = fake.requests[EMBED]
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "bot.cli",
            "index",
            str(big),
            "--index",
            str(settings.index_dir),
            env=env,
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        for _ in range(300):  # wait until the build is embedding, then kill it without warning
            if fake.requests[EMBED] >= before + 2:
                break
            await asyncio.sleep(0.05)
        assert fake.requests[EMBED] >= before + 2, "the build never started embedding"
        proc.send_signal(signal.SIGKILL)
        await proc.wait()
        store = IndexFolder(settings.index_dir)
        assert store.active_name() == active
        service = Service(settings)
        assert [d.file_name for d in await service.documents("shared")] == ["hf300-brochure.pdf"]
        assert (await service.answer(question, retrieve_only=True)).hits == hits_before
        fake.latency = 0
        report = await service.index([str(big)])  # the next build completes and cleans up the debris
        assert report.pages_total == 44
        assert not [p for p in (settings.index_dir / "snapshots").iterdir() if p.name.startswith(".tmp")]


async def test_querying_with_another_backend_is_refused(fake, tmp_path):
    local = Service(Settings(index_dir=tmp_path / "index", backend="local"))
    await local.index([str(text_pdf(tmp_path / "a.pdf", ["Hello relay."]))])
    with pytest.raises(IndexProblem, match="built with local .* configured backend is gemini"):
        await Service(gemini_settings(fake, tmp_path)).answer(Turn("relay"))
    with pytest.raises(IndexProblem, match="built with local"):
        await Service(gemini_settings(fake, tmp_path)).index([str(text_pdf(tmp_path / "b.pdf", ["b"]))])


async def test_opening_a_damaged_index_says_what_is_wrong(fake, brochure, tmp_path):
    settings = gemini_settings(fake, tmp_path)
    service = Service(settings)
    await service.index([str(brochure)])
    store = IndexFolder(settings.index_dir)
    snap = store.open()
    source = store.source_path(snap.documents[0].sha256)
    original = source.read_bytes()
    source.write_bytes(original + b"tampered")
    assert store.open().unsourced == {snap.documents[0].doc_id}  # the pages still serve; status says so
    source.write_bytes(original)
    image = store.page_image_path(snap.pages[1].content_hash)
    saved = image.read_bytes()
    image.unlink()
    with pytest.raises(IndexProblem, match="page image of .* p. 2 is missing"):
        store.open()
    image.write_bytes(saved)
    vectors = settings.index_dir / "snapshots" / snap.name / "vectors.npy"
    np.save(vectors, np.zeros((4, 32), np.float32))
    with pytest.raises(IndexProblem, match=r"expected \(\*, 128\)"):
        store.open()


async def test_gemini_citations_are_located_on_a_real_pdf(fake, tmp_path):
    datasheet = corpus_pdf("arduino-uno-r3-datasheet.pdf")
    service = Service(gemini_settings(fake, tmp_path))
    await service.index([str(datasheet)], titles=["UNO R3 datasheet"])
    fake.handler = reader_reply("page 2", "32KB Flash")
    answer = await service.answer(Turn("How much flash memory, SRAM and EEPROM does the ATmega328P have?"))
    assert answer.hits[0].page == 2
    cite = answer.citations[0]
    assert cite.highlight.kind == "exact"
    x0, y0, x1, y1 = cite.highlight.pdf_rect
    import pymupdf

    found = pymupdf.open(datasheet)[1].search_for("32KB Flash")[0]
    assert abs(x0 - found.x0) < 2 and abs(y0 - found.y0) < 2 and abs(x1 - found.x1) < 2


def screenshot(kind: str, seed: int = 0) -> bytes:
    """A busy screenshot: 'retina' is a 2880x1800 PNG of about 4 MB, 'webp' a lossless WebP."""
    import io

    from PIL import Image

    rng = np.random.default_rng(seed)
    width, height = (2880, 1800) if kind == "retina" else (800, 500)
    pixels = np.full((height, width, 3), 255, np.uint8)
    pixels[:500] = rng.integers(0, 255, (500, width, 3), dtype=np.uint8)
    buf = io.BytesIO()
    Image.fromarray(pixels).save(
        buf, "PNG" if kind == "retina" else "WEBP", **({"lossless": True} if kind == "webp" else {})
    )
    return buf.getvalue()


async def test_screenshots_the_api_would_refuse_are_normalised_first(fake, brochure, tmp_path):
    from core.records import QueryImage

    service = Service(gemini_settings(fake, tmp_path))
    await service.index([str(brochure)])
    retina = screenshot("retina")
    assert 3_000_000 < len(retina) < 5 * 1024 * 1024  # accepted from users, too big for one request as it is
    shots = [QueryImage(retina, "image/png", "retina.png"), QueryImage(screenshot("webp"), "image/webp", "s.webp")]
    shots += [QueryImage(screenshot("webp", i), "image/webp", f"extra{i}.webp") for i in range(1, 7)]
    answer = await service.answer(Turn("which pump is this?", tuple(shots)))
    assert not fake.refused  # before: 400 "Request payload size exceeds the limit", then WebP refused
    embed = [r.body for r in fake.bodies if r.endpoint == EMBED][-1]
    parts = embed["requests"][0]["content"]["parts"]
    mimes = [p["inline_data"]["mime_type"] for p in parts if "inline_data" in p]
    assert len(mimes) == 6 and set(mimes) <= {"image/png", "image/jpeg"}
    assert "Only the first 6 screenshots were used; left out: extra5.webp, extra6.webp." in answer.notes


async def test_an_index_embedded_with_the_old_page_format_is_refused(fake, brochure, tmp_path):
    service = Service(gemini_settings(fake, tmp_path))
    await service.index([str(brochure)])
    manifest = tmp_path / "index" / "snapshots" / service.pages.store.active_name() / "manifest.json"
    data = json.loads(manifest.read_text())
    del data["built_with"]["document_format"]  # what indexes built before the format was recorded hold
    manifest.write_text(json.dumps(data))
    with pytest.raises(IndexProblem, match="pages embedded as an older, unrecorded format.*build a new index"):
        await Service(gemini_settings(fake, tmp_path)).answer(Turn("rated power"), retrieve_only=True)
