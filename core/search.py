"""Page retrieval: dense vectors (max over a page's rows), BM25 over page words, score fusion.

Fusion is a weighted sum of normalized scores rather than reciprocal ranks: the quantized e5
cosines are squeezed into a narrow band, so ranks alone turn tiny dense differences into large
ones and break ties by page order. Dense scores are standardized over the visible pages (how far a
page stands out from the collection) and BM25 scores are divided by the best page's, so a page that
both signals single out wins, and a clear lexical match survives a middling dense score. How much
each signal counts depends on the query's lexical coverage (see dense_weight). In BM25 a name of several
words ("SKR Mini E3 V2.0") counts as one term (term_weights), so pages that repeat it do not outrank the page
holding the word asked about. The fused top k then has the page between two of its pages of one document
put in (fill_gaps): the middle page of a procedure.
"""
from __future__ import annotations

import bisect
import math
import re
from collections import Counter
from pathlib import Path
from typing import Callable

import numpy as np

from .abbreviations import abbreviation_spans
from .names import name_runs
from .text import content_tokens, stem, tokens

K1, B = 1.2, 0.75  # BM25's term-frequency saturation and length normalisation


class LexicalIndex:
    """BM25 (k1=1.2, b=0.75) over one text per page, on crude stems; a name of several words in the query
    counts as one term (term_weights), unless scores() is asked for plain BM25 (the text-only baseline's).

    Postings are stored compressed-row style (every term's pages and term frequencies in two flat
    arrays, sliced by offsets), so that an index is saved with its snapshot and opened by reading
    arrays instead of tokenizing every page again."""

    def __init__(self, texts: list[str], k1: float = K1, b: float = B):
        lists: dict[str, list[tuple[int, int]]] = {}
        lengths = []
        for i, text in enumerate(texts):
            counts = page_terms(text)
            lengths.append(sum(counts.values()))
            for term, tf in counts.items():
                lists.setdefault(term, []).append((i, tf))
        terms = sorted(lists)
        sizes = np.array([len(lists[t]) for t in terms], dtype=np.int64)
        offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        pages = np.fromiter((i for t in terms for i, _ in lists[t]), dtype=np.int32, count=int(offsets[-1]))
        tf = np.fromiter((f for t in terms for _, f in lists[t]), dtype=np.float32, count=int(offsets[-1]))
        self._set(terms, offsets, pages, tf, np.asarray(lengths, dtype=np.float32), k1, b)

    def _set(self, terms: list[str], offsets, pages, tf, lengths, k1: float, b: float) -> None:
        self.k1, self.b = k1, b
        self.keys = terms  # sorted: prefix look-ups bisect it
        self._row = {term: i for i, term in enumerate(terms)}
        self._offsets, self._pages, self._tf = offsets, pages, tf
        self.lengths = lengths
        self.n = len(lengths)
        self.avg = float(lengths.mean()) if self.n else 1.0

    def save(self, path: Path) -> None:
        np.savez(path, terms=np.frombuffer("\n".join(self.keys).encode("utf-8"), dtype=np.uint8),
                 offsets=self._offsets, pages=self._pages, tf=self._tf, lengths=self.lengths,
                 params=np.array([self.k1, self.b], dtype=np.float64))

    @classmethod
    def load(cls, path: Path) -> "LexicalIndex":
        with np.load(path) as data:
            blob = data["terms"].tobytes().decode("utf-8")
            index = cls.__new__(cls)
            k1, b = (float(v) for v in data["params"])
            index._set(blob.split("\n") if blob else [], data["offsets"], data["pages"], data["tf"], data["lengths"],
                       k1, b)
        return index

    def postings(self, term: str) -> tuple[np.ndarray, np.ndarray] | None:
        """The pages a term is on, and its frequency on each; None for a term on no page."""
        row = self._row.get(term)
        if row is None:
            return None
        start, end = self._offsets[row], self._offsets[row + 1]
        return self._pages[start:end], self._tf[start:end]

    def absent_words(self, query: str, allowed: np.ndarray) -> list[str]:
        """absent_words() over the allowed pages."""
        return absent_words(query, lambda word: self._present(word, allowed))

    def _present(self, word: str, allowed: np.ndarray) -> bool:
        exact, root = presence_probe(word)
        if exact:
            found = self.postings(root)
            return found is not None and bool(allowed[found[0]].any())
        at = bisect.bisect_left(self.keys, root)
        while at < len(self.keys) and self.keys[at].startswith(root):
            if allowed[self.postings(self.keys[at])[0]].any():
                return True
            at += 1
        return False

    def idf(self, term: str) -> float:
        row = self._row.get(term)
        return idf(self.n, int(self._offsets[row + 1] - self._offsets[row]) if row is not None else 0)

    def coverage(self, query: str, allowed: np.ndarray | None = None) -> float:
        """The idf-weighted share of the query's terms found together on the best-covered (allowed) page.

        Near 1: the pages speak the query's words and BM25 is reliable. Near 0: they do not (another
        language, paraphrase), and ranking should lean on the dense model."""
        weights = {t: self.idf(t) for t in query_terms(query)}
        total = sum(weights.values())
        if not total or not self.n:
            return 0.0
        per_page = np.zeros(self.n, dtype=np.float64)
        for term, w in weights.items():
            if (found := self.postings(term)) is not None:
                per_page[found[0]] += w
        if allowed is not None:
            per_page = np.where(allowed, per_page, 0.0)
        return float(per_page.max() / total)

    def scores(self, query: str, names_once: bool = True) -> np.ndarray:
        out = np.zeros(self.n, dtype=np.float32)
        weights = term_weights(query, self.idf) if names_once else {t: self.idf(t) for t in query_terms(query)}
        for term, weight in weights.items():
            if (found := self.postings(term)) is None:
                continue
            pages, tf = found
            out[pages] += bm25_term(weight, tf, self.lengths[pages], self.avg, self.k1, self.b)
        return out


