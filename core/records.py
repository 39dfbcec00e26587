"""Frozen records passed between the pipeline stages and to the chat adapters.

Boxes are normalized (x0, y0, x1, y1) in 0..1 with the origin at the top-left of the rendered
page. Page numbers are 1-based.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Literal

from .cleaning import clean_text

Box = tuple[float, float, float, float]

SHARED_SCOPE = "shared"  # documents indexed with the CLI: the operator's collection
# What a question is about; readers classify, chat adapters label and tint answers by it.
TOPICS = ("warranty", "complaint", "service", "instructions", "price", "other")


@dataclass(frozen=True)
class Word:
    text: str
    box: Box
    line: int  # words with the same line number form one printed line
    source: Literal["text", "ocr"] = "text"


@dataclass(frozen=True)
class Document:
    doc_id: str  # 16 hex digits of sha256(scope, source sha256): unique per tenant
    title: str
    file_name: str
    sha256: str
    page_count: int
    scope: str = SHARED_SCOPE
    source: str = ""  # path or URL it came from


@dataclass(frozen=True)
class Page:
    doc_id: str
    page: int  # 1-based
    content_hash: str  # sha256 of the rendered pixels and render settings
    width_pt: float
    height_pt: float
    words: tuple[Word, ...] = ()

    @property
    def key(self) -> tuple[str, int]:
        return (self.doc_id, self.page)

    @property
    def text(self) -> str:
        lines: dict[int, list[str]] = {}
        for w in self.words:
            lines.setdefault(w.line, []).append(w.text)
        return "\n".join(" ".join(ws) for _, ws in sorted(lines.items()))


@dataclass(frozen=True)
class QueryImage:
    data: bytes
    mime_type: str
    name: str = "screenshot"


@dataclass(frozen=True)
class Hit:
    """One retrieved page."""

    doc_id: str
    title: str
    page: int
    score: float
    content_hash: str  # of the rendered page JPEG


@dataclass(frozen=True)
class Highlight:
    kind: Literal["exact", "approximate"]
    box: Box
    pdf_rect: tuple[float, float, float, float] | None = None  # PDF points, top-left origin


@dataclass(frozen=True)
class Citation:
    doc_id: str
    title: str
    page: int
    quote: str
    highlight: Highlight | None = None
    preview_path: str | None = None  # set when the images were saved to files (the CLI)
    crop_path: str | None = None
    preview: bytes | None = field(default=None, repr=False)  # page preview, JPEG
    crop: bytes | None = field(default=None, repr=False)  # highlight crop, PNG
    url: str | None = None  # the page viewer's link to this page (PIXELRAG_PUBLIC_URL set), else None

    @property
    def label(self) -> str:
        return f"{self.title}, p. {self.page}"


@dataclass(frozen=True)
class Exchange:
    """One earlier question and answer of a thread."""

    question: str
    answer: str
    interpreted: str = ""
    cited: tuple[tuple[str, int], ...] = ()  # (doc_id, page)
    retrieved: tuple[tuple[str, int], ...] = ()  # (doc_id, page), best first: kept for feedback exports
    scope: str = ""  # the collection it was asked in
    gap: str = ""  # why the documents did not answer it (GAP_REASONS), or ""
    vector: bytes = field(default=b"", repr=False)  # the query's embedding (float16): gaps are grouped by it

    @classmethod
    def of(cls, question: str, answer: Answer, scope: str = "") -> Exchange:
        """A finished turn as history for the next one (a bare screenshot is remembered as such)."""
        return cls(
            question or "(screenshot)",
            answer.clarifying_question or answer.markdown,
            answer.interpreted_question,
            tuple((c.doc_id, c.page) for c in answer.citations),
            tuple((h.doc_id, h.page) for h in answer.hits),
            scope,
            answer.gap,
            answer.query_vector,
        )


JOB_STATES = ("queued", "running", "done", "failed")
# index: a path or address; upload: a chat attachment's bytes, kept with the job until it ends; reindex: a
# collection's documents (or one) fetched again; check: a watched source (core/indexing/watching.py)
JOB_KINDS = ("index", "upload", "reindex", "check")


@dataclass(frozen=True)
class Job:
    """One document to index, kept in the job queue (core/ports.JobQueue) until a worker has done it."""

    id: str
    source: str  # index: a path or an http(s) address; upload: its file name; reindex: a document or "";
    # check: the watched source's id
    scope: str  # the collection it joins
    title: str | None = None
    kind: str = "index"  # JOB_KINDS
    batch: str = ""  # the request it belongs to: one command's, one chat message's
    state: str = "queued"  # JOB_STATES
    worker: str = ""  # who holds it (running) or last held it
    lease_until: float = 0.0  # unix time: a running job whose lease has passed is taken again
    attempts: int = 0  # how often it was taken
    created: float = 0.0
    finished: float = 0.0
    progress: dict = field(default_factory=dict)  # {"stage", "done", "total"} as the worker last said
    outcome: str = ""  # done: what was indexed; failed: why
    result: dict = field(default_factory=dict)  # done: its IndexReport as JSON; failed: {"error": class name}
    notify: str = ""  # the chat thread that asked ("slack:T1:C9:1700000000.000100"), told when the request ends
    told: float = 0.0  # when that thread was told


@dataclass(frozen=True)
class WatchedSource:
    """A folder or an address kept current in a collection: checked on its schedule, new and changed
    PDFs indexed, gone ones removed; a failing one keeps its last good documents."""

    id: str
    location: str  # an absolute folder path, or an http(s) address of a PDF
    scope: str
    every_s: float  # how often it is checked
    recursive: bool = False  # a folder's subfolders too
    created: float = 0.0
    next_check: float = 0.0  # unix time; a due source gets a check job
    checked: float = 0.0  # when the last check ended
    result: str = ""  # what the last check found, or why it failed
    failing_since: float = 0.0  # 0 while it succeeds
    failures: int = 0  # checks failed in a row (the retry waits double each time)
    seen: dict = field(default_factory=dict)  # folder: {path: [size, mtime_ns]}; address: its validators
    notify: str = ""  # the chat channel that added it ("slack:T1:C9", "discord:G:C"), told when it keeps failing
    told: float = 0.0  # when that channel was told of the current failure


@dataclass(frozen=True)
class ApiKey:
    """A key of the HTTP API as kept: its name, its collection, when made and revoked (never the key)."""

    name: str
    scope: str
    created: float
    revoked: float | None = None


@dataclass(frozen=True)
class Rated:
    """A turn whose answer someone rated (👍 good / 👎 bad), as the feedback export lists it."""

    turn_id: int
    platform: str
    workspace: str
    question: str
    interpreted: str
    answer: str
    retrieved: tuple[tuple[str, int], ...]  # (doc_id, page)
    cited: tuple[tuple[str, int], ...]
    user: str
    rated_at: float  # unix time


RATINGS = ("good", "bad")

# Why a question is a coverage gap: what the answer said, or what someone said of it.
LIMITATION, ABSTENTION, RATED_BAD = "limitation", "abstention", "rated bad"
GAP_REASONS = (LIMITATION, ABSTENTION, RATED_BAD)


@dataclass(frozen=True)
class GapQuestion:
    """A question the documents could not answer (core/chat/gaps.py groups them)."""

    turn_id: int
    scope: str  # the collection it was asked in ("" when asked before pixelrag kept it)
    platform: str
    workspace: str
    question: str
    interpreted: str
    reason: str  # one of GAP_REASONS; a rated-bad answer is "rated bad" whatever else it said
    asked_at: float  # unix time
    retrieved: tuple[tuple[str, int], ...]  # (doc_id, page), best first
    vector: bytes = field(default=b"", repr=False)


@dataclass(frozen=True)
class Turn:
    question: str
    images: tuple[QueryImage, ...] = ()
    scope: str = SHARED_SCOPE  # tenant: "shared", "slack:T123", "discord:G456"
    thread: str = ""  # opaque thread reference, for logs
    history: tuple[Exchange, ...] = ()  # oldest first

    def __post_init__(self) -> None:
        object.__setattr__(self, "question", clean_text(self.question))


@dataclass(frozen=True)
class Candidate:
    """One of the pages the Jev selector was shown, in the dense ranking's order."""

    doc_id: str
    page: int
    dense_rank: int  # 1-based
    probability: float | None = None  # Jev's relevance noul; None when it gave no usable one


