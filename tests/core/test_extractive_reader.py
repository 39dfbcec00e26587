"""The local extractive reader on generated pages: what it quotes and what it admits."""

from __future__ import annotations

from dataclasses import replace

import pymupdf
import pytest

from core.backends.local.embedder import LocalEmbedder
from core.backends.local.passage_scoring import concepts
from core.backends.local.reader import ExtractiveReader
from core.backends.local.sentences import runs_on
from core.indexing.sources import text_words
from core.language.question_kind import asked_measure, asks_quantity
from core.language.tokens import content_tokens, stem
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
    pages = pages_of(
        tmp_path,
        [
            "General description\nThe R200 is a compact power relay for industrial controls.\n",
            "Contact data\nMaximum switching current: 16 A\nMaximum switching voltage: 400 V AC\n"
            "Mechanical endurance: 10 million operations\n",
        ],
    )
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


async def test_a_measure_asked_for_and_not_quoted_is_a_limitation(reader, tmp_path):
    # The page states the coil's voltage and power, not its current: quoting "24 V" is no answer.
    pages = pages_of(tmp_path, ["Coil data\nCoil voltage 24 V DC\nCoil power 0.9 W\n"])
    for question in ("How much current does the R200 coil draw?", "Wie viel Strom braucht die R200-Spule?"):
        draft = await reader.read(question, pages, ())
        assert draft.citations and "No current value is stated in the passages quoted." in draft.limitations
    voltage = await reader.read("What's the coil voltage of the R200?", pages, ())
    assert "24 V" in voltage.citations[0].quote and not voltage.limitations


async def test_a_value_of_the_measure_asked_for_wins(tmp_path):
    # Both lines name the chip and hold a number; only the second holds a current. The lexical reader (no
    # dense rerank, so the rule is seen alone) would quote the first, earlier line on a tie.
    pages = pages_of(tmp_path, ["Limits\nATmega328P clock: 20 MHz maximum\n\n\nATmega328P supply: 200 mA maximum\n"])
    for question in (
        "How much current can the ATmega328P draw at most?",
        "Wie viel Strom darf der ATmega328P höchstens ziehen?",
    ):
        draft = await ExtractiveReader().read(question, pages, ())
        assert "200 mA" in draft.citations[0].quote, question


async def test_a_count_of_the_things_asked_about_wins(tmp_path):
    # Both lines name the relay's contacts and hold a number; only the second counts them.
    for question, body, count in [
        (
            "How many contacts does the R200 have?",
            "Ratings\nR200 contacts: 16 A\n\n\nR200: 2 changeover contacts\n",
            "2 changeover contacts",
        ),
        (
            "Wie viele Kontakte hat das R200?",
            "Nennwerte\nR200 Kontakte: 16 A\n\n\nR200: 2 Wechsler-Kontakte\n",
            "2 Wechsler",
        ),
    ]:
        draft = await ExtractiveReader().read(question, pages_of(tmp_path, [body]), ())
        assert count in draft.citations[0].quote, question


async def test_a_keyboard_shortcut_asked_for_is_quoted_or_owned_up_to(tmp_path):
    pages = pages_of(
        tmp_path, ["Editing\nDuplicate the selection from the Edit menu\n\n\nEdit menu: Duplicate Ctrl+D\n"]
    )
    for question in (
        "What is the keyboard shortcut for Duplicate in the Edit menu?",
        "Jaki skrót klawiszowy ma Duplicate w menu Edit?",
    ):
        draft = await ExtractiveReader().read(question, pages, ())
        assert "Ctrl+D" in draft.citations[0].quote and not draft.limitations, question
    none = await ExtractiveReader().read(
        "Which shortcut starts recording?",
        pages_of(tmp_path, ["Recording\nNow you are ready to start recording.\n"]),
        (),
    )
    assert "No keyboard shortcut is stated in the passages quoted." in none.limitations


@pytest.mark.parametrize(
    "question, measure",
    [
        (
            "According to the board's power tree, how much current can the MCU draw?",
            "current",
        ),  # named after "how much"
        ("Wie viel Verlustleistung dürfen die Ausgänge zusammen erzeugen?", "power"),
        ("What sample rate is set in the recording dialog?", "frequency"),
        ("How much flash memory does the ATmega328P have?", "memory"),
        ("How big is the Mk4P board without its connectors?", "length"),
        ("Jaka jest średnica otworów montażowych?", "length"),
        ("What resistor value does the schematic give at 5 V?", "resistance"),
        ("What's the power supply voltage?", "voltage"),  # a power supply is no power
        ("Which driver chips does the board use?", None),  # no quantity asked
    ],
)
def test_the_measure_a_question_names(question, measure):
    found = asked_measure(question)
    assert (found[0] if found else None) == measure


