"""The question's words that no visible page holds, even inflected or abbreviated: the answer owns up to
them. Only visible pages count, so other tenants' words do not show through."""

from __future__ import annotations

import re
from collections.abc import Callable

from ..language.abbreviations import abbreviation_spans
from ..language.tokens import content_tokens, stem, tokens


def presence_probe(word: str) -> tuple[bool, str]:
    """How absent_words() looks a word up: (True, term) for an abbreviation, which must be a term
    whole; else (False, prefix), any term starting with the prefix (the word's stem less its last two
    letters, at least four) counting as the word, inflected."""
    if len(word) < 4:
        return True, word
    root = stem(word)
    return False, root[: max(4, len(root) - 2)]


# A word of short parts joined by hyphens ("Wi-Fi", "E-Ink"): its parts are too short to look up alone.
SHORT_PARTS = re.compile(r"(?<![\w-])[^\W\d_]{2,3}(?:-[^\W\d_]{2,3})+(?![\w-])")


def short_part_words(query: str) -> list[tuple[str, list[str]]]:
    """Each such word of the query as printed, with its folded parts; four letters or more in all."""
    return [(found, parts) for found in SHORT_PARTS.findall(query) if len("".join(parts := tokens(found))) >= 4]


def absent_words(query: str, present: Callable[[str], bool]) -> list[str]:
    """Content words of the query (4+ letters) that no visible page contains (`present` says whether
    one does), even inflected ("weigh" is present where "weight" is) or abbreviated ("power supply"
    where "PSU" is); and words of short hyphenated parts ("Wi-Fi") of which a part is on no page. Only
    visible pages may count: other tenants' words must not show through."""
    words = tokens(query)
    abbreviated = {
        w for start, end, abbreviation in abbreviation_spans(words) if present(abbreviation) for w in words[start:end]
    }
    return [
        word
        for word in dict.fromkeys(content_tokens(query))
        if len(word) >= 4 and not word[0].isdigit() and word not in abbreviated and not present(word)
    ] + [found for found, parts in short_part_words(query) if not all(present(p) for p in parts)]


def probed_words(query: str) -> set[str]:
    """Every word absent_words() asks `present` about, so that a store can look them up at once."""
    words = tokens(query)
    return (
        {abbreviation for _, _, abbreviation in abbreviation_spans(words)}
        | {w for w in content_tokens(query) if len(w) >= 4 and not w[0].isdigit()}
        | {p for _, parts in short_part_words(query) for p in parts}
    )
