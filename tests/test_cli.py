"""The `pixelrag` command as a person uses it: index, ask (--json, --retrieve-only), status, remove."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bot.cli import main
from tests.conftest import text_pdf


@pytest.fixture
def env(monkeypatch, tmp_path):
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "PIXELRAG_BACKEND", "PIXELRAG_INDEX_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # no stray .env, and ./index lands in the temporary folder
    return tmp_path


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_index_ask_status_remove(env, capsys):
    a = text_pdf(env / "relay.pdf", ["Relay R200.\nMaximum switching current: 16 A\nCoil voltage: 24 V DC"])
    b = text_pdf(env / "pump.pdf", ["Pump P9.\nMaximum flow: 3.2 m3/h\nWeight: 2.6 kg"])
    code, out, _ = run(capsys, "index", str(a), str(b), "--title", "R200 relay", "--title", "P9 pump")
    assert code == 0 and "indexed: R200 relay (1 pages" in out and "indexed: P9 pump" in out
    assert Path("index/ACTIVE").is_file()

    code, out, _ = run(capsys, "ask", "What is the maximum switching current?", "--json", "--out", "answers")
    record = json.loads(out)
    assert code == 0 and record["interpreted_question"] == "What is the maximum switching current?"
    assert record["hits"][0]["title"] == "R200 relay" and record["hits"][0]["score"] > 0
    cite = record["citations"][0]
    assert "16 A" in cite["quote"] and cite["highlight"]["kind"] == "exact" and len(cite["highlight"]["box"]) == 4
    assert Path(cite["preview_path"]).is_file() and Path(cite["crop_path"]).is_file()
    assert {"context", "embed_query", "search", "read", "citations"} <= set(record["timings"])

    code, out, _ = run(capsys, "ask", "flow rate", "--retrieve-only")
    assert code == 0 and "1. P9 pump, p. 1" in out

    code, out, _ = run(capsys, "status", "--json")
    assert json.loads(out)["documents"] == 2

    code, out, _ = run(capsys, "remove", "P9 pump")
    assert code == 0 and "removed: P9 pump" in out
    code, out, _ = run(capsys, "status", "--json")
    assert [d["title"] for d in json.loads(out)["documents_list"]] == ["R200 relay"]


def test_errors_are_one_clear_line_and_exit_2(env, capsys):
    (env / "notes.pdf").write_text("not a pdf")
    code, _, err = run(capsys, "index", str(env / "notes.pdf"))
    assert code == 2 and err.startswith("pixelrag: notes.pdf: not a PDF") and "Traceback" not in err
    code, _, err = run(capsys, "ask", "  ")
    assert code == 2 and "Ask a question" in err
    code, _, err = run(capsys, "ask", "x", "--image", str(env / "missing.png"))
    assert code == 2 and "no such image file" in err