def test_a_value_is_told_by_its_unit_as_ocr_prints_it():
    value = asked_measure("What resistor value does the schematic give at 5 V?")[1]
    assert value.search("5V: R = 18 0hm") and value.search("R1 = 220 Ω") and not value.search("R = 18")


async def test_a_product_the_quoted_document_never_mentions_is_owned_up_to(reader, tmp_path):
    relay = pages_of(tmp_path, ["Ambient conditions\nOperating temperature: -40 to 85 °C\n"])
    pump = [
        replace(rp, hit=replace(rp.hit, doc_id="d2", title="HF-300 brochure"), page=replace(rp.page, doc_id="d2"))
        for rp in pages_of(tmp_path, ["HydroFlow HF-300 pump\nFlow rate 40 litres per minute at 2 bar.\n"])
    ]
    draft = await reader.read("What is the operating temperature range of the HF-300?", relay + pump, ())
    assert "85" in draft.citations[0].quote  # the relay's, the only temperature there is
    assert (
        "The first passage quoted is from R200 datasheet, which does not mention “HF-300”; HF-300 brochure does."
        in draft.limitations
    )
    flow = await reader.read("What flow rate does the HF-300 deliver?", relay + pump, ())
    assert flow.citations[0].doc_id == "d2" and not flow.limitations


async def test_a_value_under_other_conditions_than_asked_is_owned_up_to(reader, tmp_path):
    pages = pages_of(tmp_path, ["Coil data\nCoil current at 24 V: 40 mA\n"])
    other = await reader.read("How much current does the R200 coil draw at 12 V?", pages, ())
    assert "40 mA" in other.citations[0].quote  # the nearest there is, quoted as such
    assert "No current value for 12 V is stated in the passages quoted." in other.limitations
    same = await reader.read("How much current does the R200 coil draw at 24 V?", pages, ())
    assert not same.limitations


async def test_a_quote_that_stops_mid_sentence_runs_on_to_its_end(reader, tmp_path):
    pages = pages_of(
        tmp_path,
        [
            "Status LED\n"
            "If the red status LED blinks twice after power-up, this means that the\n"
            "relay coil is open or not connected. Switch off and check the coil wiring.\n"
            "Mounting\n"
            "Mount the relay on a 35 mm DIN rail and keep 5 mm between neighbouring units.\n",
            "Ordering codes\nR200-24 for 24 V coils, R200-230 for 230 V coils.\n",
        ],
    )
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


def drawn_page(items: list[tuple[float, float, str, float]]) -> list[ReaderPage]:
    """One page with each (x, y, text, size) printed where it says: tables and outlines by layout alone."""
    doc = pymupdf.open()
    page = doc.new_page()
    for x, y, text, size in items:
        page.insert_text((x, y), text, fontsize=size)
    record = Page("d1", 1, "h0", page.rect.width, page.rect.height, tuple(text_words(page)))
    return [ReaderPage(Hit("d1", "Relay catalogue", 1, 1.0, ""), record, b"")]


async def test_a_table_row_is_found_through_its_header_and_heading(reader):
    # The question names the column ("R300") and the section ("technical data"); only the row holds the value.
    items = [(50, 60, "Technical data", 16), (50, 90, "Parameter", 10), (220, 90, "R200", 10), (340, 90, "R300", 10)]
    for n, (label, a, b) in enumerate(
        [
            ("Coil voltage", "24 V", "48 V"),
            ("Contact rating", "8 A", "16 A"),
            ("Dimensions", "29 × 18 × 12 mm", "44 × 23 × 15 mm"),
            ("Weight", "12 g", "20 g"),
        ]
    ):
        items += [(50, 110 + 18 * n, label, 10), (220, 110 + 18 * n, a, 10), (340, 110 + 18 * n, b, 10)]
    items.append((50, 200, "All relays are tested before delivery and carry a two-year warranty.", 10))
    draft = await reader.read(
        "What dimensions does the R300 have according to the technical data?", drawn_page(items), ()
    )
    assert "44 × 23 × 15 mm" in draft.citations[0].quote
    assert "R300" in draft.markdown.split("\n\n", 1)[1].splitlines()[0]  # the header is shown with the row
    assert "**44 × 23 × 15 mm**" in draft.markdown  # the answer itself in bold


