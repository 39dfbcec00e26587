"""A snapshot's BM25 index is saved with it and read back when a process opens it, instead of being
built again from every page; a missing or damaged one is rebuilt, losing only time."""
from __future__ import annotations

import logging

import numpy as np
import pytest

from core import Service, Settings, Turn
from core.search import LexicalIndex
from tests.conftest import text_pdf

PAGES = ["Pump P9 datasheet. Maximum flow: 3.2 m3/h", "Weight: 2.6 kg without water. Power supply: 230 V",
         "Warranty: 3 years from the date of purchase."]


@pytest.fixture
async def indexed(tmp_path):
    settings = Settings(index_dir=tmp_path / "index")
    await Service(settings).index([str(text_pdf(tmp_path / "p9.pdf", PAGES))])
    return settings


def lexical_file(settings: Settings):
    service = Service(settings)
    return service.store.lexical_path(service.store.active_name())


async def test_a_new_process_reads_the_saved_index_instead_of_building_one(indexed, monkeypatch):
    assert lexical_file(indexed).is_file()
    built = Service(indexed).snapshot()[1]

    def no_building(self, texts, k1=1.2, b=0.75):
        raise AssertionError("BM25 was built again at open")

    monkeypatch.setattr(LexicalIndex, "__init__", no_building)
    service = Service(indexed)  # a new process: nothing cached
    snap, lexical = service.snapshot()
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
        LexicalIndex(["one page only"]).save(path)
    with caplog.at_level(logging.WARNING):
        answer = await Service(indexed).answer(Turn("weight without water"), retrieve_only=True)
    assert answer.hits[0].page == 2
    assert (damage == "missing") == ("rebuilding" not in caplog.text)  # damage is logged, age is not
