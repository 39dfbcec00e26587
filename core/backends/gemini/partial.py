"""The answer's text out of a structured reply that is still arriving.

The reader asks for JSON ({"answer": "...", "citations": [...]}), so a streamed reply is JSON text
cut at arbitrary points. `StreamedString` finds one string field and decodes its value as far as it
has arrived, so the answer can be shown while the citations are still being written. An escape cut
in the middle (a lone backslash, half a \\uXXXX, half a surrogate pair) waits for the next piece.
"""

from __future__ import annotations

import re

ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class StreamedString:
    def __init__(self, name: str):
        self._start = re.compile(r'"' + re.escape(name) + r'"\s*:\s*"')
        self._buffer = ""
        self._at: int | None = None  # where the undecoded rest of the value begins
        self.done = False

    def feed(self, piece: str) -> str:
        """The value's newly decodable text, given the next piece of the JSON text."""
        self._buffer += piece
        if self.done:
            return ""
        if self._at is None:
            match = self._start.search(self._buffer)
            if not match:
                return ""
            self._at = match.end()
        out: list[str] = []
        text, i = self._buffer, self._at
        while i < len(text):
            c = text[i]
            if c == '"':
                self.done = True
                i += 1
                break
            if c != "\\":
                out.append(c)
                i += 1
                continue
            if i + 1 >= len(text):
                break  # the escape is cut: wait for the rest
            kind = text[i + 1]
            if kind in ESCAPES:
                out.append(ESCAPES[kind])
                i += 2
                continue
            if kind != "u" or i + 6 > len(text):
                if kind != "u":
                    i += 2  # not JSON; skip it rather than stall
                    continue
                break
            code = int(text[i + 2 : i + 6], 16)
            if 0xD800 <= code < 0xDC00:  # a high surrogate: its pair must have arrived too
                if i + 12 > len(text):
                    break
                low = int(text[i + 8 : i + 12], 16) if text[i + 6 : i + 8] == "\\u" else 0
                if 0xDC00 <= low < 0xE000:
                    out.append(chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
                    i += 12
                    continue
            out.append(chr(code))
            i += 6
        self._at = i
        return "".join(out)
