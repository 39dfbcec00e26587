"""Field names across languages: found in a question, and a page's language told by its function words."""

from __future__ import annotations

from core.language.field_names import field_names_in, language_of, name_in


def concepts(text: str) -> list[int]:
    return [concept for concept, _ in field_names_in(text)]


def test_field_names_are_found_in_every_language_and_inflected():
    ((voltage, terms),) = field_names_in("Welche Spannungen sind erlaubt?")  # inflected: "Spannungen"
    assert terms == {"spannu"} and name_in(voltage, "en") == {"voltag"} and name_in(voltage, "pl") == {"napiec"}
    assert voltage in concepts("What is the rated voltage?") and concepts("Jakie jest napięcie?") == [voltage]
    assert concepts("Is the dragon green?") == []


def test_a_name_of_two_words_is_one_field():
    ((supply, terms),) = field_names_in("Which power supply do I need?")  # not also a "supply"
    assert {"power", "supply"} <= terms and name_in(supply, "de") == {"netzte"}


def test_a_page_language_is_the_one_whose_function_words_it_uses_most():
    assert language_of("Die Ausgänge sind mit dem Akku verbunden und nicht mit der Masse.") == "de"
    assert language_of("Le courant de sortie est limité pour les LED et pour les relais.") == "fr"
    assert language_of("Connect the board to the USB port and press reset; OUT1 DIR STEP") == "en"
    assert language_of("OUT1 OUT2 GND 5V") is None  # a drawing's labels: too few words to tell
    # A language the field names do not have is none of them, however close (Czech is not Polish).
    assert language_of("Tento dokument popisuje instalaci programu a jeho nastavení pro běžné uživatele.") is None
