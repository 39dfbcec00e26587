"""Names in a question: runs of words shaped like names (a capital or a digit: "SKR Mini E3 V2.0",
"ATmega328P"), told by their shape rather than by any language's vocabulary. The follow-up resolver takes
a question's subject from them, the search and the reader count a name of several words once.
"""

from __future__ import annotations

import re

# Interrogatives apart from other function words: no kept library lists them by language (stopwordsiso
# mixes them with prepositions and articles, which the follow-up resolver's asks() must not take for a
# question: eval/RESULTS.md, fourteenth session).
QUESTION_WORDS = {
    "what",
    "which",
    "who",
    "how",
    "where",
    "when",
    "why",
    "does",
    "do",
    "is",
    "are",
    "can",
    "was",
    "wie",
    "wo",
    "welche",
    "welcher",
    "welches",
    "wann",
    "warum",
    "ist",
    "sind",
    "kann",
    "jak",
    "jaki",
    "jaka",
    "jakie",
    "gdzie",
    "kiedy",
    "czy",
    "ile",
    "co",
    "the",
    "a",
    "an",
    "and",
    # who / what / which in the other common European languages: a phrase has none of them
    "whom",
    "wer",
    "wen",
    "wem",
    "kto",
    "kogo",
    "komu",
    "który",
    "która",
    "które",
    "qui",
    "que",
    "quoi",
    "quel",
    "quelle",
    "où",
    "comment",
    "combien",
    "quand",
    "pourquoi",
    "chi",
    "che",
    "cosa",
    "quale",
    "dove",
    "come",
    "quanto",
    "quando",
    "perché",
    "quién",
    "qué",
    "cuál",
    "dónde",
    "cómo",
    "cuánto",
    "cuándo",
}
NAME_TOKEN = re.compile(r"^(?=.*[A-Z0-9])[\w.\-/+®™]+$")


def bare(word: str) -> str:
    return word.strip("?,.;:!()\"'“”")


def subject_runs(question: str) -> list[tuple[int, int]]:
    """Word spans [start, end) of runs of name-like words (capitals or digits)."""
    runs: list[tuple[int, int]] = []
    start = None
    words = question.split()
    for i, raw in enumerate(words + [""]):
        word = bare(raw)
        if word and NAME_TOKEN.match(word) and word.lower() not in QUESTION_WORDS:
            start = i if start is None else start
        else:
            if start is not None:
                runs.append((start, i))
            start = None
    # A sentence's first word has its capital from its place ("Auf welche Kanäle …", "Ich hab …"), unless
    # more of a name follows it, it is shaped like one ("UNO", "R3", "iPhone"), set apart ("Audacity: …")
    # or alone (a follow-up's "Trim").
    if runs and runs[0] == (0, 1) and len(words) > 1 and words[0].istitle() and words[0].isalpha():
        runs.pop(0)
    return runs


def name_runs(question: str) -> list[tuple[int, int]]:
    """The runs of two or more name-shaped words: the names that the search and the reader count once. In a
    question typed in capitals every word looks like a name, so it has none."""
    return [] if question.isupper() else [(a, b) for a, b in subject_runs(question) if b - a > 1]
