"""The local extractive reader on generated pages: what it quotes and what it admits."""
from __future__ import annotations

import pymupdf
import pytest

from core.documents import text_words
from core.backends.local.embedder import LocalEmbedder
from core.backends.local.reader import ExtractiveReader, runs_on
from core.records import Hit, Page, ReaderPage, Word


def pages_of(tmp_path, bodies: list[str]) -> list[ReaderPage]:
    doc = pymupdf.open()
    for body in bodies:
        page = doc.new_page()
        page.insert_text((50, 40), "ACME R200 relay — datasheet rev 3", fontsize=9)  # running header
        page.insert_textbox(pymupdf.Rect(50, 80, 550, 700), body, fontsize=11)
        page.insert_text((50, 800), f"ACME Corp. page {page.number + 1} of {len(bodies)}", fontsize=9)
    out = []
    for i, page in enumerate(doc):
        record = Page("d1", i + 1, f"h{i}", page.rect.width, page.rect.height, tuple(text_words(page)))
        out.append(ReaderPage(Hit("d1", "R200 datasheet", i + 1, 1.0 - i / 10, ""), record, b""))
    return out


@pytest.fixture(scope="module")
def reader() -> ExtractiveReader:
    return ExtractiveReader(LocalEmbedder().similarities)


async def test_quotes_the_answering_lines_not_headers(reader, tmp_path):
    pages = pages_of(tmp_path, [
        "General description\nThe R200 is a compact power relay for industrial controls.\n",
        "Contact data\nMaximum switching current: 16 A\nMaximum switching voltage: 400 V AC\n"
        "Mechanical endurance: 10 million operations\n",
    ])
    draft = await reader.read("What is the maximum switching current of the R200?", pages, ())
    assert "16 A" in draft.citations[0].quote and draft.citations[0].page == 2
    assert all("page" not in c.quote.lower() and "rev 3" not in c.quote for c in draft.citations)
    assert "quote" in draft.markdown.lower()
    assert not draft.limitations


async def test_an_answer_below_its_label_is_quoted_with_it(reader, tmp_path):
    pages = pages_of(tmp_path, ["Warranty period:\n36 months from delivery\n\nStorage temperature:\n-40 to 85 C\n"])
    draft = await reader.read("How long is the warranty period?", pages, ())
    assert "36 months" in draft.citations[0].quote


async def test_a_missing_price_is_a_limitation(reader, tmp_path):
    pages = pages_of(tmp_path, ["Coil voltage 24 V DC\nCoil power 0.9 W\n"])
    draft = await reader.read("What is the price of the R200 relay?", pages, ())
    assert any("No price is stated" in text for text in draft.limitations)
    weight = await reader.read("How much does the R200 weigh?", pages, ())
    assert not any("price" in text.lower() for text in weight.limitations)


async def test_a_quote_that_stops_mid_sentence_runs_on_to_its_end(reader, tmp_path):
    pages = pages_of(tmp_path, [
        "Status LED\n"
        "If the red status LED blinks twice after power-up, this means that the\n"
        "relay coil is open or not connected. Switch off and check the coil wiring.\n"
        "Mounting\n"
        "Mount the relay on a 35 mm DIN rail and keep 5 mm between neighbouring units.\n",
        "Ordering codes\nR200-24 for 24 V coils, R200-230 for 230 V coils.\n",
    ])
    draft = await reader.read("What does it mean when the red status LED blinks twice?", pages, ())
    quote = draft.citations[0].quote
    assert quote.startswith("If the red status LED blinks twice")
    assert quote.endswith("check the coil wiring.")  # the sentence's second half, and no further
    assert "DIN rail" not in quote



def test_only_prose_runs_on_to_the_next_line():
    def line(text: str) -> tuple[Word, ...]:
        return tuple(Word(w, (0, 0, 0, 0), 0) for w in text.split())

    assert not runs_on(line("Mounting hole spacing 148 mm"))  # a label
    assert runs_on(line("Wenn die Blinker leuchten, bedeutet das, dass der"))
    assert runs_on(line("the motherboard needs a driver to be"))  # stops on a function word
    assert runs_on(line("wybierz całe nagranie klikając CTRL + A, i naciśnij"))  # long prose, no full stop
    assert not runs_on(line("Switch off and check the coil wiring."))
