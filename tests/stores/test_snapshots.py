"""Opening a snapshot to serve costs little however large it is: its BM25 index is saved with it and
read back (a missing or damaged one is rebuilt, losing only time), and a page's words are read when
that page is needed. Builds and `pixelrag status` still open it with every check."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from core import Service, Settings, Turn
from core.ranking import bm25_file
from core.ranking.bm25 import LexicalIndex
from tests.conftest import text_pdf

PAGES = [
    "Pump P9 datasheet. Maximum flow: 3.2 m3/h",
    "Weight: 2.6 kg without water. Power supply: 230 V",
    "Warranty: 3 years from the date of purchase.",
]


@pytest.fixture
async def indexed(tmp_path):
    settings = Settings(index_dir=tmp_path / "index")
    await Service(settings).index([str(text_pdf(tmp_path / "p9.pdf", PAGES))])
    return settings


def lexical_file(settings: Settings):
    service = Service(settings)
    return service.pages.store.lexical_path(service.pages.store.active_name())


async def test_a_new_process_reads_the_saved_index_instead_of_building_one(indexed, monkeypatch):
    assert lexical_file(indexed).is_file()
    built = Service(indexed).pages.snapshot()[1]

    def no_building(self, texts, k1=1.2, b=0.75):
        raise AssertionError("BM25 was built again at open")

    monkeypatch.setattr(LexicalIndex, "__init__", no_building)
    service = Service(indexed)  # a new process: nothing cached
    snap, lexical = service.pages.snapshot()
    for query in ("power supply weight", "warranty years", "maximum flow"):
        assert np.array_equal(lexical.scores(query), built.scores(query))
        assert lexical.coverage(query) == built.coverage(query)
    answer = await service.answer(Turn("weight without water"), retrieve_only=True)
    assert answer.hits[0].page == 2


@pytest.mark.parametrize("damage", ["missing", "garbage", "another snapshot's"])
async def test_a_missing_or_damaged_saved_index_is_rebuilt(indexed, tmp_path, damage, caplog):
    path = lexical_file(indexed)
    if damage == "missing":
        path.unlink()
    elif damage == "garbage":
        path.write_bytes(b"PK\x03\x04 not really a zip")
    else:
        bm25_file.save(LexicalIndex(["one page only"]), path)
    with caplog.at_level(logging.WARNING):
        answer = await Service(indexed).answer(Turn("weight without water"), retrieve_only=True)
    assert answer.hits[0].page == 2
    assert (damage == "missing") == ("rebuilding" not in caplog.text)  # damage is logged, age is not


@pytest.mark.parametrize("written_before_offsets", [False, True])
async def test_a_served_snapshot_reads_a_pages_words_when_needed(indexed, written_before_offsets):
    service = Service(indexed)
    full = service.pages.store.open()
    if written_before_offsets:  # a snapshot from before the line offsets were saved: one scan finds them
        (service.pages.store.root / "snapshots" / full.name / "pages.offsets.npy").unlink()
    served = Service(indexed).pages.snapshot()[0]
    assert all(p.words == () for p in served.pages)
    assert [served.page(i) for i in range(len(PAGES))] == full.pages
    assert "2.6 kg" in served.page(1).text
    answer = await Service(indexed).answer(Turn("weight without water"))
    assert "2.6 kg" in answer.citations[0].quote and answer.citations[0].highlight.kind == "exact"


async def test_serving_does_not_hash_the_sources_but_status_does(indexed):
    service = Service(indexed)
    source = service.pages.store.source_path((await service.documents("shared"))[0].sha256)
    source.write_bytes(source.read_bytes() + b"tampered")
    answer = await Service(indexed).answer(Turn("weight without water"), retrieve_only=True)
    assert answer.hits[0].page == 2  # answering never reads the PDFs: the bot keeps serving
    # What `pixelrag status` checks: the copy is not the PDF indexed (not damage to the pages).
    documents, problems = await Service(indexed).verify()
    assert problems == [f"{documents[0].title}: its stored PDF is missing or damaged (index it again to store it anew)"]


def same_index(a: LexicalIndex, b: LexicalIndex) -> bool:
    return a.keys == b.keys and all(np.array_equal(x, y) and x.dtype == y.dtype for x, y in zip(a.arrays(), b.arrays()))


def test_an_extended_index_is_the_index_of_all_its_texts():
    texts = [
        f"Page {n}: valve V{n} opens at {n}.5 bar; {'spare' if n % 3 else 'seal'} kit SK-{n % 4}" for n in range(40)
    ]
    earlier = LexicalIndex(texts)
    for keep in ([], [0, 1, 2], list(range(0, 40, 3)), list(range(40))):
        new = ["Brand new page: pump X9 weighs 4 kg", texts[5]]
        assert same_index(earlier.extended(keep, new), LexicalIndex([texts[i] for i in keep] + new))


async def test_a_build_tokenizes_only_the_pages_it_adds(indexed, tmp_path, monkeypatch):
    from core.ranking import bm25

    tokenized = []
    real = bm25.page_terms
    monkeypatch.setattr(bm25, "page_terms", lambda text: tokenized.append(text) or real(text))
    service = Service(indexed)
    await service.index([str(text_pdf(tmp_path / "q.pdf", ["Q pump manual. Flow 12 l/min.", "Q pump seals."]))])
    assert len(tokenized) == 2  # the new document's pages; the first three are carried over
    snap, lexical = Service(indexed).pages.snapshot()
    assert same_index(lexical, LexicalIndex(bm25.lexical_texts(snap.documents, snap.with_words().pages)))
    await service.remove("shared", "p9.pdf")
    snap, lexical = Service(indexed).pages.snapshot()
    assert len(snap.pages) == 2 and same_index(
        lexical, LexicalIndex(bm25.lexical_texts(snap.documents, snap.with_words().pages))
    )
