"""Abbreviations and their written-out forms find each other, in search and in the missing-word check."""

from __future__ import annotations

import numpy as np

from core.language.tokens import content_tokens
from core.ranking.bm25 import LexicalIndex
from core.records import Turn
from tests.conftest import text_pdf


def test_written_out_forms_add_their_abbreviation_in_three_languages():
    assert "mcu" in content_tokens("Which microcontrollers are on board?")  # inflected
    assert "mcu" in content_tokens("Welcher Mikrocontroller ist verbaut?")
    assert "psu" in content_tokens("Jaki zasilacza użyć?")  # Polish, inflected
    assert "psu" in content_tokens("What power supply does it need?")  # two words
    assert "psu" not in content_tokens("What power does it draw? The supply voltage is 12 V.")
    assert "gnd" not in content_tokens("It was grounded in practice.")  # short forms only whole
    assert "pcb" in content_tokens("The printed circuit board is 4-layer.")


def test_every_written_out_form_counts_where_it_stands():
    from core.language.abbreviations import abbreviation_spans
    from core.language.tokens import tokens

    words = tokens("Power supply: 12 V. The microcontroller and its power supply unit; ground, power")
    assert abbreviation_spans(words) == [(0, 2, "psu"), (5, 6, "mcu"), (8, 11, "psu"), (11, 12, "gnd")]


def test_a_question_in_words_finds_the_page_that_abbreviates():
    pages = [
        "Board features: the board is used in many printers, board layout and board size.",
        "Parameters: MCU: ARM Cortex-M3 STM32F103RCT6. Layers: 4.",
    ]
    index = LexicalIndex(pages)
    scores = index.scores("Which microcontroller is used on the board?")
    assert scores[1] > 0
    assert LexicalIndex(pages).scores("Which MCU is it?")[1] > 0
    # ...and the other way round: a question with the abbreviation finds the written-out page
    assert LexicalIndex(["It has a power supply of 12 V.", "Mounting holes."]).scores("PSU rating")[0] > 0
    allowed = np.ones(2, dtype=bool)
    assert index.absent_words("Which microcontroller is used?", allowed) == []
    assert index.absent_words("Which microcontroller and which heatsink?", allowed) == ["heatsink"]


async def test_microcontroller_question_finds_the_mcu_line(settings, tmp_path):
    from core.service import Service

    pdf = text_pdf(
        tmp_path / "zephyr.pdf",
        [
            "Zephyr Z1 introduction. The Zephyr Z1 is a control board for 3D printers with a quiet stepper "
            "driver on each axis.",
            "Zephyr Z1 parameters. Size: 100 x 70 mm. MCU: ARM Cortex-M3 STM32F103RCT6. Input: 12-24 V.",
            "Zephyr Z1 wiring. Connect the fan to FAN0 and the heater to HE0 on the Zephyr Z1.",
        ],
    )
    service = Service(settings)
    await service.index([str(pdf)])
    answer = await service.answer(Turn("Which microcontroller does the Zephyr Z1 have?"))
    assert 2 in [hit.page for hit in answer.hits[:2]]
    # without the abbreviation the reader quotes the introduction's "control board" and calls
    # "microcontroller" missing
    assert "STM32F103RCT6" in answer.citations[0].quote
    assert not any("microcontroller" in text for text in answer.limitations)