# --- what every lexical store shares (this one in memory, PostgreSQL's in tables) ---------------------
def bm25_term(idf: float, tf, length, avg_length: float, k1: float = K1, b: float = B):
    """A term's BM25 score on pages with `tf` occurrences in `length` terms (numbers or arrays alike):
    the one formula of both stores' lexical search."""
    return idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / max(avg_length, 1e-6)))


def page_terms(text: str) -> Counter:
    """A page text's terms (crude stems of its content words) and how often each occurs."""
    return Counter(stem(t) for t in content_tokens(text))


def query_terms(query: str) -> set[str]:
    return {stem(t) for t in content_tokens(query)}


def idf(n_pages: int, df: int) -> float:
    return math.log(1 + (n_pages - df + 0.5) / (df + 0.5))


def term_weights(query: str, idf_of: Callable[[str], float]) -> dict[str, float]:
    """Each query term's BM25 weight: its idf, except that the terms of a name of several words ("SKR Mini
    E3 V2.0": skr, mini, e3, v2, 2.0) share the weight of the rarest of them. Else a drawing or a running
    header that prints the name over and over outranks the page holding the one word asked about ("baud").
    Names are told by their shape (names.name_runs), in any language, in the question: its first line.
    The lines after it are a screenshot's text (LocalBackend.query_text), whose capitalized words are labels
    that together single out the page it shows, as one word's parts ("LPC81x-ISP") do; they keep their
    weights, and so does a question typed in capitals, in which every word looks like a name."""
    terms = query_terms(query)
    weights = {t: idf_of(t) for t in terms}
    question = query.split("\n", 1)[0]
    words = question.split()
    for start, end in name_runs(question):
        name = {stem(t) for word in words[start:end] for t in content_tokens(word)} & terms
        if name:
            share = max(weights[t] for t in name) / (sum(weights[t] for t in name) or 1.0)
            weights.update({t: weights[t] * share for t in name})
    return weights


def presence_probe(word: str) -> tuple[bool, str]:
    """How absent_words() looks a word up: (True, term) for an abbreviation, which must be a term
    whole; else (False, prefix), any term starting with the prefix (the word's stem less its last two
    letters, at least four) counting as the word, inflected."""
    if len(word) < 4:
        return True, word
    root = stem(word)
    return False, root[:max(4, len(root) - 2)]


