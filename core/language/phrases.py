"""Fixed phrases of one or more words found in a text's folded tokens: the written-out forms behind an
abbreviation (abbreviations.py), a field's names in six languages (field_names.py)."""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import Generic, TypeVar

Value = TypeVar("Value")


class Phrases(Generic[Value]):
    """Phrases (folded, words separated by spaces), each standing for a value. A phrase's word of at least
    `inflectable` letters also matches the same word with up to three more letters ("cable" ~ "cables",
    "zasilacz" ~ "zasilacza"); a shorter one must match whole."""

    def __init__(self, phrases: Iterable[tuple[str, Value]], inflectable: int):
        self.inflectable = inflectable
        self._prefix = operator.itemgetter(slice(None, inflectable))  # token -> token[:inflectable]
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
        for i in self._starts(tokens):
            for words, value in self._by_start[tokens[i][: self.inflectable]]:
                span = tokens[i : i + len(words)]
                if len(span) == len(words) and all(self._same_word(w, t) for w, t in zip(words, span)):
                    found.append((i, i + len(words), value))
                    break
        return found

    def _starts(self, tokens: Sequence[str]) -> list[int]:
        """The places of the tokens a phrase may start at, in order. Found by the C-level scans of sets and
        list.index, not a Python loop over every token: a page has thousands, and few of them start any."""
        prefixes = list(map(self._prefix, tokens))
        places = []
        for key in self._by_start.keys() & set(prefixes):
            at = -1
            for _ in range(prefixes.count(key)):
                at = prefixes.index(key, at + 1)
                places.append(at)
        return sorted(places)
