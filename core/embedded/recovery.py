"""Building over a damaged index: what to build on, and which documents to rebuild from their stored
PDFs, so that a build never loses documents it was not asked to touch."""

from __future__ import annotations

import hashlib

from ..documents import Source, hide_credentials
from ..errors import IndexProblem
from .index_folder import IndexStore
from .snapshot_format import Snapshot


def recover(store: IndexStore, problem: IndexProblem, warnings: list[str]) -> tuple[Snapshot | None, list]:
    """Over a damaged active snapshot: the newest intact snapshot to build on, and the documents
    the damaged one listed that it lacks, to be rebuilt from their stored PDFs."""
    try:
        active = store.active_name()
    except IndexProblem:  # a damaged pointer: which documents it named is unknown
        active = None
    previous = store.newest_intact()
    listed = store.documents_of(active) if active else None
    warnings.append(f"The index was damaged ({problem}).")
    if previous is not None:
        warnings.append(f"Its documents were carried over from the intact snapshot {previous.name}.")
    if listed is None:
        # Which documents the damaged snapshot held is unknown: if PDFs are stored that the intact
        # snapshot does not list, building now would drop them. Refuse and say how to repair.
        if orphans := store.orphaned_sources(previous):
            raise IndexProblem(
                f"The index's active snapshot is damaged ({problem}) and {len(orphans)} stored PDF(s) belong "
                f"to no intact snapshot, so building now could lose them. Nothing was changed. Run "
                f"`pixelrag repair --index {store.root}`: it makes the newest intact snapshot active and "
                "moves those PDFs where you can index them again."
            )
        return previous, []
    have = {d.doc_id for d in previous.documents} if previous else set()
    recovered, lost = [], []
    for doc in listed:
        if doc.doc_id in have:
            continue
        path = store.source_path(doc.sha256)
        data = path.read_bytes() if path.is_file() else b""
        if hashlib.sha256(data).hexdigest() != doc.sha256:
            lost.append(doc)
            continue
        recovered.append((Source(data, doc.file_name, doc.source), doc.title, doc.scope))
    if lost:
        # Publishing now would drop them without a word: refuse, and say how to go on.
        names = "; ".join(f"{d.title} (from {hide_credentials(d.source)})" for d in lost)
        raise IndexProblem(
            f"The index's active snapshot is damaged ({problem}), and {len(lost)} document(s) it holds can be "
            f"neither carried over from an intact snapshot nor rebuilt, as their stored PDFs are missing: "
            f"{names}. Nothing was changed. Run `pixelrag repair --index {store.root}` to go back to the newest "
            "intact snapshot without them, then index them again."
        )
    return previous, recovered
