"""Collections: which documents a question sees, and where a listing says each one is visible.

A document belongs to the shared collection ("shared", the operator's), a workspace ("slack:T1",
"discord:G1") or one channel of it ("slack:T1/C9"). A question asked in a channel searches that
channel's documents, its workspace's and the shared ones; nothing of another channel or workspace.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .errors import BadInput
from .records import SHARED_SCOPE, Document

if TYPE_CHECKING:
    from .ports import ThreadMemory

CHANNEL_MARK = "/"  # Slack and Discord ids never hold one
PLACES = ("channel", "workspace")  # what a chat names as a document's collection
INDEXING = "indexing"  # the workspace's choice (ThreadMemory.choice) of where chat indexing goes


def channel_scope(workspace: str, channel: str | None) -> str:
    """The collection of one channel of a workspace (the workspace's own when there is no channel, or
    no workspace: a DM outside one sees the shared collection only)."""
    if not channel or workspace == SHARED_SCOPE:
        return workspace
    return f"{workspace_of(workspace)}{CHANNEL_MARK}{channel}"


def workspace_of(scope: str) -> str:
    """ "slack:T1/C9" -> "slack:T1": whose limits and usage a question counts against."""
    return scope.split(CHANNEL_MARK, 1)[0]


def tenant(scope: str) -> tuple[str, str]:
    """(platform, workspace) of a scope: "slack:T1/C9" -> ("slack", "T1"); the shared collection -> ("shared", "")."""
    platform, _, workspace = workspace_of(scope).partition(":")
    return platform, workspace


def channel_of(scope: str) -> str | None:
    return scope.split(CHANNEL_MARK, 1)[1] if CHANNEL_MARK in scope else None


def visible_scopes(scope: str) -> list[str]:
    """The collections a question asked in `scope` searches: the shared one, its workspace's, its channel's."""
    out = [SHARED_SCOPE]
    for s in (workspace_of(scope), scope):
        if s not in out:
            out.append(s)
    return out


def own_scopes(scope: str) -> list[str]:
    """The collections `scope` may change: a chat all it sees but the operator's shared one; the
    operator (the shared scope) the shared one."""
    return [s for s in visible_scopes(scope) if s != SHARED_SCOPE or scope == SHARED_SCOPE]


def visible(documents: Sequence[Document], scope: str) -> list[Document]:
    seen = visible_scopes(scope)
    return [d for d in documents if d.scope in seen]


def collection(scope: str, place: str) -> str:
    """The collection a chat in `scope` names by "channel" or "workspace"."""
    if place not in PLACES:
        raise BadInput(f"{place!r} is not a place for documents: say channel or workspace.")
    return scope if place == "channel" else workspace_of(scope)


async def indexing_place(threads: ThreadMemory, scope: str) -> str:
    """Where the workspace of `scope` has chosen chat indexing to go: "workspace" unless set to "channel"."""
    return await threads.choice(*tenant(scope), INDEXING) or "workspace"


async def indexing_scope(threads: ThreadMemory, scope: str, place: str | None = None) -> str:
    """The collection a document indexed from a chat in `scope` joins: the one named, or the workspace's choice."""
    return collection(scope, place or await indexing_place(threads, scope))


async def choose_indexing_place(threads: ThreadMemory, scope: str, place: str) -> None:
    collection(scope, place)  # refuses what is not a place
    await threads.choose(*tenant(scope), INDEXING, place)


def grouped(documents: Sequence[Document], scope: str) -> list[tuple[str, list[Document]]]:
    """A listing's groups, each with its kind_of ("channel", "workspace", "shared"), the narrowest first."""
    kinds: dict[str, list[Document]] = {"channel": [], "workspace": [], "shared": []}
    for d in visible(documents, scope):
        kinds[kind_of(d.scope)].append(d)
    return [(kind, docs) for kind, docs in kinds.items() if docs]


def own_and_shared(documents: Sequence[Document], scope: str) -> tuple[list[Document], list[Document]]:
    """A scope's listing in two groups: its own documents (its channel's and its workspace's), then the
    shared collection's."""
    own = own_scopes(scope)
    return [d for d in documents if d.scope in own], [d for d in documents if d.scope not in own]


def kind_of(scope: str) -> str:
    """ "shared", "workspace" or "channel": where a listing says a document is visible."""
    if scope == SHARED_SCOPE:
        return "shared"
    return "channel" if channel_of(scope) else "workspace"
