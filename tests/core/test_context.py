"""The local follow-up resolver: a follow-up gets the thread's subject, joined in the question's language."""

from __future__ import annotations

from core.backends.local.context import HeuristicResolver
from core.language.names import subject_runs
from core.records import Exchange


async def resolve(question: str, previous: str) -> str:
    resolution = await HeuristicResolver().resolve(question, [Exchange(previous, "…", previous)])
    return resolution.question


async def test_follow_up_gets_the_subject_in_its_own_language():
    assert await resolve("And its width?", "How long is the Arduino UNO R3?") == "Arduino UNO R3's width?"
    assert await resolve("And the width?", "How long is the Arduino UNO R3?") == "The width of Arduino UNO R3?"
    assert (
        await resolve("Und wie groß ist der Pre-Processor?", "Wie viele Ausgänge hat der Mk4P Light Controller?")
        == "Wie groß ist der Pre-Processor von Mk4P Light Controller?"
    )
    assert (
        await resolve("A jaka jest częstotliwość?", "Jak nagrywać w Audacity 2.4?")
        == "Jaka jest częstotliwość dla Audacity 2.4?"
    )


async def test_a_question_naming_its_own_subject_is_left_alone():
    assert (
        await resolve("What is the size of the HF-300?", "How long is the Arduino UNO R3?")
        == "What is the size of the HF-300?"
    )


async def test_a_follow_up_naming_a_new_subject_carries_the_previous_ask_over():
    # Before: "The main ATmega328P of ATmega16U2 USB-bridge?"
    assert (
        await resolve("And the main ATmega328P?", "How much SRAM does the ATmega16U2 have?")
        == "How much SRAM does the main ATmega328P have?"
    )
    assert (
        await resolve("And the 5-channel pre-processor?", "How big is the 3-channel pre-processor?")
        == "How big is the 5-channel pre-processor?"
    )
    assert (
        await resolve("Und der Pre-Processor?", "Welche Abmessungen hat der Mk4P Light Controller?")
        == "Welche Abmessungen hat der Pre-Processor?"
    )
    # the new subject takes the place of the one shaped like it, not of the product
    assert (
        await resolve("And D1?", "What part is fitted as U1 on the UNO R3?")
        == "What part is fitted as D1 on the UNO R3?"
    )
    assert (
        await resolve("What about the UNO R4?", "What is the width of the UNO R3?")
        == "What is the width of the UNO R4?"
    )


async def test_a_whole_follow_up_question_about_another_model_stands_alone():
    assert (
        await resolve("And what is the weight of the ATmega328P?", "How much SRAM does the ATmega16U2 have?")
        == "What is the weight of the ATmega328P?"
    )
    # a part of the same product (no model number) still gets the product
    assert (
        await resolve("And what is the maximum from the USB connector?", "What is the input range of the UNO R3?")
        == "What is the maximum from the USB connector of UNO R3?"
    )


async def test_a_follow_up_modifier_replaces_the_previous_one_and_keeps_the_ask():
    assert (
        await resolve(
            "And for a light bar of six white 3 V LEDs?",
            "What series resistor do I need for one orange LED on a 6 V supply?",
        )
        == "What series resistor do I need for a light bar of six white 3 V LEDs?"
    )
    assert (
        await resolve("Und bei einem Mk4S?", "Wie viele Ausgänge hat der Light Controller bei einem Mk4P?")
        == "Wie viele Ausgänge hat der Light Controller bei einem Mk4S?"
    )
    # no such phrase in the previous question: left to the other rules
    assert (
        await resolve("And for the UNO R4?", "What is the width of the UNO R3?") == "What is the width of the UNO R4?"
    )


async def test_a_follow_up_noun_phrase_replaces_the_previous_one():
    # a noun phrase shaped like no name there stands in for the last noun phrase as a whole, not for the
    # first capitalised word ("Welcher das Standlicht vorne rechts ist ab Werk der Blinker hinten links?")
    assert (
        await resolve("Und das Standlicht vorne rechts?", "Welcher Ausgang ist ab Werk der Blinker hinten links?")
        == "Welcher Ausgang ist ab Werk das Standlicht vorne rechts?"
    )
    # one shaped like a name there replaces just that name, and the head noun after it stays
    assert (
        await resolve("And the Z-axis DIR?", "On the pin map, which MCU pin is the X-axis STEP signal?")
        == "On the pin map, which MCU pin is the Z-axis DIR signal?"
    )
    # a German noun's capital is no name's shape: the whole noun phrase goes, its "vorne links" too
    assert (
        await resolve("Und der Lichtbalken?", "Welcher Ausgang ist ab Werk das Fernlicht vorne links?")
        == "Welcher Ausgang ist ab Werk der Lichtbalken?"
    )
    # nor is a menu command's: "Trim" stands in for the subject, not for "Edit", which is shaped alike
    assert (
        await resolve("A Trim?", "Jaki skrót ma polecenie Duplicate w menu Edit?")
        == "Jaki skrót ma polecenie Trim w menu Edit?"
    )
    # a phrase without a name that shares its first or its last word with the previous question
    assert (
        await resolve("A narzędzie powiększenia?", "Do czego służy narzędzie Koperta?")
        == "Do czego służy narzędzie powiększenia?"
    )
    assert (
        await resolve("And the output voltage?", "What is the input voltage of the HF-300?")
        == "What is the output voltage of the HF-300?"
    )


def test_a_sentence_s_first_word_is_no_name_for_its_capital_alone():
    assert subject_runs("Auf welche i-Bus-Kanäle kann ich die AUX-Kanäle legen?") == [(2, 3), (6, 7)]
    assert subject_runs("Audacity: jak nagrywać?") == [(0, 1)]  # set apart, as a name is
    assert subject_runs("UNO R3: how many pins?") == [(0, 2)]
    assert subject_runs("ATmega328P flash size?") == [(0, 1)]
    assert subject_runs("Trim") == [(0, 1)]  # a follow-up naming one thing


async def test_a_first_question_that_names_its_subject_is_answered_not_questioned_back():
    resolver = HeuristicResolver()
    # English "I" is no Polish "i" (and), and a first question's pronoun points inside it
    for question in (
        "I want to program my Uno offline. What do I install and how do I hook it up?",
        "I'm powering the Mk4P from a 2S LiPo. When will they dim?",
        "And how heavy is the HF-300?",
    ):
        resolution = await resolver.resolve(question, [])
        assert resolution.clarify is None and resolution.question == question
    assert (await resolver.resolve("And its weight?", [])).clarify  # nothing named, nothing to point at
    # in a thread, too, a long question starting "I" is a sentence, not Polish "i" (and) + a follow-up
    question = "I hooked a servo to OUT/ISP and now the Mk4 light controller won't boot. Any idea why?"
    assert await resolve(question, "How big is the Mk4P?") == question
    assert await resolve("I jaka jest szerokość?", "Jaka jest długość Mk4P?") == "Jaka jest szerokość dla Mk4P?"


async def test_a_follow_up_with_its_own_question_word_is_no_phrase_to_splice_in():
    # "kto" (who) makes it a question of its own; spliced in, it read "… z rokiem kto jeszcze tłumaczył w 2020?"
    assert (
        await resolve(
            "A kto jeszcze tłumaczył w 2020?", "Kto figuruje jako tłumacz podręcznika Audacity z rokiem 2017?"
        )
        == "Kto jeszcze tłumaczył w 2020?"
    )
