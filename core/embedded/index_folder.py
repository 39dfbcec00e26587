"""The on-disk index: content-addressed sources and page images, immutable snapshots, an active pointer.

index/
  ACTIVE                 name of the published snapshot (replaced atomically)
  sources/<sha256>.pdf   every indexed PDF, as received
  sources/<sha256>.documents.json   the documents it was indexed as (title, scope, origin): what
                         `repair` needs to give a PDF that no intact snapshot lists its name and tenant back
  recovered/             PDFs `repair` moved aside, each with its .documents.json, to be indexed again
  pages/<hash>.jpg       rendered page images, shared by snapshots
  snapshots/<name>/      manifest.json, pages.jsonl + pages.offsets.npy (words), vectors.npy, lexical.npz (BM25)
A build writes a complete snapshot under a temporary name, renames it, then swaps ACTIVE. A build
that fails or is killed never touches ACTIVE, so the previous snapshot stays in service.
"""

from __future__ import annotations

import json
import os
import shutil
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path

import numpy as np

from ..errors import IndexProblem
from ..indexing.sources import read_recorded, recorded_path
from ..ranking import bm25_file
from ..ranking.bm25 import LexicalIndex, lexical_index, lexical_texts
from ..records import Document, Page
from .disk import BuildLock, fsync_dir, not_a_folder, sha256_file, write_replacing
from .snapshot_format import WORDS_FILE, Catalog, Snapshot, line_offsets, read_words, word_from_row, write_words

FORMAT = 1
KEEP_SNAPSHOTS = 2
LEXICAL_FILE = "lexical.npz"
MANIFEST_KEYS = {"format", "name", "built_with", "documents", "pages", "vectors"}


def is_jpeg(path: Path) -> bool:
    """Whether a page image still starts and ends as a JPEG does (what garbage or a cut file fails): cheap
    enough to ask of every page when a build or `status` opens the index."""
    try:
        with open(path, "rb") as image:
            head = image.read(3)
            image.seek(-2, os.SEEK_END)
            return head == b"\xff\xd8\xff" and image.read(2) == b"\xff\xd9"
    except OSError:
        return False


