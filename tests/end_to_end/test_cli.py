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


def test_a_nightly_rerun_with_nothing_to_do_succeeds(env, capsys):
    # Before: `pixelrag index docs/*.pdf` over unchanged PDFs exited 2 ("already indexed").
    a = text_pdf(env / "relay.pdf", ["Relay R200.\nCoil voltage: 24 V DC"])
    b = text_pdf(env / "pump.pdf", ["Pump P9.\nWeight: 2.6 kg"])
    assert run(capsys, "index", str(a), str(b))[0] == 0
    code, out, err = run(capsys, "index", str(a), str(b))
    assert code == 0 and "up to date: relay.pdf" in out and "up to date: pump.pdf" in out and not err
    # Partly refused: the rest is indexed, and the exit code says something failed.
    (env / "notes.pdf").write_text("not a pdf")
    c = text_pdf(env / "valve.pdf", ["Valve V3.\nPressure: 16 bar"])
    code, out, _ = run(capsys, "index", str(a), str(c), str(env / "notes.pdf"))
    assert code == 1 and "indexed: valve.pdf" in out and "up to date: relay.pdf" in out
    assert "skipped: notes.pdf: not a PDF" in out


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("PIXELRAG_EMBEDDING_DIM", "64", "PIXELRAG_EMBEDDING_DIM=64 is out of range; use a value from 128 to 3072"),
        ("PIXELRAG_EMBEDDING_DIM", "big", "PIXELRAG_EMBEDDING_DIM='big' is not a whole number"),
        ("PIXELRAG_REQUEST_TIMEOUT", "soon", "PIXELRAG_REQUEST_TIMEOUT='soon' is not a number"),
        ("PIXELRAG_RENDER_DPI", "0", "PIXELRAG_RENDER_DPI=0 is out of range"),
        ("PIXELRAG_BACKEND", "openai", "PIXELRAG_BACKEND='openai' is not a backend"),
    ],
)
def test_a_bad_setting_is_one_clear_line(env, capsys, monkeypatch, name, value, message):
    monkeypatch.setenv(name, value)
    code, _, err = run(capsys, "status")
    assert code == 2 and err.startswith(f"pixelrag: {message}") and "Traceback" not in err


def test_chat_keeps_one_thread_until_new(env, capsys):
    import asyncio
    import io

    from bot.console import run_console
    from core import Settings

    pump = text_pdf(env / "pump.pdf", ["Pump P9 datasheet.\nMaximum flow: 3.2 m3/h\nWeight: 2.6 kg"])
    lines = [
        f"/index {pump}",
        "/docs",
        "What is the maximum flow of the P9 pump?",
        "And its weight?",
        "/image missing.png",
        "/frobnicate",
        "/new",
        "And its weight?",
        "/quit",
    ]
    code = asyncio.run(
        run_console(Settings(index_dir=env / "index"), env / "chat", io.StringIO("\n".join(lines) + "\n"))
    )
    out = capsys.readouterr().out
    assert code == 0 and "indexed: pump.pdf (1 pages" in out and "- pump.pdf (1 pages)" in out
    before, after = out.split("New thread.")
    _, first, follow_up = before.split("\nyou> \n")
    assert "3.2 m3/h" in first and "Interpreted as" not in first
    assert "Interpreted as: P9's weight?" in follow_up and "2.6 kg" in follow_up  # the thread's memory
    assert "missing.png: no such image file." in follow_up and "Unknown command /frobnicate" in follow_up
    # /new forgets the pump: the same follow-up now asks which product is meant
    assert "Which product or document do you mean?" in after and "2.6 kg" not in after
    assert sorted(p.name for p in (env / "chat").iterdir()) == ["turn-001", "turn-002", "turn-003"]
    assert not list((env / "chat" / "turn-003").iterdir())  # a clarifying question cites nothing
    assert list((env / "chat" / "turn-001").glob("*-page.jpg"))


