"""Tokenizing shared by lexical search, the extractive reader and quote location."""

from __future__ import annotations

import functools
import re

from .abbreviations import abbreviations_in
from .fold import fold
from .stopwords import STOPWORDS

TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+", re.UNICODE)
# TOKEN's matches on an ASCII text (most pages), found by a pattern the regex engine runs much faster.
ASCII_TOKEN = re.compile(r"[0-9]+(?:[.,][0-9]+)*|[a-z]+")
# Identifiers that mix letters and digits (Y1, OUT14, TMC2209, ATmega328P) are also kept whole: the
# words (runs of letters and digits) holding a letter next to a digit. Found from the runs of digits,
# which are few, by looking at their neighbours: a pattern for a letter next to a digit, tried at every
# position of every other word, was most of the time of indexing a page's words.
WORD = re.compile(r"[^\W_]+", re.UNICODE)
DIGITS = re.compile(r"\d+", re.UNICODE)
LETTER = re.compile(r"[^\W\d_]", re.UNICODE)


def tokens(text: str) -> list[str]:
    return _tokens(fold(text))


def _tokens(folded: str) -> list[str]:
    return (ASCII_TOKEN if folded.isascii() else TOKEN).findall(folded)


def content_tokens(text: str) -> list[str]:
    """Tokens that carry meaning, plus whole letter-digit identifiers ("y1", "out14") next to their parts
    and the abbreviations of written-out terms ("microcontroller" adds "mcu")."""
    folded = fold(text)
    all_words = _tokens(folded)
    words = [t for t in all_words if t not in STOPWORDS and (len(t) > 1 or t.isdigit())]
    compounds = identifiers(folded)
    for ident in compounds:
        if not ident[0].isdigit():
            # an identifier (P7, Y1) stands whole; its bare one-digit number would count it twice and
            # match every other "7" on the page. Longer numbers stay ("OUT14" ~ "OUT 14").
            for number in re.findall(r"\d+", ident):
                if len(number) == 1 and number in words:
                    words.remove(number)
    return words + compounds + abbreviations_in(all_words)


def identifiers(folded: str) -> list[str]:
    """The words of a folded text that hold a letter next to a digit, in order."""
    found, end = [], 0
    for run in DIGITS.finditer(folded):
        start, stop = run.span()
        if start < end:
            continue  # in the word found last
        if not (start and LETTER.match(folded, start - 1) or LETTER.match(folded, stop)):
            continue
        while start > end and folded[start - 1].isalnum():  # what [^\W_] matches
            start -= 1
        word = WORD.match(folded, start)
        assert word is not None  # it begins with a letter or digit
        end = word.end()
        found.append(word.group())
    return found


@functools.lru_cache(maxsize=1 << 18)  # a corpus repeats its words; indexing calls this per token
def stem(token: str) -> str:
    """A crude language-agnostic stem: long words share their first 6 letters. Kept, measured against
    simplemma's lemmas in three variants (every word, a text's own language, words of up to six letters):
    the broad judging half gained in two of them, dev and holdout lost evidence_first by 0.03-0.05 in
    each (eval/RESULTS.md, ninth session)."""
    return token if len(token) <= 6 or any(c.isdigit() for c in token) else token[:6]


def search_terms(text: str) -> set[str]:
    """A text's search terms: its content words' stems, what both stores' BM25 and the local reader match."""
    return {stem(t) for t in content_tokens(text)}
