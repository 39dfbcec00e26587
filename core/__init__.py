"""pixelrag's core, as the chat adapters and the CLI see it: this module is its public face.

Adapters import from here only. Behind it: indexing (core/indexing.py), answering
(core/answering.py) and the conversation flow (core/conversation.py) over one store and one
backend (core/backends/); docs/ARCHITECTURE.md draws the whole map.
"""

from .config import Settings, flag, load_settings, number
from .conversation import Conversation, Reply, rate_answer
from .documents import hide_credentials, looks_like_pdf
from .embedded.threads import ThreadKey, ThreadStore
from .errors import (
    BadInput,
    Busy,
    DatabaseUnavailable,
    IndexProblem,
    PixelragError,
    RemoteError,
    failure_reason,
    megabytes,
)
from .markup import inert, literal
from .metrics import watch_loop_lag
from .ports import ThreadMemory
from .postgres.migration import migrate_index, migrate_threads
from .query_images import attachment_kind, validate_query_image
from .question_ids import QUESTION_ID
from .records import (
    RATINGS,
    SHARED_SCOPE,
    TOPICS,
    Answer,
    Citation,
    Document,
    Exchange,
    Highlight,
    IndexReport,
    Progress,
    QueryImage,
    Rated,
    Step,
    TextDelta,
    Turn,
)
from .scopes import grouped, own_and_shared
from .service import Service
from .storage import thread_memory

__all__ = [
    "Settings",
    "flag",
    "load_settings",
    "number",
    "Conversation",
    "Reply",
    "rate_answer",
    "hide_credentials",
    "looks_like_pdf",
    "inert",
    "literal",
    "watch_loop_lag",
    "BadInput",
    "Busy",
    "DatabaseUnavailable",
    "IndexProblem",
    "PixelragError",
    "RemoteError",
    "failure_reason",
    "megabytes",
    "attachment_kind",
    "QUESTION_ID",
    "validate_query_image",
    "RATINGS",
    "SHARED_SCOPE",
    "TOPICS",
    "Answer",
    "Citation",
    "Document",
    "Exchange",
    "Highlight",
    "IndexReport",
    "Progress",
    "QueryImage",
    "Rated",
    "Step",
    "TextDelta",
    "Turn",
    "own_and_shared",
    "grouped",
    "Service",
    "ThreadMemory",
    "thread_memory",
    "migrate_index",
    "migrate_threads",
    "ThreadKey",
    "ThreadStore",
]