def test_settings_come_from_dotenv_and_the_environment_wins(tmp_path):
    from core import load_settings

    dotenv = tmp_path / ".env"
    dotenv.write_text(
        "# a comment\nexport PIXELRAG_INDEX_DIR='/srv/pixelrag index'\nPIXELRAG_MAX_PAGES=50  # inline\n"
        'SLACK_BOT_TOKEN="xoxb-from-file"\nPIXELRAG_BACKEND=gemini\nBARE\n',
        encoding="utf-8",
    )
    settings = load_settings({"PIXELRAG_BACKEND": "local"}, dotenv, extra_prefixes=("SLACK_",))
    assert settings.index_dir == Path("/srv/pixelrag index") and settings.max_pages == 50
    assert settings.backend == "local"  # the real environment wins over .env
    assert settings.extra == {"SLACK_BOT_TOKEN": "xoxb-from-file"}


def test_feedback_export_reads_the_bots_thread_memory(env, capsys):
    import asyncio

    from core import EmbeddedThreads
    from core.records import Exchange

    async def rate() -> None:
        store = await EmbeddedThreads(env / "index" / "slack-threads.sqlite").open()
        turn = await store.add(("slack", "T1", "C1", "1.0"), Exchange("How wide?", "320 mm", "How wide is the X200?"))
        await store.rate(turn, "T1:U1", "bad")
        await store.close()

    asyncio.run(rate())
    code, out, err = run(capsys, "feedback", "export")
    [record] = [json.loads(line) for line in out.splitlines()]
    assert code == 0 and record["question"] == "How wide is the X200?" and record["feedback"]["asked"] == "How wide?"
    assert "1 answer(s) rated bad written to standard output" in err
    code, out, err = run(capsys, "feedback", "export", "--rating", "good")
    assert code == 0 and out == "" and "0 answer(s) rated good" in err


def test_a_huge_page_is_rendered_smaller_said_so_and_cited(env, capsys):
    # Before: a 7,000 pt page ended the whole run with "Overly large image" (good.pdf was not indexed
    # either), and a 5,000 pt page took 1.9 GB and then a DecompressionBombError when it was cited.
    import pymupdf
    from PIL import Image

    good = text_pdf(env / "good.pdf", ["Relay R200.\nCoil voltage: 24 V DC"])
    doc = pymupdf.open()
    page = doc.new_page(width=8000, height=8000)
    page.insert_text((400, 400), "Poster P1 mounting height: 2400 mm", fontsize=120)
    doc.new_page().insert_text((72, 72), "Poster P1 second page", fontsize=12)
    doc.save(env / "poster.pdf")
    code, out, err = run(capsys, "index", str(good), str(env / "poster.pdf"))
    assert code == 0 and "indexed: good.pdf" in out and "indexed: poster.pdf" in out, out + err
    assert "page 1 is more than 24 megapixels at 200 dpi; rendered at down to 44 dpi instead" in out
    images = sorted(Path("index/pages").glob("*.jpg"), key=lambda p: p.stat().st_size)
    sizes = [Image.open(p).size for p in images]
    assert max(w * h for w, h in sizes) <= 24_000_000 and (1653, 2339) in sizes  # the A4 pages at 200 dpi
    code, out, err = run(capsys, "ask", "What is the mounting height of poster P1?", "--json", "--out", "answers")
    record = json.loads(out)
    assert code == 0 and "2400" in record["markdown"] and Path(record["citations"][0]["crop_path"]).is_file()


def test_a_page_that_cannot_be_rendered_refuses_its_document_only(env, capsys, monkeypatch):
    import core.indexing.sources

    real = core.indexing.sources.render_page

    def render(doc, index, doc_id, settings):
        if doc.page_count == 2 and index == 1:
            raise RuntimeError("code=4: Overly large image")
        return real(doc, index, doc_id, settings)

    monkeypatch.setattr("core.indexing.page_rendering.render_page", render)
    good = text_pdf(env / "good.pdf", ["Relay R200.\nCoil voltage: 24 V DC"])
    bad = text_pdf(env / "bad.pdf", ["Pump P9.", "Weight: 2.6 kg"])
    code, out, err = run(capsys, "index", str(good), str(bad))
    assert code == 1 and "indexed: good.pdf" in out and "Traceback" not in err
    assert "skipped: bad.pdf: page 2 cannot be rendered (code=4: Overly large image)" in out


