"""Coverage gaps (core/chat/gaps.py): which questions group together, who sees which, and the CSV export."""

from __future__ import annotations

import csv
import io

import numpy as np

from core.chat.gaps import SAME_QUESTION, coverage_gaps, gaps_csv, visible_in
from core.records import ABSTENTION, LIMITATION, RATED_BAD, GapQuestion

RNG = np.random.default_rng(7)
PRICE = RNG.standard_normal(384)
WIDTH = RNG.standard_normal(384)


def near(vector: np.ndarray, cosine: float) -> bytes:
    """A vector at exactly `cosine` from `vector`, stored as the thread memory keeps them (float16)."""
    unit = vector / np.linalg.norm(vector)
    other = RNG.standard_normal(unit.shape)
    other -= other.dot(unit) * unit
    other /= np.linalg.norm(other)
    return (cosine * unit + np.sqrt(1 - cosine**2) * other).astype(np.float16).tobytes()


def asked(
    question: str, vector: bytes, scope: str = "slack:T1/C1", at: float = 0, reason=LIMITATION, pages=()
) -> GapQuestion:
    platform, _, workspace = scope.split("/")[0].partition(":")
    return GapQuestion(len(question) + int(at), scope, platform, workspace, question, "", reason, at, pages, vector)


def test_questions_asking_the_same_thing_group_and_others_do_not():
    questions = [
        asked("What does the HF-300 cost?", near(PRICE, 1.0), at=1, pages=(("d1", 2),)),
        asked("How much is the HF-300?", near(PRICE, 0.99), at=3, reason=RATED_BAD, pages=(("d1", 2),)),
        asked("Price of the HF-300?", near(PRICE, 0.99), at=2, reason=ABSTENTION, pages=(("d1", 4),)),
        asked("How wide is the HF-300?", near(PRICE, SAME_QUESTION - 0.05), at=4),
        asked("What is its width?", near(WIDTH, 1.0), at=5),
    ]
    gaps = coverage_gaps(questions)
    assert [g.count for g in gaps] == [3, 1, 1]
    price = gaps[0]
    assert price.latest == "How much is the HF-300?" and price.last_asked == 3  # the newest wording
    assert price.reasons == {RATED_BAD: 1, ABSTENTION: 1, LIMITATION: 1}
    assert price.pages() == [("d1", 2), ("d1", 4)]  # most often retrieved first
    assert [g.latest for g in gaps[1:]] == ["What is its width?", "How wide is the HF-300?"]  # then the newest


def test_questions_without_an_embedding_group_by_their_wording_only():
    questions = [
        asked("What is the price?", b"", at=1),
        asked("what is  the PRICE?", b"", at=2),
        asked("What is the price?", near(PRICE, 1.0), at=3),  # with an embedding: not by wording
        asked("Is there a warranty?", b"", at=4),
    ]
    assert sorted(g.count for g in coverage_gaps(questions)) == [1, 1, 2]


def test_embeddings_of_different_models_are_never_compared():
    small = np.ones(384, dtype=np.float16).tobytes()
    large = np.ones(768, dtype=np.float16).tobytes()
    assert [g.count for g in coverage_gaps([asked("a?", small), asked("b?", large)])] == [1, 1]


def test_each_list_shows_its_own_collection_only():
    assert visible_in(None, "slack:T1/C1") and visible_in(None, "")  # the operator sees every one
    assert visible_in("slack:T1/C1", "slack:T1/C1")
    assert not visible_in("slack:T1/C1", "slack:T1/C2")  # not another channel's
    assert not visible_in("slack:T1/C1", "slack:T1")  # nor the workspace's, asked elsewhere
    assert visible_in("slack:T1", "slack:T1/C2") and visible_in("slack:T1", "slack:T1")
    assert not visible_in("slack:T1", "slack:T2/C1") and not visible_in("slack:T1", "discord:T1")
    assert not visible_in("shared", "slack:T1/C1") and visible_in("shared", "shared")
    questions = [asked("In C1?", near(PRICE, 1.0), "slack:T1/C1"), asked("In C2?", near(PRICE, 1.0), "slack:T1/C2")]
    assert [g.latest for g in coverage_gaps(questions, "slack:T1/C2")] == ["In C2?"]
    [both] = coverage_gaps(questions, "slack:T1")
    assert both.count == 2 and set(both.scopes) == {"slack:T1/C1", "slack:T1/C2"}
    assert coverage_gaps(questions, "slack:T2") == []


def test_the_csv_keeps_every_wording_as_written():
    tricky = 'Is the "HF-300", rated IP65,\nsafe outdoors? =1+1'
    questions = [
        asked(tricky, near(PRICE, 1.0), at=2, pages=(("d1", 3),)),
        asked("Can it stay outside?", near(PRICE, 0.99), at=1),
    ]
    rows = list(csv.reader(io.StringIO(gaps_csv(coverage_gaps(questions), {"d1": "HF-300 brochure"}))))
    assert rows[0][:3] == ["count", "latest question", "asked in"]
    assert rows[1][0] == "2" and rows[1][1] == tricky and rows[1][2] == "slack:T1/C1"
    assert rows[1][5] == "HF-300 brochure, p. 3" and rows[1][6] == "Can it stay outside?"