# A word of short parts joined by hyphens ("Wi-Fi", "E-Ink"): its parts are too short to look up alone.
SHORT_PARTS = re.compile(r"(?<![\w-])[^\W\d_]{2,3}(?:-[^\W\d_]{2,3})+(?![\w-])")


def short_part_words(query: str) -> list[tuple[str, list[str]]]:
    """Each such word of the query as printed, with its folded parts; four letters or more in all."""
    return [(found, parts) for found in SHORT_PARTS.findall(query)
            if len("".join(parts := tokens(found))) >= 4]


def absent_words(query: str, present: Callable[[str], bool]) -> list[str]:
    """Content words of the query (4+ letters) that no visible page contains (`present` says whether
    one does), even inflected ("weigh" is present where "weight" is) or abbreviated ("power supply"
    where "PSU" is); and words of short hyphenated parts ("Wi-Fi") of which a part is on no page. Only
    visible pages may count: other tenants' words must not show through."""
    words = tokens(query)
    abbreviated = {w for start, end, abbreviation in abbreviation_spans(words)
                   if present(abbreviation) for w in words[start:end]}
    return [word for word in dict.fromkeys(content_tokens(query))
            if len(word) >= 4 and not word[0].isdigit() and word not in abbreviated and not present(word)] \
        + [found for found, parts in short_part_words(query) if not all(present(p) for p in parts)]


def probed_words(query: str) -> set[str]:
    """Every word absent_words() asks `present` about, so that a store can look them up at once."""
    words = tokens(query)
    return ({abbreviation for _, _, abbreviation in abbreviation_spans(words)}
            | {w for w in content_tokens(query) if len(w) >= 4 and not w[0].isdigit()}
            | {p for _, parts in short_part_words(query) for p in parts})


def lexical_index(documents, pages) -> LexicalIndex:
    """The BM25 index of a snapshot: each page's words, with its document's title."""
    titles = {d.doc_id: d.title for d in documents}
    return LexicalIndex([f"{titles[p.doc_id]}\n{p.text}" for p in pages])


def dense_page_scores(vectors: np.ndarray, row_page: np.ndarray, n_pages: int, query: np.ndarray) -> np.ndarray:
    """Cosine of the query with each page: the best of that page's rows."""
    scores = np.full(n_pages, -np.inf, dtype=np.float32)
    if len(vectors):
        np.maximum.at(scores, row_page, vectors @ query.astype(np.float32))
    return scores


def top_pages(scores: np.ndarray, allowed: np.ndarray, k: int) -> list[int]:
    masked = np.where(allowed, scores, -np.inf)
    k = min(k, int(allowed.sum()))
    if k <= 0:
        return []
    idx = np.argpartition(-masked, k - 1)[:k]
    return [int(i) for i in idx[np.argsort(-masked[idx], kind="stable")] if np.isfinite(masked[i])]


# The dense weight follows the lexical coverage of the query: DENSE_BASE when some page holds every
# query term (BM25 is then precise), up to DENSE_BASE + DENSE_GAIN when no page holds any (typically a
# question in another language than the pages: only the multilingual dense model bridges it).
DENSE_BASE = 0.3
DENSE_GAIN = 0.5
DENSE_TEMPERATURE = 2.0


def standardized(scores: np.ndarray, best: float, spread: float, temperature: float = DENSE_TEMPERATURE) -> np.ndarray:
    """exp((z - z_max) / T) of each page's z-score over the visible collection, from the collection's
    best score and standard deviation (`spread`): the best page is 1, a page one standard deviation
    behind it exp(-1/T). Written with the best and the spread alone, so that a store which scores only
    candidates (PostgreSQL) computes what scoring every page would."""
    return np.exp((scores.astype(np.float64) - best) / ((spread + 1e-9) * temperature))


def dense_weight(coverage: float) -> float:
    return DENSE_BASE + DENSE_GAIN * (1.0 - min(1.0, max(0.0, coverage)))


