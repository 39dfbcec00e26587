"""Tokens that search and the missing-word check see."""

from __future__ import annotations

import numpy as np

from core.language.tokens import content_tokens
from core.ranking.bm25 import LexicalIndex


def test_accented_function_words_and_question_chatter_are_not_content():
    assert content_tokens("Worauf muss man für den Master achten?") == ["master", "achten"]
    assert content_tokens("Żeby się udało, co dalej?") == ["udalo"]
    assert content_tokens("I think I've seen 20 MHz somewhere") == ["20", "mhz", "somewhere"]  # "I've" leaves no "ve"


def test_function_words_of_languages_beyond_the_corpus_are_not_content():
    assert content_tokens("Quelle est la tension d'alimentation de la carte ?") == ["tension", "alimentation", "carte"]
    assert content_tokens("Qual è la tensione di alimentazione della scheda?") == [
        "tensione",
        "alimentazione",
        "scheda",
    ]
    assert content_tokens("¿Cuál es la tensión de alimentación de la placa?") == ["tension", "alimentacion", "placa"]
    assert content_tokens("Wat is de voedingsspanning van het bord?") == ["voedingsspanning", "bord"]
    # words that are names in technical text stay: AUX outputs, CE marking, EN norms, mA
    assert content_tokens("Combien de sorties AUX, quel courant en mA ?") == ["sorties", "aux", "courant", "en", "ma"]


def test_a_french_question_is_not_told_its_function_words_are_missing():
    index = LexicalIndex(["Tension d'alimentation de la carte : 7-12 V"])
    allowed = np.ones(1, dtype=bool)
    assert index.absent_words("Quelle est la tension d'alimentation de la carte ?", allowed) == []
    assert index.absent_words("Quelle est la tension de la carte en Bluetooth ?", allowed) == ["bluetooth"]


def test_question_chatter_is_never_reported_missing():
    index = LexicalIndex(["The ATmega328P runs at up to 20 MHz."])
    allowed = np.ones(1, dtype=bool)
    assert index.absent_words("I think I've seen the ATmega328P run at 20 MHz, does it?", allowed) == []
    assert index.absent_words("How much does the ATmega328P weigh?", allowed) == ["weigh"]


def test_a_word_of_short_hyphenated_parts_is_missing_when_a_part_is():
    index = LexicalIndex(["The MCU pin PA3 drives the E-Ink display.", "Plug the module into the TFT header."])
    allowed = np.ones(2, dtype=bool)
    assert index.absent_words("Which Wi-Fi module plugs into the TFT header?", allowed) == ["Wi-Fi"]
    assert index.absent_words("Which MCU-Pin drives the display?", allowed) == []  # "mcu" and "pin" are there


def test_identifiers_are_whole_words_with_a_letter_next_to_a_digit():
    from core.language.tokens import identifiers

    text = "out14 and y1, tmc2209; foo_x1 12ab ab12cd 3 x 12,5 mm 1a1a strasse5 a_1 9"
    assert identifiers(text) == ["out14", "y1", "tmc2209", "x1", "12ab", "ab12cd", "1a1a", "strasse5"]
    assert identifiers("no digits here") == [] and identifiers("") == []
    # found from the digit runs: one word however many runs it holds, a letter on either side of a run
    assert identifiers("a1b2c3 12.5v v2.0 2b1b1a2a 42 ß7") == ["a1b2c3", "5v", "v2", "2b1b1a2a", "ß7"]


def test_folding_strips_case_and_diacritics_wherever_they_sit():
    from core.language.fold import fold

    assert fold("Größe der Łącze-Platine: 5 mm") == "grosse der lacze-platine: 5 mm"
    assert fold("Cafe\u0301 ﬁle ½ • ΟΔΟΣ") == "cafe file 1\u20442 • οδος"  # a combining mark after an ASCII letter
    assert fold("plain ASCII") == "plain ascii"
