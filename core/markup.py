"""Text from documents, users and models inside the Markdown of an answer: shown, never acted on.

An answer's Markdown is ours (bold answer spans, numbered quotes, the local-mode notice), but what it
quotes is not: a PDF may print `[click here](https://…)`, `*` or backticks, and a model reading it may
copy them. `literal` turns plain text into Markdown that displays exactly that text (CommonMark's
backslash escapes, which Slack's markdown block and Discord both honour); `inert` keeps a model's
formatting (bold, lists, tables) but makes its links and images show as the text they are written in,
so no link target is ever hidden behind a label.

`inert` maps each character on its own, so a model's answer streamed in pieces comes out the same piece
by piece as whole. What acts only on one platform (Slack's `<!channel>`, Discord's `@everyone`) is the adapters'
to neutralise; `<` is left to them for that reason.
"""

from __future__ import annotations

import re

# Markdown's inline markup characters: emphasis, code, links and images, and the escape itself. Block
# markup (`#`, `>`, `-` at a line's start) cannot arise: quotes are set inside a line. A lone `~` ("3~5 V")
# strikes nothing through on Slack or Discord, and Slack lists no escape for it: only a pair is escaped.
_LITERAL = str.maketrans({c: "\\" + c for c in "\\`*_[]"})
_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://\S+")
# A model's own emphasis and code stay; its brackets (links, images, references) and backslashes do not.
_INERT = str.maketrans({c: "\\" + c for c in "\\[]"})


def literal(text: str) -> str:
    """`text` as Markdown that shows it as written. In a web address the underscores stay as they are:
    chat apps link a bare address, and an escape would become part of the link; inside a word an
    underscore emphasises nothing anyway."""
    return _URL.sub(lambda m: m.group().replace("\\_", "_"), text.translate(_LITERAL)).replace("~~", "\\~\\~")


def inert(markdown: str) -> str:
    """A model's Markdown with every link, image and reference shown as written, not followed."""
    return markdown.translate(_INERT)
