"""What a chat message asks for, read the same way on Slack and Discord."""

from __future__ import annotations

import re

# "index this" (or "reindex", "index these", "index the attached") as the whole message: a PDF shared
# with a question that merely contains the word "index" is not an index request.
INDEX_REQUEST = re.compile(r"^\s*(re)?index(\s+(this|these|it|them|the attached))?\s*[.!]?\s*$", re.I)


def asks_to_index(text: str) -> bool:
    return bool(INDEX_REQUEST.match(text or ""))
