"""The local follow-up resolver: a follow-up gets the thread's subject, joined in the question's language."""
from __future__ import annotations

from core.context import HeuristicResolver
from core.records import Exchange


async def resolve(question: str, previous: str) -> str:
    resolution = await HeuristicResolver().resolve(question, [Exchange(previous, "…", previous)])
    return resolution.question


async def test_follow_up_gets_the_subject_in_its_own_language():
    assert await resolve("And its width?", "How long is the Arduino UNO R3?") == "Arduino UNO R3's width?"
    assert await resolve("And the width?", "How long is the Arduino UNO R3?") == "The width of Arduino UNO R3?"
    assert (await resolve("Und wie groß ist der Pre-Processor?", "Wie viele Ausgänge hat der Mk4P Light Controller?")
            == "Wie groß ist der Pre-Processor von Mk4P Light Controller?")
    assert (await resolve("A jaka jest częstotliwość?", "Jak nagrywać w Audacity 2.4?")
            == "Jaka jest częstotliwość dla Audacity 2.4?")


async def test_a_question_naming_its_own_subject_is_left_alone():
    assert await resolve("What is the size of the HF-300?", "How long is the Arduino UNO R3?") == \
        "What is the size of the HF-300?"