@dataclass(frozen=True)
class Selection:
    """What the TypeSafe Jev page selector did for one question (core/jev/selector.py), shown in --json."""

    model: str
    selected: bool  # False: it fell back to the dense ranking, for `fallback`
    fallback: str | None = None
    candidates: tuple[Candidate, ...] = ()
    topic: str | None = None  # set only at confidence >= 0.65 (records.TOPICS)
    topic_confidence: float | None = None
    task: str | None = None  # set only at confidence >= 0.65 (core/jev/decisions.TASKS)
    task_confidence: float | None = None


@dataclass(frozen=True)
class Answer:
    question: str
    interpreted_question: str
    markdown: str
    hits: tuple[Hit, ...] = ()
    citations: tuple[Citation, ...] = ()
    limitations: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()  # soft failures and dropped citations, shown to the user
    topic: str = "other"
    clarifying_question: str | None = None
    backend: str = "local"
    timings: dict[str, float] = field(default_factory=dict)
    selector: Selection | None = None  # None unless the Jev page selector is on
    query_vector: bytes = field(default=b"", repr=False)  # the query's embedding as float16 (gaps group by it)

    @property
    def gap(self) -> str:
        """LIMITATION or ABSTENTION when the documents did not answer, else "" (a clarifying question or a
        page search is neither)."""
        if self.clarifying_question or (not self.markdown and self.hits):
            return ""
        if not self.citations:
            return ABSTENTION
        return LIMITATION if self.limitations else ""

    @property
    def topic_label(self) -> str | None:
        """The topic to label (and tint) the answer with: only one Jev decided confidently."""
        return self.selector.topic if self.selector else None

    @property
    def changed_question(self) -> bool:
        return self.interpreted_question.strip() != self.question.strip()

    def to_json(self) -> dict:
        """The record as JSON-ready data; images appear by their paths, not their bytes."""
        data = asdict(self)
        del data["query_vector"]
        for citation in data["citations"]:
            del citation["preview"], citation["crop"]
        return data


