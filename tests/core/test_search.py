"""Neighbouring-page evidence (search.fill_gaps): the page between two ranked pages of one document; and a
name of several words counting once in BM25 (search.term_weights)."""

from __future__ import annotations

import pytest

from core.ranking.bm25 import LexicalIndex, term_weights
from core.ranking.gaps import fill_gaps, gap_pages


def test_the_middle_page_of_a_run_takes_the_lowest_unrelated_rank():
    ranked = [("a", 23, 0.9), ("a", 19, 0.8), ("a", 20, 0.7), ("a", 21, 0.6)]
    assert gap_pages(ranked) == {("a", 22)}
    assert fill_gaps(ranked) == [("a", 23, 0.9), ("a", 19, 0.8), ("a", 22, 0.7), ("a", 21, 0.6)]


def test_a_pair_on_the_last_ranks_displaces_nothing_above_it():
    ranked = [("a", 2, 0.9), ("a", 3, 0.8), ("a", 7, 0.7), ("a", 9, 0.6)]
    assert fill_gaps(ranked) == ranked


def test_only_pages_of_the_same_document_that_exist_are_put_in():
    ranked = [("a", 4, 0.9), ("b", 6, 0.8), ("c", 1, 0.7)]
    assert gap_pages(ranked) == set() and fill_gaps(ranked) == ranked
    ranked = [("a", 4, 0.9), ("a", 6, 0.8), ("c", 1, 0.7)]
    assert fill_gaps(ranked, lambda key: False) == ranked
    assert fill_gaps(ranked) == [("a", 4, 0.9), ("a", 6, 0.8), ("a", 5, 0.7)]


def test_a_run_already_whole_is_left_alone():
    ranked = [("a", 4, 0.9), ("a", 5, 0.8), ("a", 6, 0.7), ("b", 1, 0.6)]
    assert gap_pages(ranked) == set() and fill_gaps(ranked) == ranked


def test_an_end_of_another_gap_is_not_displaced():
    # 3 and 5 have 4 between them, 1 and 3 have 2: neither gap may push out an end of the other.
    ranked = [("a", 3, 0.9), ("a", 1, 0.8), ("a", 5, 0.7)]
    assert gap_pages(ranked) == {("a", 2), ("a", 4)}
    assert fill_gaps(ranked) == ranked
    ranked = [("a", 3, 0.9), ("a", 1, 0.8), ("a", 5, 0.7), ("b", 1, 0.6)]
    assert fill_gaps(ranked) == [("a", 3, 0.9), ("a", 1, 0.8), ("a", 5, 0.7), ("a", 4, 0.6)]  # the first pair's
    # 1-2-3 is whole, 4 is missing: the weakest page gives way, and is not then filled back in place of 1.
    ranked = [("a", 3, 0.9), ("a", 1, 0.8), ("a", 5, 0.7), ("a", 2, 0.6)]
    assert fill_gaps(ranked) == [("a", 3, 0.9), ("a", 1, 0.8), ("a", 5, 0.7), ("a", 4, 0.6)]


def test_a_longer_candidate_list_starts_with_the_pages_a_shorter_one_holds():
    # The Jev selector asks for 8 candidates; its fallback, their first 4, must be what 4 would give.
    ranked = [
        ("a", 3, 0.9),
        ("a", 5, 0.8),
        ("b", 1, 0.7),
        ("c", 2, 0.6),
        ("c", 9, 0.5),
        ("a", 4, 0.4),
        ("d", 1, 0.3),
        ("d", 3, 0.2),
    ]
    four = fill_gaps(ranked[:4])
    eight = fill_gaps(ranked, within=4)
    assert four == [("a", 3, 0.9), ("a", 5, 0.8), ("b", 1, 0.7), ("a", 4, 0.6)]
    assert eight[:4] == four and len(eight) == 8
    assert eight[4:] == [("c", 2, 0.6), ("c", 9, 0.5), ("d", 1, 0.3), ("d", 3, 0.2)]  # the displaced page first


def test_a_name_of_several_words_counts_once_in_bm25():
    # A wiring drawing prints the board's name again and again; the spec page says what was asked, once.
    drawing = "Widget Pro X2 pin map. Widget Pro X2 TX RX. Widget Pro X2 GND 5V. Widget Pro X2 SD card."
    spec = "Specification: serial communication baud rate 115200, 32-bit processor."
    pages = (
        [drawing, spec]
        + [f"Widget Pro X2 page {i}: mounting and cooling." for i in range(3)]
        + [f"Another product's page {i}." for i in range(8)]
    )
    question = "What baud rate does the Widget Pro X2 use?"
    assert LexicalIndex(pages).scores(question).argmax() == 1
    # plain BM25 (the text-only baseline) lets the repeated name win
    assert LexicalIndex(pages).scores(question, names_once=False).argmax() == 0
    # the name's terms share its rarest term's weight; other words, and one word's parts, keep theirs
    weights = term_weights(question + " LPC81x-ISP", lambda term: 2.0)
    assert sum(weights[t] for t in ("widget", "pro", "x2")) == pytest.approx(2.0)
    assert weights["baud"] == weights["lpc81x"] == weights["isp"] == 2.0
    # a screenshot's text, on the lines after the question, is labels: they keep their weights
    weights = term_weights("Where does this go?\nWidget Pro X2 GND TX", lambda term: 2.0)
    assert weights["widget"] == weights["pro"] == weights["x2"] == 2.0