async def test_a_value_is_found_under_its_headings(reader):
    # "32 KB Flash" repeats one question word; the outline above it holds the others.
    items = [
        (50, 60, "Features", 16),
        (60, 85, "ZX80 Processor", 11),
        (75, 102, "Memory", 11),
        (90, 119, "Up to 20 MHz clock", 11),
        (90, 136, "32 KB Flash", 11),
        (90, 153, "2 KB SRAM", 11),
        (60, 180, "Power", 11),
        (90, 197, "2.7 to 5.5 volts", 11),
        (50, 240, "The ZX80 processor memory map is described in the programming manual.", 10),
    ]
    draft = await reader.read("How much flash memory does the ZX80 processor have?", drawn_page(items), ())
    assert "32 KB Flash" in draft.citations[0].quote
    assert "**32 KB** Flash" in draft.markdown and "**32 KB**" not in draft.citations[0].quote


async def test_a_how_to_question_quotes_the_steps_after_the_introduction(reader, tmp_path):
    pages = pages_of(
        tmp_path,
        [
            "Reversing the channels\n"
            "The direction of the throttle and steering channels can be reversed on the controller.\n"
            "To do so, give seven clicks on the switch channel and wait until the lights flash.\n"
            "Light programs\nLight programs are small scripts stored in the controller.\n",
        ],
    )
    draft = await reader.read("How do I reverse the direction of the steering channel?", pages, ())
    assert "seven clicks" in draft.citations[0].quote


async def test_a_quote_that_starts_mid_sentence_starts_where_the_sentence_does(reader, tmp_path):
    pages = pages_of(
        tmp_path,
        [
            "Notes\n"
            "Firmware file names on the SD card cannot be changed. The E7 board supports the LCD2004 screen with\n"
            "the connector EXP_DISPLAY.\n",
        ],
    )
    draft = await reader.read("Which screen works on the EXP_DISPLAY connector?", pages, ())
    assert "LCD2004" in draft.citations[0].quote
    assert "**LCD2004**" in draft.markdown


async def test_a_passage_printed_on_two_pages_is_quoted_once(reader):
    # The same pinout drawing's labels are on two pages: quoting them twice would take another passage's place.
    legend = (60, 300, "BOARD PIN XM YM ZM EM Motor Driver MINI-SD EN STEP DIR PA4 SSEL", 9)
    first = drawn_page([legend])[0]
    second = drawn_page([(60, 100, "Stepper drivers: TMC2209 in UART mode", 10), legend])[0]
    second = replace(second, hit=replace(second.hit, page=2), page=replace(second.page, page=2))
    draft = await reader.read("Which stepper motor drivers does the board have on board?", [first, second], ())
    quotes = [c.quote for c in draft.citations]
    assert len(quotes) == len(set(quotes)), quotes


async def test_a_product_name_counts_once_against_the_word_asked_about(reader):
    # The name's five terms (zentro, mini, z3, v2, 2.0) must not outweigh "baud rate": they name the board,
    # not the line.
    items = [
        (50, 60, "Relay connection: Zentro Mini Z3 V2.0 PIN", 10),
        (50, 120, "Communication baud rate 115200", 10),
        (50, 140, "Supported file format: G-code", 10),
        (50, 200, "Zentro Mini Z3 V2.0 RESET", 10),
    ]
    draft = await reader.read("What baud rate does the Zentro Mini Z3 V2.0 use?", drawn_page(items), ())
    assert "115200" in draft.citations[0].quote


def test_concepts_group_a_name_and_an_identifier_s_parts():
    question = "Welche Software empfiehlt der Hersteller für das SKR Mini E3 V2.0 und den ATmega16U2?"
    query = {stem(t) for t in content_tokens(question)}
    groups = concepts(question, query)
    assert {stem(t) for t in ("skr", "mini", "e3", "v2", "2.0")} in groups
    assert {"atmega", "16", "atmega16u2"} <= next(g for g in groups if "atmega16u2" in g)
    assert {"softwa"} in groups and {"herste"} in groups  # a capitalised noun alone is its own concept
    assert set().union(*groups) == query and sum(map(len, groups)) == len(query)
    shouted = question.upper()
    groups = concepts(shouted, {stem(t) for t in content_tokens(shouted)})
    assert {"skr"} in groups and {"mini"} in groups  # in capitals, words are not taken for one name
    assert {"atmega", "16", "atmega16u2"} <= next(g for g in groups if "atmega16u2" in g)