class IndexFolder:
    def __init__(self, root: Path):
        self.root = Path(root)

    # --- content-addressed files -------------------------------------------------------------
    def source_path(self, sha256: str) -> Path:
        return self.root / "sources" / f"{sha256}.pdf"

    def page_image_path(self, content_hash: str) -> Path:
        return self.root / "pages" / f"{content_hash}.jpg"

    def save_source(self, document: Document, data: bytes) -> list[Path]:
        """The PDF and its record of what it was indexed as; the files this created (none were there)."""
        path, record = self.source_path(document.sha256), recorded_path(self.source_path(document.sha256))
        created = [p for p in (path, record) if not p.exists()]
        if not path.is_file() or sha256_file(path) != document.sha256:  # a damaged copy is replaced
            write_replacing(path, data)
        kept = [d for d in read_recorded(record) if (d.scope, d.doc_id) != (document.scope, document.doc_id)]
        write_replacing(record, json.dumps([asdict(d) for d in kept + [document]], ensure_ascii=False).encode())
        return created

    def save_page_image(self, content_hash: str, jpeg: bytes) -> list[Path]:
        path = self.page_image_path(content_hash)
        if path.is_file() and is_jpeg(path):
            return []
        created = [] if path.exists() else [path]
        write_replacing(path, jpeg)  # new, or in place of a damaged one
        return created

    # --- building ------------------------------------------------------------------------------
    def lock(self, on_wait: Callable[[str], None] = lambda holder: None) -> BuildLock:
        """Block until this process holds the index's build lock (other processes included);
        `on_wait(holder)` is called first when another build holds it."""
        self.check_folder()
        return BuildLock(self.root, on_wait)

    def check_folder(self) -> None:
        """IndexProblem when the index path cannot be an index folder."""
        if self.root.exists() and not self.root.is_dir():
            raise not_a_folder(self.root)

    def write_snapshot(
        self,
        built_with: dict,
        documents: list[Document],
        pages: list[Page],
        page_vectors: list[np.ndarray],
        reuse: tuple[LexicalIndex, list[int]] | None = None,
    ) -> str:
        """Write a complete snapshot and return its name; it is not active until publish(). With `reuse`
        (an earlier snapshot's BM25 and which of its pages the first of `pages` are), only the pages after
        those are tokenized for BM25."""
        now = time.time()  # names sort as they were built (newest_intact relies on it), two in a second too
        name = (
            time.strftime("%Y%m%d-%H%M%S-", time.localtime(now))
            + f"{int(now * 1e6) % 1_000_000:06d}-"
            + uuid.uuid4().hex[:4]
        )
        tmp = self.root / "snapshots" / f".tmp-{name}"
        if tmp.parent.exists() and not tmp.parent.is_dir():
            raise IndexProblem(
                f"Index {self.root}: {tmp.parent} is a file, not a folder; `pixelrag repair --index {self.root}` "
                "sets its PDFs aside to be indexed again."
            )
        tmp.mkdir(parents=True)
        try:
            self._write_snapshot_files(tmp, name, built_with, documents, pages, page_vectors, reuse)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)  # a full disk gets its space back at once
            raise
        os.rename(tmp, self.root / "snapshots" / name)
        return name

    def _write_snapshot_files(
        self,
        tmp: Path,
        name: str,
        built_with: dict,
        documents: list[Document],
        pages: list[Page],
        page_vectors: list[np.ndarray],
        reuse: tuple[LexicalIndex, list[int]] | None,
    ) -> None:
        dim = int(built_with["dim"])
        rows = [np.asarray(v, dtype=np.float32).reshape(-1, dim) for v in page_vectors]
        vectors = np.concatenate(rows) if rows else np.zeros((0, dim), np.float32)
        row_page = (
            np.concatenate([np.full(len(r), i, np.int32) for i, r in enumerate(rows)])
            if rows
            else np.zeros(0, np.int32)
        )
        np.save(tmp / "vectors.npy", vectors)
        np.save(tmp / "row_page.npy", row_page)
        write_words(tmp, pages)
        # BM25 is built once here, not each time a process opens the snapshot.
        if reuse is None:
            lexical = lexical_index(documents, pages)
        else:
            earlier, kept = reuse
            lexical = earlier.extended(kept, lexical_texts(documents, pages[len(kept) :]))
        bm25_file.save(lexical, tmp / LEXICAL_FILE)
        manifest = {
            "format": FORMAT,
            "name": name,
            "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "built_with": built_with,
            "documents": [asdict(d) for d in documents],
            "pages": [
                {
                    "doc_id": p.doc_id,
                    "page": p.page,
                    "content_hash": p.content_hash,
                    "width_pt": p.width_pt,
                    "height_pt": p.height_pt,
                }
                for p in pages
            ],
            "vectors": {"rows": int(vectors.shape[0]), "dim": dim},
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8")
        fsync_dir(tmp)

    def publish(self, name: str) -> None:
        pointer = self.root / "ACTIVE"
        tmp = self.root / f".ACTIVE.{uuid.uuid4().hex[:6]}"
        with open(tmp, "w") as out:
            out.write(name + "\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, pointer)
        fsync_dir(self.root)
        self._collect_garbage()

    def _collect_garbage(self) -> None:
        """Keep the newest readable snapshots, the active one and the files they reference; drop
        interrupted builds and snapshots whose manifest can no longer be read."""
        snap_dir = self.root / "snapshots"
        active = self.active_name()
        manifests = {}
        for name in self.snapshot_names():
            try:
                manifests[name] = self._read_manifest(name)
            except IndexProblem:
                continue  # damaged beyond use: its files are kept only if a readable snapshot needs them
        keep = set(list(manifests)[:KEEP_SNAPSHOTS]) | (set(manifests) & {active})
        for path in snap_dir.iterdir():
            if path.name not in keep:
                shutil.rmtree(path, ignore_errors=True)
        hashes, sources = set(), set()
        for name in keep:
            hashes |= {p["content_hash"] for p in manifests[name]["pages"]}
            sources |= {d["sha256"] for d in manifests[name]["documents"]}
        for path in (self.root / "pages").glob("*.jpg"):
            if path.stem not in hashes:
                path.unlink(missing_ok=True)
        for path in (self.root / "sources").glob("*.pdf"):
            if path.stem not in sources:
                path.unlink(missing_ok=True)
        for path in (self.root / "sources").glob("*.documents.json"):
            if path.name.split(".")[0] not in sources:
                path.unlink(missing_ok=True)
        # Files a killed or failed write left under their temporary names (this build holds the lock:
        # no other write is under way).
        for pattern in (".ACTIVE.*", "pages/.*", "sources/.*"):
            for path in self.root.glob(pattern):
                path.unlink(missing_ok=True)

    def snapshot_names(self) -> list[str]:
        """Complete snapshots, newest first (names start with their build time)."""
        folder = self.root / "snapshots"
        if not folder.is_dir():
            return []
        return sorted((p.name for p in folder.iterdir() if p.is_dir() and not p.name.startswith(".")), reverse=True)

    def documents_of(self, name: str) -> list[Document] | None:
        """The documents a snapshot's manifest lists; None when the manifest cannot be read."""
        try:
            return [Document(**d) for d in self._read_manifest(name)["documents"]]
        except (IndexProblem, TypeError):
            return None

    def orphaned_sources(self, intact: Snapshot | None) -> list[Path]:
        """Stored PDFs that `intact` (the snapshot to keep) does not list."""
        listed = {d.sha256 for d in intact.documents} if intact else set()
        return sorted(p for p in (self.root / "sources").glob("*.pdf") if p.stem not in listed)

    def newest_intact(self) -> Snapshot | None:
        """The newest snapshot that passes its checks, whichever is active."""
        for name in self.snapshot_names():
            try:
                return self.open(name)
            except IndexProblem:
                continue
        return None

    # --- opening -------------------------------------------------------------------------------
    def active_name(self) -> str | None:
        self.check_folder()
        pointer = self.root / "ACTIVE"
        if not pointer.is_file():
            if self.snapshot_names():  # published before: "nothing indexed" would hide every document
                raise IndexProblem(
                    f"Index {self.root}: its ACTIVE pointer is missing; `pixelrag repair --index "
                    f"{self.root}` makes the newest intact snapshot active."
                )
            return None
        name = pointer.read_bytes().strip()
        if not name.isascii() or not name.decode().replace("-", "").isalnum():  # we write a snapshot's name
            raise IndexProblem(
                f"Index {self.root}: its ACTIVE pointer is damaged; `pixelrag repair --index "
                f"{self.root}` makes the newest intact snapshot active."
            )
        return name.decode()

    def catalog(self) -> Catalog | None:
        name = self.active_name()
        if name is None:
            return None
        manifest = self._read_manifest(name)
        return Catalog(
            name, manifest["built_with"], [Document(**d) for d in manifest["documents"]], len(manifest["pages"])
        )

    def _read_manifest(self, name: str) -> dict:
        path = self.root / "snapshots" / name / "manifest.json"
        try:
            manifest = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise IndexProblem(f"Index {self.root}: snapshot {name} has no manifest.json; rebuild the index.") from None
        except OSError as exc:  # snapshots/ replaced by a file, say
            raise IndexProblem(
                f"Index {self.root}: snapshot {name} cannot be read ({exc.strerror}); `pixelrag repair --index "
                f"{self.root}` makes the newest intact snapshot active."
            ) from None
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise IndexProblem(f"Index {self.root}: snapshot {name} has a damaged manifest ({exc}).") from None
        if not isinstance(manifest, dict) or not MANIFEST_KEYS <= set(manifest):
            raise IndexProblem(f"Index {self.root}: snapshot {name} has an incomplete manifest; rebuild the index.")
        return manifest

    def open(self, name: str | None = None, *, serving: bool = False) -> Snapshot | None:
        """A snapshot (the active one by default), verified; None when nothing was ever indexed here.
        For serving, pages come without their words (read per page on demand) and the source PDFs are
        checked to exist but not hashed: answering never reads them, and hashing every PDF, like
        parsing every page's words, would make opening take as long as the collection is large."""
        name = name or self.active_name()
        if name is None:
            return None
        manifest = self._read_manifest(name)
        if manifest.get("format") != FORMAT:
            raise IndexProblem(f"Index {self.root}: format {manifest.get('format')} is not supported; rebuild it.")
        folder = self.root / "snapshots" / name
        documents = [Document(**d) for d in manifest["documents"]]
        offsets = None
        try:
            vectors = np.load(folder / "vectors.npy", mmap_mode="r")
            row_page = np.load(folder / "row_page.npy")
            if serving:  # words come later, per page
                offsets = line_offsets(folder)
                words: list[list] = [[]] * len(offsets)
            else:
                words = read_words(folder)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise IndexProblem(f"Index {self.root}: snapshot {name} is damaged ({exc}); rebuild the index.") from None
        pages = [
            Page(
                p["doc_id"],
                p["page"],
                p["content_hash"],
                p["width_pt"],
                p["height_pt"],
                tuple(word_from_row(r) for r in ws),
            )
            for p, ws in zip(manifest["pages"], words)
        ]
        self._verify(manifest, documents, pages, len(words), vectors, row_page)
        return Snapshot(
            name,
            manifest["built_with"],
            documents,
            pages,
            np.asarray(vectors),
            row_page,
            folder / WORDS_FILE if serving else None,
            offsets,
            self.unsourced(documents, hashed=not serving),
            frozenset() if serving else self.redraw(pages),
        )

    def unsourced(self, documents: list[Document], hashed: bool) -> frozenset[str]:
        """The documents whose stored PDF is missing, or (`hashed`) does not match its recorded hash.
        Not damage to the index: their pages answer as before, and a build keeps them."""
        out = set()
        for d in documents:
            source = self.source_path(d.sha256)
            if not source.is_file() or (hashed and sha256_file(source) != d.sha256):
                out.add(d.doc_id)
        return frozenset(out)

    def redraw(self, pages: list[Page]) -> frozenset[str]:
        """The documents with a page image that is no longer a whole JPEG: a build draws them again."""
        return frozenset(p.doc_id for p in pages if not is_jpeg(self.page_image_path(p.content_hash)))

    def lexical_path(self, name: str) -> Path:
        return self.root / "snapshots" / name / LEXICAL_FILE

    def _verify(self, manifest, documents, pages, word_lists: int, vectors, row_page) -> None:
        problems: list[str] = []
        dim = int(manifest["built_with"]["dim"])
        if vectors.ndim != 2 or vectors.shape[1] != dim:
            problems.append(f"vectors have shape {vectors.shape}, expected (*, {dim})")
        if vectors.shape[0] != manifest["vectors"]["rows"] or row_page.shape[0] != vectors.shape[0]:
            problems.append(f"{vectors.shape[0]} vector rows, the manifest says {manifest['vectors']['rows']}")
        if word_lists != len(pages):
            problems.append(f"{word_lists} word lists for {len(pages)} pages")
        if len(row_page) and (row_page.min() < 0 or row_page.max() >= len(pages)):
            problems.append("vector rows point at pages that do not exist")
        by_doc: dict[str, list[int]] = {}
        folder = self.root / "pages"
        images = set(os.listdir(folder)) if folder.is_dir() else set()  # one listing, not a stat per page
        for p in pages:
            by_doc.setdefault(p.doc_id, []).append(p.page)
            if f"{p.content_hash}.jpg" not in images:
                problems.append(f"page image of {p.doc_id} p. {p.page} is missing")
        for d in documents:
            if sorted(by_doc.get(d.doc_id, [])) != list(range(1, d.page_count + 1)):
                problems.append(
                    f"{d.title}: pages {sorted(by_doc.get(d.doc_id, []))[:5]}… do not match its {d.page_count} pages"
                )
        unknown = set(by_doc) - {d.doc_id for d in documents}
        if unknown:
            problems.append(f"pages belong to unknown documents {sorted(unknown)}")
        if problems:
            raise IndexProblem(
                f"Index {self.root} (snapshot {manifest['name']}) failed its checks: " + "; ".join(problems[:8])
            )
