"""How the processes log: plain lines for a terminal, or (PIXELRAG_LOG_FORMAT=json) one JSON object per
line for a log collector, each line of a question's stages carrying its id. No token, key or password
reaches a line in either format: the configured secrets, and anything shaped like a Slack, Discord or
Google credential, are masked."""

from __future__ import annotations

import json
import logging
import re
import sys
from datetime import UTC, datetime

from core import QUESTION_ID, Settings

MASK = "[redacted]"
# Shapes of credentials a library might print (a URL's query, a header): Slack's xox*/xapp tokens,
# Google API keys, Discord bot tokens, a bearer header, a database URL's password.
CREDENTIALS = re.compile(
    r"xox[abeprs]-[\w-]+|xapp-[\w-]+|AIza[\w-]{30,}|[\w-]{24,}\.[\w-]{6}\.[\w-]{27,}"
    r"|(?<=Bearer )\S+|(?<=://)[^/\s:@]+:[^/\s@]+(?=@)"
)


class Redacting(logging.Filter):
    """Masks the secrets in a record's message (arguments merged) and in its traceback."""

    def __init__(self, secrets: list[str]):
        super().__init__()
        self.secrets = sorted({s for s in secrets if len(s) >= 8}, key=len, reverse=True)

    def mask(self, text: str) -> str:
        for secret in self.secrets:
            text = text.replace(secret, MASK)
        return CREDENTIALS.sub(MASK, text)

    def filter(self, record: logging.LogRecord) -> bool:
        record.msg, record.args = self.mask(record.getMessage()), None
        if record.exc_info:
            record.exc_text = self.mask(logging.Formatter().formatException(record.exc_info))
            record.exc_info = None
        record.question = QUESTION_ID.get()
        return True


class JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        line = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        if question := getattr(record, "question", None):
            line["question"] = question
        if record.exc_text:
            line["error"] = record.exc_text
        return json.dumps(line, ensure_ascii=False)


class PlainLines(logging.Formatter):
    def __init__(self) -> None:
        super().__init__("%(asctime)s %(levelname)s %(name)s: %(message)s")

    def format(self, record: logging.LogRecord) -> str:
        text = super().format(record)
        question = getattr(record, "question", None)
        return f"{text} [question {question}]" if question else text


class CurrentStderr(logging.StreamHandler):
    """Writes to whatever sys.stderr is when a line is written (a test's capture, a redirected stream)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def configure(settings: Settings, verbose: bool) -> None:
    """The root logger for this process: its level, its format, and the masking of secrets."""
    secrets = [settings.gemini_api_key or "", settings.typesafe_api_key or ""]
    secrets += [v for k, v in settings.extra.items() if k.endswith(("TOKEN", "SECRET", "KEY"))]
    handler = CurrentStderr()
    handler.addFilter(Redacting(secrets))
    handler.setFormatter(JsonLines() if settings.log_format == "json" else PlainLines())
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, handlers=[handler], force=True)