@dataclass(frozen=True)
class IndexReport:
    documents: tuple[Document, ...]
    pages_total: int
    pages_embedded: int  # pages whose vectors were computed in this build
    pages_reused: int  # pages whose vectors came from the previous snapshot
    snapshot: str | None  # what is published; None only when nothing ever was
    skipped: tuple[str, ...] = ()  # messages about inputs that were refused (failures)
    unchanged: tuple[Document, ...] = ()  # asked for, already indexed as they are: nothing to do
    warnings: tuple[str, ...] = ()  # what happened besides (a damaged index repaired, say)


# --- what the backends take and give (see core/ports.py) ---------------------------------------


@dataclass(frozen=True)
class PageInput:
    """A page to embed."""

    page: Page  # with text-layer and OCR words
    jpeg: bytes
    title: str


@dataclass(frozen=True)
class ReaderPage:
    """A retrieved page given to the reader."""

    hit: Hit
    page: Page
    jpeg: bytes


@dataclass(frozen=True)
class DraftCitation:
    doc_id: str
    page: int
    quote: str
    box: Box | None = None  # reader-estimated region, normalized 0..1


@dataclass(frozen=True)
class Draft:
    """What a reader returns before citations are checked and located."""

    markdown: str
    citations: tuple[DraftCitation, ...] = ()
    limitations: tuple[str, ...] = ()
    topic: str = "other"


@dataclass(frozen=True)
class Resolution:
    question: str  # standalone question to retrieve with
    clarify: str | None = None  # set when the reference is ambiguous: ask this instead


# --- what an answer shows while it is worked on (adapters that stream) --------------------------------


@dataclass(frozen=True)
class Step:
    """A stage of answering a person waits on: "context", "search", "read" or "cite". Each step is
    reported "in_progress", then "complete"; a failure leaves it in progress for the adapter to mark."""

    key: str
    title: str  # "Searching 3 documents", "Reading p. 12 of manual.pdf"
    status: str = "in_progress"
    detail: str = ""  # "4 pages found", "Understood as: ..."


@dataclass(frozen=True)
class TextDelta:
    """More of the answer's Markdown, as the reader writes it (appended to what came before)."""

    text: str


@dataclass(frozen=True)
class PagesFound:
    """The pages the reader is about to read, best first: a listener may show them before the answer."""

    hits: tuple[Hit, ...]


AnswerEvent = Step | TextDelta | PagesFound
EventSink = Callable[[AnswerEvent], None]  # called on the event loop; must not block


@dataclass(frozen=True)
class Progress:
    # "wait" (for another build; document names who holds it), "read" (render, text layer, OCR), "embed", "publish"
    stage: str
    done: int
    total: int
    document: str = ""
    # The document's pace so far ("embed" records, once it can be told): pages done per second since its
    # build began, and the seconds its remaining pages take at that pace.
    per_second: float = 0.0
    seconds_left: float | None = None