def fused(dense: np.ndarray, best: float, spread: float, lexical: np.ndarray | None = None,
          lexical_best: float = 0.0, coverage: float = 0.5) -> np.ndarray:
    """w * standardized dense + (1 - w) * BM25 / best BM25 of each candidate page, w = dense_weight(coverage);
    `best` and `spread` describe the dense scores of every visible page, `lexical_best` their best BM25."""
    out = standardized(dense, best, spread)
    if lexical is not None:
        w = dense_weight(coverage)
        scaled = lexical.astype(np.float64) / lexical_best if lexical_best > 0 else np.zeros(len(lexical))
        out = w * out + (1 - w) * scaled
    return out


def gap_pages(ranked: list[tuple[str, int, float]]) -> set[tuple[str, int]]:
    """The pages fill_gaps() may put in: the one between each two ranked pages of a document."""
    keys = {(doc, page) for doc, page, _ in ranked}
    return {(doc, page + 1) for doc, page in keys if (doc, page + 2) in keys and (doc, page + 1) not in keys}


def fill_gaps(ranked: list[tuple[str, int, float]], exists: Callable[[tuple[str, int]], bool] = lambda key: True,
              within: int | None = None) -> list[tuple[str, int, float]]:
    """The ranked (document, page, score) list with the page between two ranked pages of one document
    put in: a procedure or a table that runs over three consecutive pages often has its middle page
    score lower than both ends (it holds the steps, not the words of the question), and an answer
    needs the whole run. The middle page takes the place and score of the lowest-ranked page that
    is below the higher end of the pair, is not an end of a gap and was not put in itself; with no
    such page (the two ends hold the last ranks) nothing changes. Gaps are those of the list as
    ranked: a page displaced to fill one does not become a gap to fill in turn. Works on the list alone
    (and `exists`, whether a store holds a page: gap_pages() says which to ask about), so that every
    store (this one scoring every page, PostgreSQL only candidates) fills the same gaps.

    `within`: gaps are filled among the first `within` pages only, the ones answered from, and the rest
    follow (a page displaced first): a longer list of candidates to choose from (the Jev selector's)
    then starts with exactly the pages a shorter one would hold."""
    if within is not None and within < len(ranked):
        head = fill_gaps(ranked[:within], exists)
        taken = {(doc, page) for doc, page, _ in head}
        rest = [r for r in ranked if (r[0], r[1]) not in taken]
        return head + rest[:len(ranked) - within]
    out = list(ranked)
    keys = [(doc, page) for doc, page, _ in ranked]
    gaps = gap_pages(ranked)  # of the list as ranked: a page displaced here is not put back as a gap
    kept = {(doc, page + d) for doc, page in gaps for d in (-1, 1)}  # the ends of each gap, and each page put in
    for low in keys:
        high = (low[0], low[1] + 2)
        present = [(doc, page) for doc, page, _ in out]
        middle = (low[0], low[1] + 1)
        if middle not in gaps or low not in present or high not in present or middle in present or not exists(middle):
            continue
        for j in range(len(out) - 1, min(present.index(low), present.index(high)), -1):
            if present[j] not in kept:
                out[j] = (*middle, out[j][2])
                kept.add(middle)
                break
    return out


def fuse_scores(dense: np.ndarray, lexical: np.ndarray | None, allowed: np.ndarray, k: int,
                coverage: float = 0.5) -> list[tuple[int, float]]:
    """The top k allowed pages by fused(), every page a candidate."""
    ok = allowed & np.isfinite(dense)
    if not ok.any():
        return []
    visible = dense[ok].astype(np.float64)
    lexical_best = float(np.where(allowed, lexical, 0.0).max()) if lexical is not None and len(lexical) else 0.0
    scores = np.zeros(len(dense), dtype=np.float64)
    scores[ok] = fused(dense[ok], float(visible.max()), float(visible.std()),
                       lexical[ok] if lexical is not None else None, lexical_best, coverage)
    return [(i, float(scores[i])) for i in top_pages(scores, ok, k)]