@pytest.mark.parametrize(
    "question, quantity",
    [
        ("What maximum current is listed for the ATMEGA328P-PU?", True),  # a modifier before the quantity noun
        ("Which supply voltage does it accept?", True),
        ("Jaką częstotliwość próbkowania ma ścieżka?", True),  # the feminine form of "jaki"
        ("Welche maximale Spannung verträgt er?", True),
        ("Quelle est la tension nominale ?", True),
        ("What's the operating temperature range of the controller?", True),
        ("Which header is the relay connected to?", False),
        ("Jaki format plików obsługuje płyta?", False),
    ],
)
def test_quantity_questions_are_told_by_their_noun_not_only_the_word_next_to_which(question, quantity):
    assert asks_quantity(question) is quantity


async def test_a_numbered_heading_is_a_bare_heading_too(reader, tmp_path):
    # "5.2 Zoom tool" names the section the question asks about; the sentence below it answers.
    pages = pages_of(
        tmp_path,
        [
            "5.1 Selection tool\n\nThe selection tool marks a range of the track for editing.\n\n\n"
            "5.2 Zoom tool\n\nWith it you enlarge a segment and then retouch it with the Draw tool.\n",
        ],
    )
    draft = await reader.read("What is the zoom tool for?", pages, ())
    assert "enlarge" in draft.citations[0].quote


async def test_a_field_name_is_found_in_the_pages_language(reader):
    # An English question about a German table: "supply" shares no letters with "Versorgungsspannung".
    items = [
        (50, 40, "Die Werte gelten für den Betrieb mit einem Akku und sind Richtwerte.", 10),
        (50, 60, "Zentro X2 Abmessungen 62 × 27.5 × 9.5mm", 10),
        (50, 80, "Zentro X2 Gewicht 12g", 10),
        (50, 100, "Zentro X2 Versorgungsspannung 4V .. 10V", 10),
        (50, 120, "Zentro X2 Ausgänge 16 × 20mA", 10),
    ]
    draft = await reader.read("Which supply does the Zentro X2 need?", drawn_page(items), ())
    assert "4V .. 10V" in draft.citations[0].quote


async def test_a_field_name_in_a_third_language_is_not_looked_for(reader):
    # A German question about an English page that also prints a French line: only English names stand in.
    items = [
        (50, 40, "The values are given for the board with the supply that is connected to it.", 10),
        (50, 60, "Tension d'entrée 230 V", 10),
        (50, 80, "Input voltage 12 V", 10),
    ]
    draft = await reader.read("Welche Spannung braucht das Board?", drawn_page(items), ())
    assert "12 V" in draft.citations[0].quote


async def test_a_quoted_heading_brings_its_list_of_items(reader):
    # The question's words are in the heading; the answer is the short items listed under it.
    items = [
        (50, 60, "1.2 Related Products", 13),
        (70, 80, "Starter Kit", 10),
        (70, 95, "Braccio Robot Arm", 10),
        (70, 110, "Sensor Shield", 10),
        (50, 160, "2 Ratings", 13),
        (70, 180, "Input voltage 7 to 12 V", 10),
    ]
    draft = await reader.read("Which related products are there for the board?", drawn_page(items), ())
    assert "Braccio Robot Arm" in draft.citations[0].quote and "Sensor Shield" in draft.citations[0].quote
    assert "Ratings" not in draft.citations[0].quote


async def test_a_drawings_label_soup_leads_only_when_asked_for_one_of_its_codes(reader):
    # A pinout drawing's labels read in a row repeat the board's name and "Motor Driver": they answer nothing
    # about the drivers, but they are the answer when the question names one of their codes.
    items = [
        (60, 100, "Stepper drivers: TMC2209 in UART mode", 10),
        (60, 300, "ZENTRO MINI Z3 V2.0 PIN XM YM ZAM ZBM EM Motor Driver MINI-SD 2B1B1A2A EN STEP DIR PA4", 9),
    ]
    drivers = await reader.read("Which stepper motor drivers does the Zentro Mini Z3 V2.0 have?", drawn_page(items), ())
    assert "TMC2209" in drivers.citations[0].quote
    step = await reader.read("Which pin is the Zentro Mini Z3 V2.0's STEP signal on?", drawn_page(items), ())
    assert "PA4" in step.citations[0].quote
