"""Logs a collector reads: PIXELRAG_LOG_FORMAT=json gives one JSON object per line, a question's stage
lines carry its id, and no token, key or password reaches a line in either format."""

from __future__ import annotations

import json
import logging

from bot.cli import main
from bot.logs import configure
from core import Settings
from tests.conftest import text_pdf

SLACK_TOKEN = "xoxb-1234567890-0987654321-abcdefghijklmnopqrstuvwx"
GEMINI_KEY = "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"


def test_json_lines_name_the_question_in_every_stage(monkeypatch, tmp_path, capsys):
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "PIXELRAG_BACKEND", "PIXELRAG_INDEX_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PIXELRAG_LOG_FORMAT", "json")
    monkeypatch.setenv("SLACK_BOT_TOKEN", SLACK_TOKEN)
    pdf = text_pdf(tmp_path / "pump.pdf", ["Pump P9. Weight: 2.6 kg. Flow rate: 40 l/min."])
    assert main(["index", str(pdf)]) == 0
    capsys.readouterr()
    assert main(["-v", "ask", "What is the weight of the pump?"]) == 0
    err = capsys.readouterr().err
    lines = [json.loads(line) for line in err.splitlines() if line.strip()]  # every line is one object
    assert lines and all({"time", "level", "logger", "message"} <= set(line) for line in lines)
    [start] = [line for line in lines if line["message"].startswith("question from ")]
    stages = [line for line in lines if line["message"].startswith("stage ")]
    assert {line["message"].split()[1] for line in stages} >= {"context", "search", "embed_query", "read", "citations"}
    assert {line.get("question") for line in stages} == {start["question"]} and len(start["question"]) == 12
    assert SLACK_TOKEN not in err


def test_no_secret_reaches_a_line(capsys):
    settings = Settings(gemini_api_key="not-shaped-like-a-key-but-set", extra={"DISCORD_TOKEN": "plain-secret-value"})
    for fmt in ("plain", "json"):
        configure(settings.with_(log_format=fmt), verbose=True)
        log = logging.getLogger("pixelrag.test")
        log.info("calling with %s and %s", "not-shaped-like-a-key-but-set", "plain-secret-value")
        log.warning("Authorization: Bearer %s; key=%s", SLACK_TOKEN, GEMINI_KEY)
        log.info("connecting to postgresql://pixelrag:hunter2hunter2@db.internal/pixelrag")
        try:
            raise RuntimeError(f"refused token {SLACK_TOKEN}")
        except RuntimeError:
            log.exception("the call failed")
        err = capsys.readouterr().err
        for secret in (
            "not-shaped-like-a-key-but-set",
            "plain-secret-value",
            SLACK_TOKEN,
            GEMINI_KEY,
            "hunter2hunter2",
        ):
            assert secret not in err, (fmt, secret)
        assert err.count("[redacted]") >= 6 and "db.internal/pixelrag" in err and "RuntimeError" in err
        if fmt == "json":
            assert all(json.loads(line) for line in err.splitlines())
    logging.basicConfig(force=True)  # leave the root logger as pytest found it


def test_an_unknown_log_format_is_one_line(monkeypatch, capsys):
    monkeypatch.setenv("PIXELRAG_LOG_FORMAT", "xml")
    assert main(["status"]) == 2
    err = capsys.readouterr().err
    assert err.strip() == "pixelrag: PIXELRAG_LOG_FORMAT='xml' is not a format; use json (or plain, the default)."
