"""pixelrag's core, as the chat adapters and the CLI see it: this module is its public face.

Adapters import from here only, and only what is listed in `__all__`: exactly the names bot/ uses,
sorted (tests/core/test_public_face.py holds both). Behind it: indexing (core/indexing/), answering
(core/answering/) and the conversation around it (core/chat/) over one store and one backend
(core/backends/); docs/ARCHITECTURE.md draws the whole map.
"""

from .answering.query_images import attachment_kind, validate_query_image
from .api_keys import add_key, key_scope, revoke_key
from .chat.conversation import Conversation, rate_answer
from .chat.delivery import Delivery
from .chat.gaps import Gap, coverage_gaps, gaps_csv, page_label
from .chat.limits import LimitReached
from .chat.usage import summary as usage_summary
from .config import Settings, flag, load_settings, number
from .diagnosis import FAIL, OK, SKIP, Finding, Findings
from .embedded.threads import EmbeddedThreads, ThreadKey
from .errors import (
    BadInput,
    Busy,
    DatabaseUnavailable,
    PixelragError,
    RemoteError,
    failure_reason,
    first_line,
    megabytes,
    plural,
)
from .indexing.queue_status import queue_status
from .indexing.requests import IndexRequests, told_later
from .indexing.sources import hide_credentials, is_url, looks_like_pdf
from .indexing.watching import failing_to_tell, new_source, schedule_seconds, unwatch, watch_address, watched_named
from .indexing.worker import Worker, job_runner, new_jobs, shown_source
from .links import LinkRefused
from .markup import literal
from .metrics import watch_loop_lag
from .page_viewer import LinkChanged, PageView
from .ports import JobQueue, ThreadMemory
from .postgres.from_folder import migrate_index, migrate_threads
from .question_ids import QUESTION_ID
from .records import (
    RATINGS,
    SHARED_SCOPE,
    Answer,
    Citation,
    Document,
    GapQuestion,
    IndexReport,
    PagesFound,
    Progress,
    QueryImage,
    Rated,
    Step,
    TextDelta,
    Turn,
    WatchedSource,
)
from .scopes import (
    channel_of,
    channel_scope,
    choose_indexing_place,
    collection,
    grouped,
    indexing_place,
    indexing_scope,
    kind_of,
    own_and_shared,
    own_scopes,
    tenant,
    workspace_of,
)
from .service import Service
from .storage import existing_job_queue, job_queue, thread_memory

__all__ = [
    "Answer",
    "BadInput",
    "Busy",
    "Citation",
    "Conversation",
    "DatabaseUnavailable",
    "Delivery",
    "Document",
    "EmbeddedThreads",
    "FAIL",
    "Finding",
    "Findings",
    "Gap",
    "GapQuestion",
    "IndexReport",
    "IndexRequests",
    "JobQueue",
    "LimitReached",
    "LinkChanged",
    "LinkRefused",
    "OK",
    "PageView",
    "PagesFound",
    "PixelragError",
    "Progress",
    "QUESTION_ID",
    "QueryImage",
    "RATINGS",
    "Rated",
    "RemoteError",
    "SHARED_SCOPE",
    "SKIP",
    "Service",
    "Settings",
    "Step",
    "TextDelta",
    "ThreadKey",
    "ThreadMemory",
    "Turn",
    "WatchedSource",
    "Worker",
    "add_key",
    "attachment_kind",
    "channel_of",
    "channel_scope",
    "choose_indexing_place",
    "collection",
    "coverage_gaps",
    "existing_job_queue",
    "failing_to_tell",
    "failure_reason",
    "first_line",
    "flag",
    "gaps_csv",
    "grouped",
    "hide_credentials",
    "indexing_place",
    "indexing_scope",
    "is_url",
    "job_queue",
    "job_runner",
    "key_scope",
    "kind_of",
    "literal",
    "load_settings",
    "looks_like_pdf",
    "megabytes",
    "migrate_index",
    "migrate_threads",
    "new_jobs",
    "new_source",
    "number",
    "own_and_shared",
    "own_scopes",
    "page_label",
    "plural",
    "queue_status",
    "rate_answer",
    "revoke_key",
    "schedule_seconds",
    "shown_source",
    "tenant",
    "thread_memory",
    "told_later",
    "unwatch",
    "usage_summary",
    "validate_query_image",
    "watch_address",
    "watch_loop_lag",
    "watched_named",
    "workspace_of",
]
