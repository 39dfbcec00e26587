"""Faults an operator meets: a damaged index, a killed build, a bot that dies mid-answer, odd input.

Each scenario damages or interrupts something on purpose and then checks that nothing already
indexed or asked is lost, and that the person is told what happened in one clear line.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from bot.cli import main
from core.embedded.index_folder import IndexFolder
from tests.conftest import text_pdf


@pytest.fixture
def env(monkeypatch, tmp_path):
    for name in ("GEMINI_API_KEY", "GOOGLE_API_KEY", "PIXELRAG_BACKEND", "PIXELRAG_INDEX_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def run(capsys, *argv) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def titles(index: Path = Path("index")) -> list[str]:
    snap = IndexFolder(index).open()
    return sorted(d.title for d in snap.documents)


@pytest.fixture
def three_docs(env, capsys):
    """relay.pdf indexed first, then pump.pdf (so an older intact snapshot exists); valve.pdf ready."""
    docs = {
        name: text_pdf(env / f"{name}.pdf", [f"{body}"])
        for name, body in [
            ("relay", "Relay R200. Coil voltage: 24 V DC."),
            ("pump", "Pump P9. Weight: 2.6 kg."),
            ("valve", "Valve V3. Pressure: 16 bar."),
        ]
    }
    assert run(capsys, "index", str(docs["relay"]))[0] == 0
    assert run(capsys, "index", str(docs["pump"]))[0] == 0
    return docs


def active_folder() -> Path:
    return Path("index/snapshots") / IndexFolder(Path("index")).active_name()


def test_a_build_over_truncated_vectors_keeps_every_document(three_docs, capsys):
    # Before: the new snapshot held only valve.pdf, and the older intact snapshot was deleted.
    vectors = active_folder() / "vectors.npy"
    vectors.write_bytes(vectors.read_bytes()[:100])
    code, out, err = run(capsys, "index", str(three_docs["valve"]))
    assert code == 0, err
    assert titles() == ["pump.pdf", "relay.pdf", "valve.pdf"]
    assert "warning: The index was damaged" in out and "pump.pdf was rebuilt from its stored PDF" in out
    code, out, _ = run(capsys, "ask", "What is the weight of the pump?", "--retrieve-only")
    assert code == 0 and "1. pump.pdf" in out


def test_remove_over_a_damaged_index_refuses_and_loses_nothing(three_docs, capsys):
    # Before: it published the damaged state without relay.pdf, and pump.pdf was gone with it.
    vectors = active_folder() / "vectors.npy"
    vectors.write_bytes(vectors.read_bytes()[:100])
    code, out, err = run(capsys, "remove", "relay.pdf")
    assert code == 2 and "cannot be removed while the index is damaged" in err and "pixelrag repair" in err
    assert "Traceback" not in err
    code, out, err = run(capsys, "index", str(three_docs["valve"]))  # rebuilds what the damage hid
    assert code == 0, err
    code, out, err = run(capsys, "remove", "relay.pdf")
    assert code == 0, err
    assert titles() == ["pump.pdf", "valve.pdf"]


def test_a_build_over_a_lost_manifest_refuses_then_repair_keeps_the_pdfs(three_docs, capsys):
    # Before: the build published, then exited 2 reading the damaged snapshot while cleaning up.
    (active_folder() / "manifest.json").unlink()
    code, _, err = run(capsys, "index", str(three_docs["valve"]))
    assert code == 2 and "Nothing was changed" in err and "pixelrag repair" in err
    assert len(list(Path("index/snapshots").iterdir())) == 2  # nothing deleted
    code, out, _ = run(capsys, "repair")
    assert code == 0 and "active snapshot:" in out and "moved to be indexed again:" in out
    assert titles() == ["relay.pdf"]  # the intact snapshot
    [stray] = list(Path("index/recovered").glob("*.pdf"))
    assert stray.read_bytes() == three_docs["pump"].read_bytes()
    assert run(capsys, "index", str(stray), "--title", "pump.pdf")[0] == 0
    assert run(capsys, "index", str(three_docs["valve"]))[0] == 0
    assert titles() == ["pump.pdf", "relay.pdf", "valve.pdf"]


def test_cleanup_never_trips_over_a_damaged_older_snapshot(three_docs, capsys):
    snapshots = sorted(Path("index/snapshots").iterdir())
    older = next(p for p in snapshots if p.name != IndexFolder(Path("index")).active_name())
    (older / "manifest.json").write_text("{ not json")
    code, out, err = run(capsys, "index", str(three_docs["valve"]))
    assert code == 0 and not err.strip().startswith("pixelrag:"), err
    assert titles() == ["pump.pdf", "relay.pdf", "valve.pdf"]


def test_a_truncated_pdf_is_indexed_with_a_warning_naming_the_empty_pages(env, capsys):
    from tests.conftest import corpus_pdf

    data = corpus_pdf("btt-skr-mini-e3-v2-manual.pdf").read_bytes()
    cut = env / "manual-cut.pdf"
    cut.write_bytes(data[: int(len(data) * 0.3)])  # the first 30 %, as from a broken download
    code, out, _ = run(capsys, "index", str(cut))
    assert code == 0 and "indexed: " in out
    warning = next(line for line in out.splitlines() if line.startswith("warning: manual-cut.pdf is damaged"))
    assert "came out empty" in warning and "pages " in warning

    other = env / "datasheet-cut.pdf"
    other.write_bytes(corpus_pdf("arduino-uno-r3-datasheet.pdf").read_bytes()[:150_000])
    code, _, err = run(capsys, "index", str(other))
    assert code == 2 and "datasheet-cut.pdf: the PDF is damaged (perhaps cut short" in err  # not "no pages"


def test_a_pdf_with_nothing_on_any_page_is_refused(env, capsys):
    import pymupdf

    doc = pymupdf.open()
    for _ in range(3):
        doc.new_page()
    doc.save(env / "blank.pdf")
    code, _, err = run(capsys, "index", str(env / "blank.pdf"))
    assert code == 2 and "has no page with anything on it" in err


def test_invalid_utf8_in_a_question_is_answered_not_a_traceback(env, capsys):
    pdf = text_pdf(env / "relay.pdf", ["Relay R200. Coil voltage: 24 V DC."])
    assert run(capsys, "index", str(pdf))[0] == 0
    broken = b"coil voltage \xff of the relay".decode("utf-8", "surrogateescape")  # what a shell hands over
    code, out, err = run(capsys, "ask", broken, "--json")
    assert code == 0, err
    assert json.loads(out)["hits"][0]["title"] == "relay.pdf"
    code, out, err = run(capsys, "ask", "coil voltage \ud800?")  # a lone surrogate, as in a Slack payload
    assert code == 0 and "Traceback" not in err


def test_an_index_path_that_is_a_file_or_read_only_gets_one_line(env, capsys):
    pdf = text_pdf(env / "relay.pdf", ["Relay R200."])
    Path("afile").write_text("x")
    for command in (["index", str(pdf)], ["status"], ["ask", "relay"]):
        code, _, err = run(capsys, *command, "--index", "afile")
        assert code == 2 and "afile is a file, not an index folder" in err, (command, err)
    if os.geteuid() != 0:  # root writes anywhere
        Path("ro").mkdir(mode=0o555)
        code, _, err = run(capsys, "index", str(pdf), "--index", "ro/index")
        assert code == 2 and "permission denied" in err


def test_titles_beyond_the_pdfs_given_are_refused(env, capsys):
    pdf = text_pdf(env / "relay.pdf", ["Relay R200."])
    code, _, err = run(capsys, "index", str(pdf), "--title", "Relay", "--title", "Pump")
    assert code == 2 and "2 titles were given for 1 PDF(s)" in err
    assert not Path("index/ACTIVE").exists()


def test_a_second_build_says_it_is_waiting(env, capsys):
    import subprocess
    import sys

    from core.embedded.disk import BuildLock
    from tests.conftest import ROOT

    pdf = text_pdf(env / "relay.pdf", ["Relay R200."])
    Path("index").mkdir()
    with BuildLock(Path("index"), lambda holder: None):  # another build holds the index
        proc = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "index", str(pdf)],
            cwd=env,
            text=True,
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        line = proc.stderr.readline()  # printed before it blocks
        assert "waiting for another build of this index to finish (process " in line
        assert proc.poll() is None
    assert proc.wait(timeout=120) == 0


def test_remove_says_it_is_waiting_for_a_build(env, capsys):
    # Before: `pixelrag remove` waited for a running build without a word.
    import subprocess
    import sys

    from core.embedded.disk import BuildLock
    from tests.conftest import ROOT

    pdf = text_pdf(env / "relay.pdf", ["Relay R200."])
    assert run(capsys, "index", str(pdf))[0] == 0
    with BuildLock(Path("index"), lambda holder: None):
        proc = subprocess.Popen(
            [sys.executable, "-m", "bot.cli", "remove", "relay.pdf"],
            cwd=env,
            text=True,
            stderr=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        line = proc.stderr.readline()
        assert "waiting for another build of this index to finish (process " in line
        assert proc.poll() is None
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "removed: relay.pdf" in out


def test_repair_keeps_a_workspace_documents_title_and_scope(env, capsys):
    # Before: repair printed the stray PDF's hash only, and indexing it again as told put it in the
    # shared collection, visible to every workspace, titled by its hash.
    import asyncio

    from core.config import Settings
    from core.service import Service

    relay = text_pdf(env / "relay.pdf", ["Relay R200. Coil voltage: 24 V DC."])
    pump = text_pdf(env / "pump.pdf", ["Pump P9. Weight: 2.6 kg."])
    assert run(capsys, "index", str(relay))[0] == 0
    asyncio.run(
        Service(Settings(index_dir=Path("index"), backend="local")).index_bytes(
            pump.read_bytes(), "pump.pdf", scope="slack:T1", title="Pump P9 manual"
        )
    )  # as a Slack workspace does
    (active_folder() / "manifest.json").unlink()
    code, out, _ = run(capsys, "repair")
    assert code == 0 and "“Pump P9 manual” (pump.pdf) in slack:T1" in out
    assert "to index them again as they were: pixelrag index index/recovered" in out
    code, out, err = run(capsys, "index", "index/recovered")
    assert code == 0, out + err

    async def visible(scope):
        return sorted((d.title, d.scope) for d in await Service(Settings(index_dir=Path("index"))).documents(scope))

    assert asyncio.run(visible("slack:T1")) == [("Pump P9 manual", "slack:T1"), ("relay.pdf", "shared")]
    assert asyncio.run(visible("slack:T2")) == [("relay.pdf", "shared")]


def test_temporary_files_of_a_failed_write_do_not_outlive_the_next_build(three_docs, capsys):
    # Before: pages/.<hash>.jpg.<rand> and sources/.<hash>.pdf.<rand> from a full disk stayed for ever.
    for debris in ("pages/.abc.jpg.1a2b3c", "sources/.def.pdf.4d5e6f", ".ACTIVE.7a8b9c"):
        Path("index", debris).write_bytes(b"half")
    assert run(capsys, "index", str(three_docs["valve"]))[0] == 0
    assert not [p for p in Path("index").rglob(".*") if p.is_file() and p.name != ".build.lock"]


def test_a_full_disk_is_one_line_and_the_index_is_kept(three_docs, capsys, monkeypatch):
    # Before: an OSError [Errno 28] traceback, and the half-written snapshot stayed on the full disk.
    import errno

    import core.embedded.index_folder

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    before = IndexFolder(Path("index")).active_name()
    files = sorted(Path("index/sources").iterdir()) + sorted(Path("index/pages").iterdir())
    monkeypatch.setattr(core.embedded.index_folder, "write_words", full)
    code, _, err = run(capsys, "index", str(three_docs["valve"]))
    assert code == 2 and err.startswith("pixelrag: The disk holding the index is full (No space left on device)")
    assert "Traceback" not in err and IndexFolder(Path("index")).active_name() == before
    assert not [p for p in Path("index/snapshots").iterdir() if p.name.startswith(".tmp-")]
    assert titles() == ["pump.pdf", "relay.pdf"]
    # Before: valve.pdf's stored copy and its page image stayed, on a disk already full.
    assert sorted(Path("index/sources").iterdir()) + sorted(Path("index/pages").iterdir()) == files


def test_a_file_size_limit_is_one_line_and_leaves_nothing_behind(three_docs, capsys):
    # Before: under `ulimit -f`, EFBIG (unlike ENOSPC) was a traceback.
    import random
    import resource
    import subprocess
    import sys

    # Words that do not compress: big.pdf is larger than the job queue's file (its half is the limit).
    words = random.Random(7)
    text = [" ".join(f"{words.randrange(16**8):08x}" for _ in range(400)) for _ in range(60)]
    big = text_pdf(Path("big.pdf"), text)
    files = sorted(Path("index/sources").iterdir()) + sorted(Path("index/pages").iterdir())
    limit = big.stat().st_size // 2  # the stored copy of big.pdf cannot be written
    assert limit > 2 * Path("index/jobs.sqlite").stat().st_size

    def limited() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    done = subprocess.run(
        [sys.executable, "-m", "bot.cli", "index", str(big)],
        capture_output=True,
        text=True,
        preexec_fn=limited,
        timeout=600,
    )
    assert done.returncode == 2, done.stderr
    assert "largest file size this system allows" in done.stderr and "ulimit -f" in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(Path("index/sources").iterdir()) + sorted(Path("index/pages").iterdir()) == files
    assert titles() == ["pump.pdf", "relay.pdf"]


def test_a_damaged_line_of_a_pages_words_is_one_line(three_docs, capsys):
    # Before: JSONDecodeError when the page was cited.
    words = active_folder() / "pages.jsonl"
    lines = words.read_bytes().splitlines(keepends=True)
    words.write_bytes(b"".join(lines[:-1]) + b'{"words": [["Pump", 0.1, \n')  # pump.pdf's page, cut short
    code, out, err = run(capsys, "ask", "What is the weight of the pump?")
    assert code == 2 and "the words of page 1 of document" in err and "are damaged" in err and "Traceback" not in err
    code, out, err = run(capsys, "index", str(three_docs["valve"]))  # rebuilds it from its stored PDF
    assert code == 0 and "pump.pdf was rebuilt from its stored PDF" in out, out + err
    assert run(capsys, "ask", "What is the weight of the pump?")[0] == 0


def test_junk_in_the_active_pointer_is_one_line(three_docs, capsys):
    # Before: UnicodeDecodeError from ask, status and index.
    Path("index/ACTIVE").write_bytes(b"\xff\xfe\x00junk")
    for command in (["ask", "pump weight"], ["status"]):
        code, _, err = run(capsys, *command)
        assert code == 2 and "its ACTIVE pointer is damaged" in err and "pixelrag repair" in err, err
    code, out, err = run(capsys, "index", str(three_docs["valve"]))  # builds on the newest intact snapshot
    assert code == 0 and "The index was damaged" in out, out + err
    assert titles() == ["pump.pdf", "relay.pdf", "valve.pdf"]


def test_documents_whose_stored_pdfs_are_gone_are_kept_by_a_build(three_docs, capsys):
    # Before: the next build published valve.pdf alone, and `repair` emptied the index.
    for pdf in Path("index/sources").glob("*.pdf"):
        pdf.unlink()
    code, out, err = run(capsys, "ask", "What is the weight of the pump?", "--retrieve-only")
    assert code == 0 and "1. pump.pdf" in out, out + err
    code, out, err = run(capsys, "status")
    assert code == 0 and "problems: ['relay.pdf: its stored PDF is missing" in out and "'pump.pdf: its stored" in out
    code, out, err = run(capsys, "index", str(three_docs["valve"]))
    assert code == 0, err
    assert titles() == ["pump.pdf", "relay.pdf", "valve.pdf"]
    assert "warning: pump.pdf: its stored PDF is missing" in out and "warning: relay.pdf" in out
    code, out, err = run(capsys, "index", str(three_docs["pump"]))  # the same PDF brings its stored copy back
    assert code == 0 and "up to date: pump.pdf" in out and "warning: pump.pdf" not in out, out + err
    assert "warning: relay.pdf: its stored PDF is missing" in out
    code, out, _ = run(capsys, "repair")
    assert code == 0 and "active snapshot:" in out
    assert titles() == ["pump.pdf", "relay.pdf", "valve.pdf"]


def test_a_lost_active_pointer_is_damage_not_an_empty_index(three_docs, capsys):
    # Before: ask said nothing was indexed, and the next build published valve.pdf alone.
    Path("index/ACTIVE").unlink()
    for command in (["ask", "pump weight"], ["status"]):
        code, out, err = run(capsys, *command)
        assert code == 2 and "ACTIVE pointer is missing" in err and "pixelrag repair" in err, out + err
    code, out, err = run(capsys, "index", str(three_docs["valve"]))
    assert code == 0 and "The index was damaged" in out, out + err
    assert titles() == ["pump.pdf", "relay.pdf", "valve.pdf"]


def test_a_build_that_would_lose_a_damaged_document_refuses_until_repair(three_docs, capsys):
    # pump.pdf's snapshot is damaged and its stored PDF gone: nothing can bring it back, so no build may
    # publish without it unasked. Before: published with a warning, pump.pdf gone.
    active = IndexFolder(Path("index")).active_name()
    vectors = active_folder() / "vectors.npy"
    vectors.write_bytes(vectors.read_bytes()[:100])
    pump = IndexFolder(Path("index")).documents_of(active)
    [sha] = [d.sha256 for d in pump if d.title == "pump.pdf"]
    Path(f"index/sources/{sha}.pdf").unlink()
    code, out, err = run(capsys, "index", str(three_docs["valve"]))
    assert code == 2 and "pump.pdf (from" in err and "Nothing was changed" in err and "pixelrag repair" in err, err
    assert IndexFolder(Path("index")).active_name() == active
    code, out, _ = run(capsys, "repair")
    assert code == 0 and titles() == ["relay.pdf"]
    assert run(capsys, "index", str(three_docs["pump"]), str(three_docs["valve"]))[0] == 0
    assert titles() == ["pump.pdf", "relay.pdf", "valve.pdf"]


def test_a_file_name_that_is_not_utf8_is_indexed_and_leaves_no_orphan(three_docs, capsys):
    # Before: UnicodeEncodeError writing its record, and its PDF stayed in sources/ with no snapshot.
    name = os.fsdecode(b"valve-\xff.pdf")
    Path(name).write_bytes(three_docs["valve"].read_bytes())
    code, out, err = run(capsys, "index", name)
    assert code == 0 and "Traceback" not in err, err
    assert "valve-\ufffd.pdf" in titles()
    assert not IndexFolder(Path("index")).orphaned_sources(IndexFolder(Path("index")).open())


def test_an_argument_too_long_for_a_file_name_is_one_line(env, capsys):
    # Before: ENAMETOOLONG from the folder check, a traceback.
    code, out, err = run(capsys, "index", "a" * 300 + ".pdf")
    assert code == 2 and "File name too long" in err and "Traceback" not in err, err


def test_a_dotenv_that_is_not_utf8_is_one_line(env, capsys):
    Path(".env").write_bytes(b"PIXELRAG_BACKEND=local\nSLACK_BOT_TOKEN=caf\xe9\n")
    code, out, err = run(capsys, "status")
    assert code == 2 and err.startswith("pixelrag: .env: not UTF-8 text (byte") and "Traceback" not in err, err


def test_status_over_a_damaged_thread_memory_says_so_and_shows_the_index(three_docs, capsys):
    # Before: "file is not a database", a traceback, and nothing of the index shown.
    Path("index/slack-threads.sqlite").write_bytes(b"not a database, whatever its name says" * 100)
    code, out, err = run(capsys, "status")
    assert code == 0 and "Traceback" not in err, err
    assert "usage: unknown: index/slack-threads.sqlite: the thread memory cannot be used" in out
    assert "relay.pdf (1 pages, shared)" in out


def test_status_and_ask_on_a_read_only_mount(three_docs, capsys, tmp_path_factory):
    # Before: status tried to write the thread memory (pruning) and ask to create out/: tracebacks.
    import asyncio
    import subprocess

    from core.embedded.threads import EmbeddedThreads

    async def one_question() -> None:  # a thread memory with something in it, as a bot leaves it
        store = await EmbeddedThreads(Path("index/slack-threads.sqlite")).open()
        await store.record_question("slack", "T1", "U1", 1.0)
        await store.close()

    asyncio.run(one_question())
    here, mounted = Path.cwd(), tmp_path_factory.mktemp("read-only")
    if subprocess.run(["mount", "--bind", str(here), str(mounted)], capture_output=True).returncode:
        pytest.skip("mount --bind is not allowed here")
    try:
        if subprocess.run(["mount", "-o", "remount,ro,bind", str(mounted)], capture_output=True).returncode:
            pytest.skip("a read-only remount is not allowed here")
        os.chdir(mounted)
        code, out, err = run(capsys, "status")
        assert code == 0 and "Traceback" not in err and "relay.pdf" in out, err
        code, out, err = run(capsys, "ask", "What is the weight of the pump?")
        assert code == 0 and "2.6 kg" in out and "Traceback" not in err, err
        assert "the page images were not written to out (Read-only file system)" in err
    finally:
        os.chdir(here)
        subprocess.run(["umount", "--lazy", str(mounted)], capture_output=True)  # a mapped file may hold it


def test_damaged_page_images_are_said_once_and_drawn_again_by_the_next_build(three_docs, capsys):
    # Before: every question logged a PIL traceback per citation, and no build noticed or redrew them.
    for image in Path("index/pages").glob("*.jpg"):
        image.write_bytes(b"garbage")
    code, out, err = run(capsys, "ask", "What is the weight of the pump?")
    assert code == 0 and "2.6 kg" in out and "Traceback" not in err, err
    assert out.count("the stored page image is damaged") == 1  # one note for the page cited
    code, out, err = run(capsys, "status")
    assert code == 0 and "pump.pdf: some of its page images are damaged" in out, out + err
    code, out, err = run(capsys, "index", str(three_docs["valve"]))
    assert code == 0 and "pump.pdf: its damaged page images were drawn again from its stored PDF" in out, out + err
    assert all(image.read_bytes()[:3] == b"\xff\xd8\xff" for image in Path("index/pages").glob("*.jpg"))
    code, out, err = run(capsys, "ask", "What is the weight of the pump?")
    assert code == 0 and "could not be drawn" not in out


def test_snapshots_replaced_by_a_file_is_one_line_and_repair_recovers(three_docs, capsys):
    # Before: NotADirectoryError tracebacks from ask, status, index and repair alike.
    import shutil

    shutil.rmtree("index/snapshots")
    Path("index/snapshots").write_text("not a folder")
    for command in (["ask", "pump weight"], ["status"], ["index", str(three_docs["valve"])]):
        code, out, err = run(capsys, *command)
        assert code == 2 and "pixelrag repair" in err and "Traceback" not in err, err
    code, out, err = run(capsys, "repair")
    assert code == 0 and "moved to be indexed again" in out, out + err
    assert run(capsys, "index", "index/recovered")[0] == 0
    assert titles() == ["pump.pdf", "relay.pdf"]


def test_a_chat_build_names_no_other_workspaces_damaged_documents(env, capsys):
    # The warnings of a build asked from a chat go to that chat: another workspace's titles stay out.
    import asyncio

    from core.config import Settings
    from core.service import Service

    relay = text_pdf(env / "relay.pdf", ["Relay R200. Coil voltage: 24 V DC."], title="T1 secret relay")
    pump = text_pdf(env / "pump.pdf", ["Pump P9. Weight: 2.6 kg."])

    async def scenario() -> tuple:
        service = Service(Settings(index_dir=env / "index", backend="local"))
        try:
            await service.index_bytes(relay.read_bytes(), "relay.pdf", scope="slack:T1")
            for pdf in Path("index/sources").glob("*.pdf"):
                pdf.unlink()
            for image in Path("index/pages").glob("*.jpg"):
                image.write_bytes(b"garbage")
            report = await service.index_bytes(pump.read_bytes(), "pump.pdf", scope="slack:T2")
            operator = await service.index([str(relay)])  # the operator, who sees every workspace
            return report, operator
        finally:
            await service.close()

    report, operator = asyncio.run(scenario())
    assert [d.title for d in report.documents] == ["pump.pdf"]
    assert not [w for w in report.warnings if "T1 secret relay" in w], report.warnings
    assert [w for w in operator.warnings if "T1 secret relay: its stored PDF is missing" in w], operator.warnings
