"""Damage to an index folder: what a build over it starts from, and which documents it rebuilds from their
stored PDFs, so that a build never loses documents it was not asked to touch (`recover`); and `repair`,
which makes the newest intact snapshot active and sets aside the PDFs no intact snapshot lists."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path

from ..errors import IndexProblem
from ..indexing.sources import Source, hide_credentials, read_recorded, recorded_path
from ..records import Document
from .disk import write_replacing
from .index_folder import IndexFolder
from .snapshot_format import Snapshot


def recover(store: IndexFolder, problem: IndexProblem, warnings: list[str]) -> tuple[Snapshot | None, list]:
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


def repair(store: IndexFolder) -> tuple[str | None, list[tuple[Path, list[Document]]]]:
    """Activate the newest intact snapshot (or none) and move orphaned PDFs to recovered/, each with
    the documents it was indexed as (its record, else what any readable manifest says of it)."""
    root = store.root
    for part in ("snapshots", "pages"):  # a file in a folder's place holds nothing of the index
        if (root / part).exists() and not (root / part).is_dir():
            (root / part).unlink()
    intact = store.newest_intact()
    moved = []
    for path in store.orphaned_sources(intact):
        target = root / "recovered" / path.name
        target.parent.mkdir(parents=True, exist_ok=True)
        documents = read_recorded(recorded_path(path)) or _listed_as(store, path.stem)
        write_replacing(recorded_path(target), json.dumps([asdict(d) for d in documents], ensure_ascii=False).encode())
        os.replace(path, target)
        recorded_path(path).unlink(missing_ok=True)
        moved.append((target, documents))
    if intact is not None:
        store.publish(intact.name)
    else:  # every snapshot failed its checks and their PDFs are set aside: the index starts empty
        (root / "ACTIVE").unlink(missing_ok=True)
        shutil.rmtree(root / "snapshots", ignore_errors=True)
    return (intact.name if intact else None), moved


def _listed_as(store: IndexFolder, sha256: str) -> list[Document]:
    """The documents any snapshot whose manifest can be read lists for a PDF (an index from before the
    records were kept)."""
    found: dict[tuple[str, str], Document] = {}
    for name in store.snapshot_names():
        for doc in store.documents_of(name) or []:
            if doc.sha256 == sha256:
                found.setdefault((doc.scope, doc.doc_id), doc)
    return list(found.values())
