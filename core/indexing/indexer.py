"""The Indexer: what a request asks (index paths or URLs, an attachment, re-index, move, remove) becomes one
build under the store's lock: the documents to build (with any the store found damaged or with damaged
images), each built by document.py, then published together, with the report of what happened.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from ..backends.base import Backend
from ..config import Settings
from ..errors import BadInput, Busy, IndexProblem
from ..ports import IndexBuild, PageStore
from ..records import SHARED_SCOPE, Document, IndexReport, Progress
from ..scopes import own_scopes, visible_scopes
from .document import DocumentBuilder, Pending, ProgressFn
from .page_rendering import PageRenderer
from .sources import Source, hide_credentials, is_url, read_recorded, read_source, recorded_path

log = logging.getLogger(__name__)


class Indexer:
    def __init__(self, settings: Settings, pages: PageStore, backend: Callable[[], Backend]):
        self.settings, self.pages, self.backend = settings, pages, backend
        self.renderer = PageRenderer(settings)
        self.documents = DocumentBuilder(settings, backend, self.renderer)
        self._building: set[tuple[str, str]] = set()
        self._requested: set[tuple[str, str]] = set()  # (scope, path or address) of index() calls under way
        self.build_lock = asyncio.Lock()  # one build at a time in this process (the store's lock spans processes)

    def close(self) -> None:
        """Stop the render worker processes, if any were started."""
        self.renderer.close()

    def indexing_now(self, scope: str | None = None) -> list[str]:
        """Names being built in this process; with `scope`, only those it will see (a chat surface must
        not show one workspace or channel another's file names)."""
        seen = visible_scopes(scope) if scope is not None else None
        return sorted(name for s, name in self._building if seen is None or s in seen)

    async def index(
        self,
        sources: Sequence[str],
        *,
        titles: Sequence[str | None] = (),
        scope: str = SHARED_SCOPE,
        progress: ProgressFn | None = None,
        operator: bool = False,
    ) -> IndexReport:
        """Index PDFs given as paths or URLs into one new snapshot. Paths only for the shared collection,
        unless `operator` (a folder the operator watches for a chat's collection): a chat names URLs."""
        check_titles(sources, titles)
        # What is asked for stays claimed until this build is over: the same address sent twice at once is
        # downloaded and built once, and the second request is told so.
        with _claimed(self._requested, {(scope, hide_credentials(item)) for item in sources}):
            return await self._index(sources, titles, scope, progress, operator)

    async def _index(
        self,
        sources: Sequence[str],
        titles: Sequence[str | None],
        scope: str,
        progress: ProgressFn | None,
        operator: bool,
    ) -> IndexReport:
        loaded, refused = [], []
        for i, item in enumerate(sources):
            if scope != SHARED_SCOPE and not operator and not is_url(item):
                # A chat user names a URL; a path would read a file of the machine the bot runs on.
                refused.append(f"{hide_credentials(item)}: only http and https URLs can be indexed from a chat.")
                continue
            try:
                source = await self._fetch(item, scope)
            except BadInput as exc:
                refused.append(str(exc))
                continue
            # A PDF `repair` set aside is indexed again as the documents it was: title, tenant, origin.
            restored = [] if is_url(item) or _at(titles, i) else read_recorded(recorded_path(Path(item)))
            loaded += [(replace(source, name=d.file_name, origin=d.source), d.title, d.scope) for d in restored] or [
                (source, _at(titles, i), scope)
            ]
        return await self._build(loaded, progress, refused)

    async def index_bytes(
        self, data: bytes, name: str, *, scope: str, title: str | None = None, progress: ProgressFn | None = None
    ) -> IndexReport:
        """Index a PDF received as a chat attachment."""
        if len(data) > self.settings.max_pdf_bytes:
            raise BadInput(
                f"{name}: {len(data) / 1e6:.0f} MB is over the {self.settings.max_pdf_bytes / 1e6:.0f} MB limit."
            )
        return await self._build([(Source(data, name, f"attachment:{name}"), title, scope)], progress, [])

    async def index_fetched(self, source: Source, scope: str, progress: ProgressFn | None = None) -> IndexReport:
        """Index a PDF already read from where it came from (a watched address's new version)."""
        return await self._build([(source, None, scope)], progress, [])

    async def reindex(self, scope: str, document: str | None = None, progress: ProgressFn | None = None) -> IndexReport:
        """Fetch the documents again from where they came from (the stored copy if that fails); each
        stays in its collection."""
        own = own_scopes(scope)
        targets = (
            [await self._find(scope, document)]
            if document
            else [d for d in await self.pages.documents(scope) if d.scope in own]
        )
        if not targets:
            raise BadInput("There is nothing to re-index here yet.")
        loaded = []
        for doc in targets:
            try:
                source = await self._fetch(doc.source, scope)
            except BadInput as exc:
                stored = await self.pages.source(doc.sha256)
                if stored is None:
                    raise BadInput(
                        f"{doc.title} cannot be fetched again ({exc}) and its stored copy is missing."
                    ) from None
                source = Source(stored, doc.file_name, doc.source)
            loaded.append((replace(source, name=doc.file_name), doc.title, doc.scope))
        return await self._build(loaded, progress, [], refresh=True)

    async def move(self, scope: str, document: str, to: str, progress: ProgressFn | None = None) -> IndexReport:
        """Give a document seen from `scope` another collection (`to`, one of `scope`'s own): its stored
        copy is published there and the old one dropped in the same publication, its pages reused."""
        doc = await self._find_own(scope, document)
        if to not in own_scopes(scope):
            raise BadInput(f"{doc.title} can only be moved to this channel or this workspace.")
        if doc.scope == to:
            raise BadInput(f"{doc.title} is already there.")
        stored = await self.pages.source(doc.sha256)
        if stored is None:
            raise BadInput(f"{doc.title} cannot be moved: its stored copy is missing. Re-index it first.")
        source = Source(stored, doc.file_name, doc.source)
        return await self._build([(source, doc.title, to)], progress, [], drop=doc)

    async def _find_own(self, scope: str, document: str) -> Document:
        """A document `scope` may change (a chat sees the shared collection but cannot change it)."""
        doc = await self._find(scope, document)
        if doc.scope not in own_scopes(scope):
            raise BadInput(f"{doc.title} belongs to the shared collection; only the operator can change it.")
        return doc

    async def _fetch(self, item: str, scope: str) -> Source:
        """A source read or downloaded; a download counts as indexing now (status shows it, as the
        chat's "starting…" message does)."""
        key = (scope, f"{hide_credentials(item)} (downloading)")
        self._building.add(key)
        try:
            return await read_source(item, self.settings)
        finally:
            self._building.discard(key)

    async def remove(self, scope: str, document: str, progress: ProgressFn | None = None) -> Document:
        doc = await self._find_own(scope, document)
        wait = (lambda holder: progress(Progress("wait", 0, 1, holder))) if progress else (lambda holder: None)
        async with self.build_lock:
            async with self.pages.building([build_key(doc.scope, doc.source)], wait, []) as build:
                if build.damaged or build.built_with is None:  # publishing would drop what a repair brings back
                    raise IndexProblem(
                        f"{doc.title} cannot be removed while the index is damaged: run `pixelrag repair` "
                        "(or index a document, which rebuilds what it can), then remove it."
                    )
                await build.publish(build.built_with, {doc.doc_id}, [])
        await self.pages.published()
        return doc

    async def _find(self, scope: str, document: str) -> Document:
        wanted = document.strip().lower()
        documents = await self.pages.documents(scope)
        found = [d for d in documents if wanted == d.doc_id] or [
            d for d in documents if wanted in (d.title.lower(), d.file_name.lower())
        ]
        if len(found) == 1:
            return found[0]
        if found:  # never a guess: removing the wrong one of two manuals loses a document
            which = "; ".join(f"{d.title} ({d.file_name}, id {d.doc_id})" for d in found)
            raise BadInput(f"{len(found)} documents here are called {document!r}: {which}. Name one by its id.")
        names = ", ".join(d.title for d in documents) or "none"
        raise BadInput(f"No document called {document!r} here. Indexed documents: {names}.")

    async def _build(
        self,
        loaded: Sequence[tuple[Source, str | None, str]],
        progress: ProgressFn | None,
        refused: list[str],
        refresh: bool = False,
        drop: Document | None = None,
    ) -> IndexReport:
        """Build (source, title or None, scope) into one new snapshot (without `drop`, when moving it)."""
        if not loaded:
            raise BadInput("\n".join(refused) or "Nothing to index.")
        with _claimed(self._building, {(scope, source.name) for source, _, scope in loaded}):
            try:
                progress = progress or (lambda p: None)
                warnings: list[str] = []
                locks = sorted(
                    {build_key(scope, source.origin) for source, _, scope in loaded}
                    | ({build_key(drop.scope, drop.source)} if drop else set())
                )
                async with self.build_lock:
                    async with self.pages.building(
                        locks, lambda holder: progress(Progress("wait", 0, 1, holder)), warnings
                    ) as build:
                        return await self._build_locked(build, loaded, progress, refused, warnings, refresh, drop)
            except OSError as exc:
                raise _disk_problem(exc) from exc

    async def _build_locked(
        self,
        build: IndexBuild,
        loaded,
        progress: ProgressFn,
        refused: list[str],
        warnings: list[str],
        refresh: bool,
        drop: Document | None,
    ) -> IndexReport:
        backend = self.backend()
        built_with = backend.built_with
        asked_from = {where for _, _, where in loaded}  # whose documents this build's messages may name
        warnings += [
            f"{title} was rebuilt from its stored PDF."
            for _, title, where in build.recovered
            if _sees(asked_from, where)
        ]
        items = list(loaded) + build.recovered + await self._to_redraw(build, warnings, asked_from)
        if build.built_with is not None:
            backend.check_index(build.built_with)
        if drop and not any(d.doc_id == drop.doc_id for d in build.documents):
            raise BadInput(f"{drop.title} was removed meanwhile; nothing was moved.")
        documents = [d for d in build.documents if not drop or d.doc_id != drop.doc_id]
        built: list[Pending] = []
        unchanged: list[Document] = []
        embedded = reused = 0
        seen: set[tuple[str, str]] = set()
        restored: set[str] = set()
        for source, title, where in items:
            if (where, source.sha256) in seen:  # the same file given twice is indexed once
                continue
            seen.add((where, source.sha256))
            same = next((d for d in documents if d.sha256 == source.sha256 and d.scope == where), None)
            retitled = title is not None and same is not None and title != same.title
            if same and not refresh and same.doc_id not in build.redraw and not retitled:
                unchanged.append(same)  # up to date: nothing to do, and not a failure
                if same.doc_id in build.unsourced:  # its stored copy was lost: this is the same PDF
                    await build.save_source(same, source.data)
                    restored.add(same.doc_id)
                continue
            try:
                pending, n_new, n_old = await self.documents.build(build, source, title, where, progress, warnings)
            except BadInput as exc:
                refused.append(str(exc))
                continue
            embedded, reused = embedded + n_new, reused + n_old
            if namesakes := _namesakes(documents + [b.document for b in built], pending.document, source):
                warnings.append(
                    f"{source.name}: another document here is also titled {pending.document.title!r} "
                    f"({', '.join(d.file_name for d in namesakes)}); to remove or re-index one of them, "
                    f"name it by its file name or id ({pending.document.doc_id})."
                )
            documents = _replaced(documents, source, where)
            built.append(pending)
        warnings += [
            f"{d.title}: its stored PDF is missing or damaged. Its pages are kept and still answer questions, "
            f"but it cannot be rebuilt after damage; index it again (from {hide_credentials(d.source)}) to store "
            "it anew."
            for d in _seen_from(asked_from, documents)
            if d.doc_id in build.unsourced and d.doc_id not in restored
        ]
        if not built and not build.damaged and not drop:
            if refused:
                raise BadInput("\n".join(refused))
            return IndexReport(
                (), build.pages_total, 0, 0, build.name, unchanged=tuple(unchanged), warnings=tuple(warnings)
            )

        progress(Progress("publish", 0, 1))
        removed = {d.doc_id for d in build.documents} - {d.doc_id for d in documents}
        name, pages_total = await build.publish(built_with, removed, [(b.document, b.pages, b.vectors) for b in built])
        await self.pages.published()  # a bot's next question should not wait for the new snapshot
        progress(Progress("publish", 1, 1))
        asked = {(where, source.sha256) for source, _, where in items[: len(loaded)]}
        return IndexReport(
            tuple(b.document for b in built if (b.document.scope, b.document.sha256) in asked),
            pages_total,
            embedded,
            reused,
            name,
            tuple(refused),
            tuple(unchanged),
            tuple(warnings),
        )

    async def _to_redraw(
        self, build: IndexBuild, warnings: list[str], asked_from: set[str]
    ) -> list[tuple[Source, str, str]]:
        """The documents with a damaged page image, from their stored PDFs: built again, their pages'
        words and vectors reused, their images drawn anew (said only where their titles may be shown)."""
        out = []
        shown = {d.doc_id for d in _seen_from(asked_from, build.documents)}
        for doc in build.documents:
            if doc.doc_id not in build.redraw:
                continue
            stored = await self.pages.source(doc.sha256)
            if stored is not None:
                out.append((Source(stored, doc.file_name, doc.source), doc.title, doc.scope))
            if doc.doc_id not in shown:
                continue
            warnings.append(
                f"{doc.title}: its damaged page images were drawn again from its stored PDF."
                if stored is not None
                else f"{doc.title}: some of its page images are damaged and its stored PDF is missing; index it "
                f"again (from {hide_credentials(doc.source)}) to draw them anew."
            )
        return out


def _namesakes(documents: list[Document], new: Document, source: Source) -> list[Document]:
    """Other documents of the new one's collection with its title (another file, another origin)."""
    return [
        d
        for d in documents
        if d.scope == new.scope and d.title == new.title and d.source != source.origin and d.sha256 != source.sha256
    ]


def _replaced(documents: list[Document], source: Source, where: str) -> list[Document]:
    """The documents without those a new version replaces: from the same place (path, URL, attachment name)
    or with the same content in this collection. Two "manual.pdf" from different URLs both stay."""
    return [d for d in documents if not (d.scope == where and (d.source == source.origin or d.sha256 == source.sha256))]


def check_titles(sources: Sequence[str], titles: Sequence[str | None]) -> None:
    """BadInput when more titles are given than PDFs."""
    if len(titles) > len(sources):
        raise BadInput(
            f"{len(titles)} titles were given for {len(sources)} PDF(s); give at most one --title per "
            "PDF, in the same order."
        )


def _disk_problem(exc: OSError) -> IndexProblem:
    """A full disk or a file over the size limit, said in one line; any other OSError raised as it is."""
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        cause, remedy = f"The disk holding the index is full ({exc.strerror})", "Free some space, then index again."
    elif exc.errno == errno.EFBIG:
        cause = f"A file of the index would pass the largest file size this system allows ({exc.strerror})"
        remedy = "Raise that limit (`ulimit -f`), then index again."
    else:
        raise exc
    return IndexProblem(f"{cause}: nothing was indexed, and what was indexed before is still searched. {remedy}")


@contextlib.contextmanager
def _claimed(held: set[tuple[str, str]], keys: set[tuple[str, str]]):
    """(scope, name) `keys` held in `held` for the block; Busy when one of them is held already."""
    if busy := keys & held:
        names = ", ".join(sorted(n for _, n in busy))
        raise Busy(f"{names} is already being indexed; you will see its summary when it is done.")
    held |= keys
    try:
        yield
    finally:
        held -= keys


def build_key(scope: str, origin: str) -> str:
    """What two builds of one document share, whatever its content: where it came from, in its scope."""
    return f"{scope}\n{origin}"


def _sees(asked_from: set[str], scope: str) -> bool:
    """Whether a build asked from these scopes may name a document of `scope`: every one for the operator
    (the shared scope), a chat's own and the shared ones for a chat."""
    return SHARED_SCOPE in asked_from or any(scope in visible_scopes(s) for s in asked_from)


def _seen_from(asked_from: set[str], documents: list[Document]) -> list[Document]:
    return [d for d in documents if _sees(asked_from, d.scope)]


def _at(items: Sequence, i: int):
    return items[i] if i < len(items) else None