def test_a_folder_is_indexed_whole_and_its_count_said(env, capsys):
    # Before: "docs: no such file."
    (env / "docs" / "old").mkdir(parents=True)
    text_pdf(env / "docs" / "relay.pdf", ["Relay R200.\nCoil voltage: 24 V DC"])
    text_pdf(env / "docs" / "pump.PDF", ["Pump P9.\nWeight: 2.6 kg"])
    text_pdf(env / "docs" / "old" / "valve.pdf", ["Valve V3.\nPressure: 16 bar"])
    (env / "docs" / "notes.txt").write_text("not a pdf")
    code, out, err = run(capsys, "index", "docs")
    assert code == 0 and "docs: 2 PDF files" in err and "indexed: relay.pdf" in out and "indexed: pump.PDF" in out
    assert "valve" not in out
    code, out, err = run(capsys, "index", "docs", "--recursive")
    assert code == 0 and "docs: 3 PDF files" in err and "indexed: valve.pdf" in out
    code, _, err = run(capsys, "index", "docs/old/..", "--title", "x")
    assert code == 2 and "--title names one PDF" in err
    (env / "empty").mkdir()
    code, _, err = run(capsys, "index", "empty")
    assert code == 2 and "empty: no PDF files in this folder (--recursive looks in its subfolders too)" in err


def test_small_mistakes_get_a_line_that_names_them(env, capsys):
    text_pdf(env / "a.pdf", ["Relay R200.\nCoil voltage: 24 V DC"], title="Same")
    text_pdf(env / "b.pdf", ["Pump P9.\nWeight: 2.6 kg"], title="Same")
    code, out, _ = run(capsys, "index", "a.pdf")
    code, out, _ = run(capsys, "index", "b.pdf")  # warned at once: which one would `remove Same` remove?
    assert code == 0 and "b.pdf: another document here is also titled 'Same' (a.pdf)" in out
    code, _, err = run(capsys, "remove", "Same")  # before: one of them removed, silently
    assert code == 2 and "2 documents here are called 'Same'" in err and "a.pdf, id " in err
    assert json.loads(run(capsys, "status", "--json")[1])["documents"] == 2
    code, out, _ = run(capsys, "remove", "b.pdf")
    assert code == 0 and "removed: Same" in out
    # A misspelt --index is not an empty index (before: exit 0, "No documents are indexed here yet").
    code, _, err = run(capsys, "ask", "coil voltage?", "--index", "indx")
    assert code == 2 and "indx: no such index folder" in err
    code, _, err = run(capsys, "ask", "x", "--image", str(env))
    assert code == 2 and "a folder, not an image file" in err
    code, _, err = run(capsys, "ask", "y" * 2001)
    assert code == 2 and "2,001 characters long; keep it to 2,000 or fewer" in err
    assert run(capsys, "ask", "y" * 2000)[0] == 0


def test_status_shows_every_workspaces_usage_from_both_bots(env, capsys):
    import asyncio
    import time

    from core import EmbeddedThreads

    async def spend(path: Path, platform: str, counts: dict) -> None:
        store = await EmbeddedThreads(path).open()
        await store.add_usage(platform, "W1", counts, time.time())
        await store.close()

    text_pdf(env / "relay.pdf", ["Relay R200.\nCoil voltage: 24 V DC"])
    assert run(capsys, "index", str(env / "relay.pdf"))[0] == 0
    code, out, _ = run(capsys, "status")
    assert code == 0 and "usage today (UTC): 0 questions, 0 Gemini requests, 0 Gemini tokens" in out
    asyncio.run(spend(env / "index" / "slack-threads.sqlite", "slack", {"questions": 3, "gemini_tokens": 1200}))
    asyncio.run(spend(env / "index" / "discord-threads.sqlite", "discord", {"questions": 2, "gemini_tokens": 800}))
    code, out, _ = run(capsys, "status", "--json")
    assert json.loads(out)["usage, last 30 days"].startswith("5 questions, 0 Gemini requests, 2,000 Gemini tokens")


