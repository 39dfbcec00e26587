"""Coverage gaps: the questions the documents could not answer (a stated limitation, an abstention, an
answer someone rated 👎), grouped when they ask the same thing, for the people who keep the documents.

Questions are grouped by their query embeddings, which the search computed anyway and the thread memory
kept: a question joins the group whose mean embedding is nearest, when that is at least SAME_QUESTION
(cosine), else it starts one. A question without an embedding (asked before they were kept, or refused
before the search) is grouped with the same wording only.
"""

from __future__ import annotations

import csv
import datetime
import io
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from ..records import SHARED_SCOPE, GapQuestion
from ..scopes import channel_of, workspace_of

# Measured with eval/gap_grouping.py on hand-written pairs (paraphrases, and the same product's other
# facts), tuned on one half and judged on the other: eval/RESULTS.md gives the figures.
SAME_QUESTION = 0.93


@dataclass(frozen=True)
class Gap:
    """One thing the documents do not answer, however it was asked."""

    questions: tuple[GapQuestion, ...]  # newest first

    @property
    def count(self) -> int:
        return len(self.questions)

    @property
    def latest(self) -> str:
        """The latest wording (as the bot understood it, when a follow-up was rewritten)."""
        newest = self.questions[0]
        return newest.interpreted or newest.question

    @property
    def last_asked(self) -> float:
        return self.questions[0].asked_at

    @property
    def scopes(self) -> list[str]:
        """Where it was asked, most often first."""
        return [s for s, _ in Counter(q.scope for q in self.questions).most_common()]

    @property
    def reasons(self) -> dict[str, int]:
        return dict(Counter(q.reason for q in self.questions).most_common())

    def pages(self, top: int = 5) -> list[tuple[str, int]]:
        """The pages retrieved for it, most often first: where an answer would have been looked for."""
        counted = Counter(page for q in self.questions for page in q.retrieved)
        return [page for page, _ in counted.most_common(top)]


def visible_in(scope: str | None, asked_in: str) -> bool:
    """Whether a question asked in the collection `asked_in` shows in `scope`'s list: the operator's
    (None) shows all; a workspace's its own and its channels'; a channel's, or the shared collection's,
    only its own. Nothing of one workspace or channel shows in another's."""
    if scope is None or asked_in == scope:
        return True
    return scope != SHARED_SCOPE and channel_of(scope) is None and workspace_of(asked_in) == scope


def coverage_gaps(
    questions: Iterable[GapQuestion], scope: str | None = None, threshold: float = SAME_QUESTION
) -> list[Gap]:
    """The gaps `scope` may see (None: all), the most asked first, then the most recent."""
    shown = sorted((q for q in questions if visible_in(scope, q.scope)), key=lambda q: -q.asked_at)
    groups: list[list[GapQuestion]] = []
    centroids: list[np.ndarray | None] = []
    for question in shown:
        vector = _unit(question.vector)
        best, best_score = None, threshold
        for i, centroid in enumerate(centroids):
            if vector is not None and centroid is not None and centroid.shape == vector.shape:
                score = float(np.dot(_normalised(centroid), vector))
            elif vector is None and centroid is None:
                score = 1.0 if _wording(groups[i][0]) == _wording(question) else 0.0
            else:
                continue
            if score >= best_score:
                best, best_score = i, score
        if best is None:
            groups.append([question])
            centroids.append(vector)
        else:
            groups[best].append(question)
            centroid = centroids[best]
            if centroid is not None and vector is not None:
                centroids[best] = centroid + vector  # the sum: its direction is the mean's
    gaps = [Gap(tuple(group)) for group in groups]
    return sorted(gaps, key=lambda g: (-g.count, -g.last_asked))


def gaps_csv(gaps: Sequence[Gap], titles: dict[str, str]) -> str:
    """The gaps as CSV, a row each: what a spreadsheet of documentation to-dos needs. `titles` names the
    documents by id (a removed one keeps its id)."""
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(
        ["count", "latest question", "asked in", "reasons", "last asked (UTC)", "pages retrieved", "also asked as"]
    )
    for gap in gaps:
        wordings = list(dict.fromkeys(q.interpreted or q.question for q in gap.questions))
        writer.writerow(
            [
                gap.count,
                gap.latest,
                "; ".join(gap.scopes),
                "; ".join(f"{reason} ×{n}" for reason, n in gap.reasons.items()),
                _utc(gap.last_asked),
                "; ".join(page_label(page, titles) for page in gap.pages()),
                " | ".join(wordings[1:]),
            ]
        )
    return out.getvalue()


def page_label(page: tuple[str, int], titles: dict[str, str]) -> str:
    doc_id, number = page
    return f"{titles.get(doc_id, doc_id)}, p. {number}"


def _utc(at: float) -> str:
    return datetime.datetime.fromtimestamp(at, datetime.UTC).strftime("%Y-%m-%d %H:%M")


def _unit(data: bytes) -> np.ndarray | None:
    if not data:
        return None
    vector = np.frombuffer(data, dtype=np.float16).astype(np.float32)
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else None


def _normalised(vector: np.ndarray) -> np.ndarray:
    return vector / (float(np.linalg.norm(vector)) or 1.0)


def _wording(question: GapQuestion) -> str:
    return " ".join((question.interpreted or question.question).casefold().split())
