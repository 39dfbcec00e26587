"""Per-question scoring: how well one ranked list of pages finds the gold pages (evidence first,
within the top k, recall, reciprocal rank), how much of the reference answer the reader's answer
contains (SQuAD-style normalisation, key tokens), whether its lead states the question's key fact, and
how many cited pages are gold. `Result` is the
record the harness keeps for each question run.
"""

from __future__ import annotations

import re
import string
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from .questions import PageRef

# The grader's own function words (EN/DE/PL), fixed so that tuning the search's stopwords never moves
# the containment figures.
GRADER_STOPWORDS = frozenset(
    """
    a an the and or of to in on at for by with from is are was were be been it its this that these those
    as do does did what which who whom how much many when where why there their they them can could should
    would will i you we he she my your our me us not no any some about into than then so if also has have had
    der die das den dem des ein eine einer eines einem einen und oder ist sind war wie was wer wo welche welcher
    welches für mit von zu im in am an auf aus bei es sie er ich wir nicht auch sich dass als nach über um
    i w z na do nie to jest są jak co czy się o od po za ten ta te tego jaki jaka jakie który która które
    oraz lub dla przy""".split()
)


# --- retrieval -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Score:
    first: float  # the top page is gold
    within_k: float  # any gold page (mode any) / every gold page (mode all) in the top k
    recall: float  # fraction of gold pages in the top k (mode any: 1 when any is there)
    rr: float  # reciprocal rank of the first gold page in the ranking (0 when absent)


MISS = Score(0.0, 0.0, 0.0, 0.0)


def score_ranking(ranking: Sequence[PageRef] | None, gold: Sequence[PageRef], mode: str = "all", k: int = 4) -> Score:
    """Score one ranked list of pages against the gold pages. None (an error) is a miss."""
    if ranking is None or not gold:
        return MISS
    gold_set = set(gold)
    top = list(dict.fromkeys(ranking))[:k]
    found = gold_set & set(top)
    first = float(bool(top) and top[0] in gold_set)
    within = float(bool(found)) if mode == "any" else float(found == gold_set)
    recall = float(bool(found)) if mode == "any" else len(found) / len(gold_set)
    rr = next((1.0 / r for r, page in enumerate(list(dict.fromkeys(ranking)), 1) if page in gold_set), 0.0)
    return Score(first, within, recall, rr)


def mean_scores(scores: Iterable[Score]) -> dict[str, float]:
    items = list(scores)
    if not items:
        return {"n": 0}
    n = len(items)
    return {
        "n": n,
        "evidence_first": sum(s.first for s in items) / n,
        "evidence_within_k": sum(s.within_k for s in items) / n,
        "recall_at_k": sum(s.recall for s in items) / n,
        "mrr": sum(s.rr for s in items) / n,
    }


# --- answer grading ------------------------------------------------------------------------------
ARTICLES = re.compile(r"\b(a|an|the)\b")
PUNCT = set(string.punctuation) | set("–—‘’“”„«»…·×→°")


def normalize_answer(text: str) -> str:
    """As the PixelRAG (SQuAD-style) grader: lowercase, punctuation and articles removed, spaces collapsed."""
    text = "".join(" " if c in "\u2013\u2014" else c for c in text.lower())
    text = "".join(c for c in text if c not in PUNCT)
    text = ARTICLES.sub(" ", text)
    return " ".join(text.split())


def key_tokens(text: str) -> list[str]:
    """The normalized tokens that carry content (common EN/DE/PL function words dropped)."""
    return [t for t in normalize_answer(text).split() if t not in GRADER_STOPWORDS]


def containment(answer: str, reference: str) -> tuple[float, bool]:
    """(fraction of the reference's key tokens present in the answer, whole reference contained)."""
    norm_answer = normalize_answer(answer)
    have = set(norm_answer.split())
    keys = key_tokens(reference)
    frac = sum(t in have for t in keys) / len(keys) if keys else 0.0
    norm_ref = normalize_answer(reference)
    return frac, bool(norm_ref) and f" {norm_ref} " in f" {norm_answer} "


# --- key fact in the lead ------------------------------------------------------------------------
LEAD_LINES = 2  # the first passage or bolded answer: what a reader sees before scrolling
LEAD_CHARS = 400
BY = re.compile(r"(?<=\d)\s*[x×]\s*(?=\d)", re.I)  # "29 × 18" and "29 x 18" are the same dimensions


def answer_lead(answer: str) -> str:
    """The first lines of an answer, skipping notices printed wholly in italics (the local mode's notice)."""
    lines = [ln for ln in answer.splitlines() if ln.strip() and not re.fullmatch(r"\s*_[^_].*_\s*", ln)]
    return "\n".join(lines[:LEAD_LINES])[:LEAD_CHARS]


def _compact(text: str) -> tuple[str, set[int], set[int]]:
    """Letters and digits only, with where tokens start and end (a digit-letter change counts, so "10S"
    is "10 S"): "0,8 V" and "0.8V" compare equal, "OUT1" does not match inside "OUT10"."""
    text = BY.sub(" ", unicodedata.normalize("NFKC", text.replace("**", "")).lower())  # bold is no content
    out: list[str] = []
    starts, ends = set(), set()
    prev = ""
    for c in text:
        alnum, kind_changed = c.isalnum(), prev.isdigit() != c.isdigit()
        if alnum and (not prev.isalnum() or kind_changed):
            starts.add(len(out))
        if prev.isalnum() and (not alnum or kind_changed):
            ends.add(len(out))
        if alnum:
            out.append(c)
        prev = c
    ends.add(len(out))
    return "".join(out), starts, ends


def states_fact(text: str, facts: Sequence[str]) -> bool:
    """Whether any of the accepted forms of the key fact is in `text`, ignoring case, spacing and punctuation."""
    have, starts, ends = _compact(text)
    for fact in facts:
        key = _compact(fact)[0]
        at = have.find(key) if key else -1
        while at != -1:
            if at in starts and at + len(key) in ends:
                return True
            at = have.find(key, at + 1)
    return False


def citation_precision(cited: Sequence[PageRef], gold: Sequence[PageRef]) -> float | None:
    pages = set(cited)
    if not pages or not gold:
        return None
    return len(pages & set(gold)) / len(pages)


# --- one question's record -----------------------------------------------------------------------
@dataclass
class Result:
    id: str
    kind: str
    lang: str
    variant: str  # "" for text questions; a screenshots.VARIANTS name for screenshot queries
    question: str
    interpreted: str = ""
    gold: list = field(default_factory=list)
    gold_mode: str = "all"
    ranked: list | None = None  # [{"file", "page", "score"}]; None after an error
    score: dict = field(default_factory=dict)
    baseline_ranked: list = field(default_factory=list)
    baseline_score: dict = field(default_factory=dict)
    answer: str = ""
    limitations: list = field(default_factory=list)
    cited: list = field(default_factory=list)
    states_limitation: bool | None = None
    containment: float | None = None
    contains: bool | None = None
    citation_precision: float | None = None
    key_fact_lead: bool | None = None  # None: the question has no key fact
    key_fact_any: bool | None = None
    error: str | None = None
    seconds: float = 0.0
    page_lang: str = ""  # the language of the gold pages' document, when the evaluation was told it
    jev: dict | None = None  # --compare-jev: both rankings of the same candidates (eval/report.py: summarize_jev)
