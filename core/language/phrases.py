"""Fixed phrases of one or more words found in a text's folded tokens: the written-out forms behind an
abbreviation (abbreviations.py), a field's names in six languages (field_names.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Generic, TypeVar

Value = TypeVar("Value")


class Phrases(Generic[Value]):
    """Phrases (folded, words separated by spaces), each standing for a value. A phrase's word of at least
    `inflectable` letters also matches the same word with up to three more letters ("cable" ~ "cables",
    "zasilacz" ~ "zasilacza"); a shorter one must match whole."""

    def __init__(self, phrases: Iterable[tuple[str, Value]], inflectable: int):
        self.inflectable = inflectable
        # first word (its first `inflectable` letters) -> (the phrase's words, its value), longest first
        self._by_start: dict[str, list[tuple[tuple[str, ...], Value]]] = {}
        for phrase, value in phrases:
            words = tuple(phrase.split())
            self._by_start.setdefault(words[0][:inflectable], []).append((words, value))
        for entries in self._by_start.values():
            entries.sort(key=lambda e: -len(e[0]))

    def _same_word(self, phrase_word: str, token: str) -> bool:
        if len(phrase_word) >= self.inflectable:
            return token.startswith(phrase_word) and len(token) - len(phrase_word) <= 3
        return token == phrase_word

    def spans(self, tokens: Sequence[str]) -> list[tuple[int, int, Value]]:
        """(start, end, value) of the longest phrase starting at each token that starts one."""
        found = []
        for i, token in enumerate(tokens):
            for words, value in self._by_start.get(token[: self.inflectable], ()):
                span = tokens[i : i + len(words)]
                if len(span) == len(words) and all(self._same_word(w, t) for w, t in zip(words, span)):
                    found.append((i, i + len(words), value))
                    break
        return found
