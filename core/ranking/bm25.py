"""BM25 over page words, on crude stems; a name of several words in a question counts as one term. The
formula and the term weights are what both stores use (PostgreSQL's in tables: postgres/page_bm25.py)."""

from __future__ import annotations

import bisect
import math
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence

import numpy as np

from ..language.names import name_runs
from ..language.tokens import content_tokens, search_terms, stem
from .absent_words import absent_words, presence_probe

K1, B = 1.2, 0.75  # BM25's term-frequency saturation and length normalisation
# What page_terms() makes of a text. Raised with every change to stopwords, tokens or stems: both stores
# rebuild terms of another version from the pages' words (embedded/pages.py, postgres/page_terms.py).
TERMS_VERSION = 1


class LexicalIndex:
    """BM25 (k1=1.2, b=0.75) over one text per page, on crude stems; a name of several words in the query
    counts as one term (term_weights), unless scores() is asked for plain BM25 (the text-only baseline's).

    Postings are stored compressed-row style (every term's pages and term frequencies in two flat
    arrays, sliced by offsets), so that an index is saved with its snapshot and opened by reading
    arrays instead of tokenizing every page again (bm25_file.py)."""

    def __init__(self, texts: list[str], k1: float = K1, b: float = B):
        ids: defaultdict[str, int] = defaultdict()  # each term's number, in order of first sight
        ids.default_factory = ids.__len__  # numbered by C-level calls: indexing looks up every term of every page
        term_ids, term_pages, term_tf, lengths = [], [], [], []
        for i, text in enumerate(texts):
            counts = page_terms(text)
            lengths.append(sum(counts.values()))
            term_ids.append(np.fromiter(map(ids.__getitem__, counts), np.int64, len(counts)))
            term_tf.append(np.fromiter(counts.values(), np.float32, len(counts)))
            term_pages.append(np.full(len(counts), i, np.int32))
        terms = sorted(ids)
        rank = np.empty(len(ids), dtype=np.int64)  # a term's number -> its row, in sorted order
        rank[np.fromiter((ids[t] for t in terms), np.int64, len(terms))] = np.arange(len(terms))
        rows = rank[np.concatenate(term_ids)] if texts else np.zeros(0, np.int64)
        order = np.argsort(rows, kind="stable")  # each term's postings, its pages in page order
        offsets = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=len(terms)))]).astype(np.int64)
        pages = np.concatenate(term_pages)[order] if texts else np.zeros(0, np.int32)
        tf = np.concatenate(term_tf)[order] if texts else np.zeros(0, np.float32)
        self._set(terms, offsets, pages, tf, np.asarray(lengths, dtype=np.float32), k1, b)

    def extended(self, keep: Sequence[int], texts: list[str]) -> LexicalIndex:
        """This index's pages `keep` (in that order), then pages of new `texts`: what LexicalIndex() of
        all those texts would build, tokenizing only the new ones (a build adding one document to a
        large index need not read every page again)."""
        kept = np.asarray(keep, dtype=np.int64)
        added = LexicalIndex(texts, self.k1, self.b)
        position = np.full(self.n, -1, dtype=np.int64)
        position[kept] = np.arange(len(kept))
        old_rows = np.repeat(np.arange(len(self.keys)), np.diff(self._offsets))
        old_pages = position[self._pages]
        alive = old_pages >= 0
        surviving = np.unique(old_rows[alive])
        terms = sorted({self.keys[i] for i in surviving.tolist()} | set(added.keys))
        row_of = {t: i for i, t in enumerate(terms)}
        old_row = np.fromiter((row_of.get(t, -1) for t in self.keys), np.int64, len(self.keys))
        new_row = np.fromiter((row_of[t] for t in added.keys), np.int64, len(added.keys))
        rows = np.concatenate(
            [old_row[old_rows[alive]], new_row[np.repeat(np.arange(len(added.keys)), np.diff(added._offsets))]]
        )
        pages = np.concatenate([old_pages[alive], added._pages.astype(np.int64) + len(kept)])
        tf = np.concatenate([self._tf[alive], added._tf])
        order = np.lexsort((pages, rows))  # by term, each term's pages in order
        offsets = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=len(terms)))]).astype(np.int64)
        lengths = np.concatenate([self.lengths[kept], added.lengths]).astype(np.float32)
        return LexicalIndex.from_arrays(
            terms, offsets, pages[order].astype(np.int32), tf[order], lengths, self.k1, self.b
        )

    @classmethod
    def from_arrays(cls, terms: list[str], offsets, pages, tf, lengths, k1: float, b: float) -> LexicalIndex:
        """An index from its postings arrays, as bm25_file.load reads them."""
        index = cls.__new__(cls)
        index._set(terms, offsets, pages, tf, lengths, k1, b)
        return index

    def arrays(self) -> tuple:
        """(offsets, pages, tf, lengths): what bm25_file.save writes beside the terms."""
        return self._offsets, self._pages, self._tf, self.lengths

    def _set(self, terms: list[str], offsets, pages, tf, lengths, k1: float, b: float) -> None:
        self.k1, self.b = k1, b
        self.keys = terms  # sorted: prefix look-ups bisect it
        self._row = {term: i for i, term in enumerate(terms)}
        self._offsets, self._pages, self._tf = offsets, pages, tf
        self.lengths = lengths
        self.n = len(lengths)
        self.avg = float(lengths.mean()) if self.n else 1.0

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
            found = self.postings(self.keys[at])  # a key is on some page: never None
            if found is not None and allowed[found[0]].any():
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
        weights = {t: self.idf(t) for t in search_terms(query)}
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
        weights = term_weights(query, self.idf) if names_once else {t: self.idf(t) for t in search_terms(query)}
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
    return Counter(map(stem, content_tokens(text)))


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
    terms = search_terms(query)
    weights = {t: idf_of(t) for t in terms}
    question = query.split("\n", 1)[0]
    words = question.split()
    for start, end in name_runs(question):
        name = {stem(t) for word in words[start:end] for t in content_tokens(word)} & terms
        if name:
            share = max(weights[t] for t in name) / (sum(weights[t] for t in name) or 1.0)
            weights.update({t: weights[t] * share for t in name})
    return weights


def lexical_index(documents, pages) -> LexicalIndex:
    """The BM25 index of a snapshot: each page's words, with its document's title."""
    return LexicalIndex(lexical_texts(documents, pages))


def lexical_texts(documents, pages) -> list[str]:
    titles = {d.doc_id: d.title for d in documents}
    return [lexical_text(titles[p.doc_id], p) for p in pages]


def lexical_text(title: str, page) -> str:
    """What BM25 reads of a page, in both stores: its document's title, then its words."""
    return f"{title}\n{page.text}"
