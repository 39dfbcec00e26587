"""Words compared the way people type them: without case or diacritics."""

from __future__ import annotations

import re
import unicodedata

# Folding works on the runs of non-ASCII characters only: an ASCII character has no decomposition and
# no diacritic to strip, and most of a page is ASCII even where a few letters are not.
NON_ASCII = re.compile(r"[^\x00-\x7f]+")


def fold(text: str) -> str:
    """Lowercase and strip diacritics, so 'Größe' ~ 'grosse' and 'łącze' ~ 'lacze'."""
    text = text.lower()
    return text if text.isascii() else NON_ASCII.sub(_fold_run, text)


def _fold_run(run: re.Match) -> str:
    text = run.group().replace("ß", "ss").replace("ł", "l")
    return "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