def test_the_operator_removes_a_channels_document_by_naming_its_collection(env, capsys):
    import asyncio

    from core import Service
    from core.config import load_settings

    pdf = text_pdf(env / "hr.pdf", ["Parental leave: 26 weeks."])
    asyncio.run(Service(load_settings()).index_bytes(pdf.read_bytes(), "hr.pdf", scope="slack:T1/C9"))
    code, out, _ = run(capsys, "status")
    assert "hr.pdf (1 pages, slack:T1/C9)" in out
    code, _, err = run(capsys, "remove", "hr.pdf")  # the shared collection has no such document
    assert code == 2 and "No document called 'hr.pdf'" in err
    code, out, _ = run(capsys, "remove", "hr.pdf", "--scope", "slack:T1/C9")
    assert code == 0 and "removed: hr.pdf" in out
    assert json.loads(run(capsys, "status", "--json")[1])["documents"] == 0


def test_titles_are_checked_and_applied_and_shown_inert(env, capsys):
    a = text_pdf(env / "relay.pdf", ["Relay R200. Coil voltage: 24 V DC"])
    b = text_pdf(env / "pump.pdf", ["Pump P9. Weight: 2.6 kg"])
    # Before: two PDFs titled alike in one run were indexed without a word.
    code, out, _ = run(capsys, "index", str(a), str(b), "--title", "Manual", "--title", "Manual")
    assert code == 0 and "warning: pump.pdf: another document here is also titled 'Manual' (relay.pdf)" in out
    # Before: a new --title on an unchanged PDF was ignored ("up to date").
    code, out, _ = run(capsys, "index", str(b), "--title", "P9 pump")
    assert code == 0 and "indexed: P9 pump" in out, out
    code, out, _ = run(capsys, "status", "--json")
    assert sorted(d["title"] for d in json.loads(out)["documents_list"]) == ["Manual", "P9 pump"]
    # A title's escape sequences are stored without them, and one stored before is shown, not acted on by
    # the terminal (before: status printed it raw).
    c = text_pdf(env / "valve.pdf", ["Valve V3. Pressure: 16 bar."])
    code, out, _ = run(capsys, "index", str(c), "--title", "Valve \x1b[2J\x1b]0;owned\x07V3")
    assert code == 0 and "indexed: Valve [2J]0;ownedV3" in out, repr(out)
    manifest = next(Path("index/snapshots").glob(f"{Path('index/ACTIVE').read_text().strip()}/manifest.json"))
    manifest.write_text(manifest.read_text().replace("P9 pump", "P9 \\u001b[2Jpump"))
    code, out, _ = run(capsys, "status")
    assert code == 0 and "\x1b" not in out and "\x07" not in out and "P9 \\x1b[2Jpump" in out, repr(out)


def test_chat_image_of_a_folder_says_so(env, capsys):
    # Before: `/image /tmp` answered "no such file".
    import asyncio
    import io

    from bot.console import run_console
    from core.config import Settings

    asyncio.run(
        run_console(
            Settings(index_dir=env / "index", backend="local"),
            env / "out",
            io.StringIO(f"/image {env}\n/image {env}/missing.png\n/quit\n"),
        )
    )
    out = capsys.readouterr().out
    assert f"{env}: a folder, not an image file." in out and f"{env}/missing.png: no such image file." in out


def test_ask_prints_each_citations_link_when_a_public_address_is_set(env, capsys, monkeypatch):
    pump = text_pdf(env / "pump.pdf", ["Pump P9.\nMaximum flow: 3.2 m3/h\nWeight: 2.6 kg"])
    assert run(capsys, "index", str(pump))[0] == 0
    monkeypatch.setenv("PIXELRAG_PUBLIC_URL", "https://docs.example.com/pixelrag")
    code, out, _ = run(capsys, "ask", "How much does the P9 weigh?", "--json", "--out", "answers")
    [cite] = json.loads(out)["citations"][:1]
    assert code == 0 and cite["url"].startswith("https://docs.example.com/pixelrag/view/")
    code, out, _ = run(capsys, "ask", "How much does the P9 weigh?", "--out", "answers")
    assert f"open:      {cite['url'].split('/view/')[0]}/view/" in out
    monkeypatch.delenv("PIXELRAG_PUBLIC_URL")
    assert "open:" not in run(capsys, "ask", "How much does the P9 weigh?", "--out", "answers")[1]


def test_every_subcommand_has_its_command():
    from bot.cli import COMMANDS
    from bot.cli_arguments import build_parser

    parser = build_parser()
    [commands] = [a for a in parser._actions if a.dest == "command"]
    assert set(commands.choices) == set(COMMANDS)
