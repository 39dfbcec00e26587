"""The words that make a message a follow-up and the words around a question's subject, in English,
German and Polish: what the local follow-up resolver (backends/local/context.py) reads a thread by."""

from __future__ import annotations

import re

from .names import QUESTION_WORDS

# What opens a follow-up and refers back, in the three languages the follow-up heuristics were written for:
# no kept library lists conjunctions or pronouns apart from other function words. A follow-up in another
# language is not recognised by its words (a Russian "А в Debian 1.3?" is taken as a new question).
FOLLOW_UP_START = re.compile(  # Polish "i" (and), but not English "I'm", "I've"
    r"^\s*(and|also|what about|how about|und|und was|was ist mit|a|i(?!['’])|oraz|a co z|a jak)\b[\s,]*", re.I
)
PRONOUN = re.compile(
    r"\b(it|its|it's|they|them|their|this one|that one|es|sein|seine|seinen|seiner|ihr|ihre|dessen|jego|jej|ich|"
    r"ten|tego|tej)\b",
    re.I,
)
ARTICLES = {
    "the",
    "a",
    "an",
    "der",
    "die",
    "das",
    "den",
    "dem",
    "des",
    "ein",
    "eine",
    "einen",
    "einem",
    "einer",
    "eines",
}
LEADING_PREPOSITIONS = {"for", "on", "of", "with", "für", "bei", "beim", "von", "mit", "dla", "na", "w", "z"}
FUNCTION_WORDS = (
    QUESTION_WORDS
    | LEADING_PREPOSITIONS
    | {
        "without",
        "in",
        "from",
        "to",
        "or",
        "and",
        "have",
        "has",
        "laut",
        "ohne",
        "im",
        "und",
        "oder",
        "hat",
        "haben",
        "do",
        "od",
        "bez",
        "ma",
        "mają",
        "oraz",
    }
)
# How "the width ___ UNO R3" is joined in each language; a follow-up is guessed German or Polish by
# its function words, English otherwise.
CONNECTORS = (
    (
        "von",
        {"der", "die", "das", "ist", "sind", "wie", "welche", "welcher", "welches", "und", "groß", "hoch", "breit"},
    ),
    ("dla", {"jaki", "jaka", "jakie", "jest", "są", "ile", "czy", "jak", "gdzie", "który", "która", "które"}),
)
