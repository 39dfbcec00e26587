"""The page between two ranked pages of one document, put in: the middle page of a procedure."""

from __future__ import annotations

from collections.abc import Callable


def gap_pages(ranked: list[tuple[str, int, float]]) -> set[tuple[str, int]]:
    """The pages fill_gaps() may put in: the one between each two ranked pages of a document."""
    keys = {(doc, page) for doc, page, _ in ranked}
    return {(doc, page + 1) for doc, page in keys if (doc, page + 2) in keys and (doc, page + 1) not in keys}


def fill_gaps(
    ranked: list[tuple[str, int, float]],
    exists: Callable[[tuple[str, int]], bool] = lambda key: True,
    within: int | None = None,
) -> list[tuple[str, int, float]]:
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
        return head + rest[: len(ranked) - within]
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
