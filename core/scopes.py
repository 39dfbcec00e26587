"""Collections: which documents a question sees, and where a listing says each one is visible.

A document belongs to the shared collection ("shared", the operator's), a workspace ("slack:T1",
"discord:G1") or one channel of it ("slack:T1/C9"). A question asked in a channel searches that
channel's documents, its workspace's and the shared ones; nothing of another channel or workspace.
"""

from __future__ import annotations

from collections.abc import Sequence

from .records import SHARED_SCOPE, Document

CHANNEL_MARK = "/"  # Slack and Discord ids never hold one


def channel_scope(workspace: str, channel: str | None) -> str:
    """The collection of one channel of a workspace (the workspace's own when there is no channel, or
    no workspace: a DM outside one sees the shared collection only)."""
    if not channel or workspace == SHARED_SCOPE:
        return workspace
    return f"{workspace_of(workspace)}{CHANNEL_MARK}{channel}"


def workspace_of(scope: str) -> str:
    """"slack:T1/C9" -> "slack:T1": whose limits and usage a question counts against."""
    return scope.split(CHANNEL_MARK, 1)[0]


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


def own_and_shared(documents: Sequence[Document], scope: str) -> tuple[list[Document], list[Document]]:
    """A scope's listing in two groups: its own documents (its channel's and its workspace's), then the
    shared collection's."""
    own = own_scopes(scope)
    return [d for d in documents if d.scope in own], [d for d in documents if d.scope not in own]


def kind_of(scope: str) -> str:
    """"shared", "workspace" or "channel": where a listing says a document is visible."""
    if scope == SHARED_SCOPE:
        return "shared"
    return "channel" if channel_of(scope) else "workspace"
