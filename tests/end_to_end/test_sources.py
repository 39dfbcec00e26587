"""Watched sources through the real command line: a folder whose PDFs are added, changed and deleted
between checks, and an address behind a loopback server that honours ETag and Last-Modified (and then
fails in three ways). The index follows each change exactly and a failure keeps the last good version."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from pathlib import Path

import pymupdf
import pytest
from aiohttp import web

from core import Service, Settings
from tests.conftest import text_pdf
from tests.end_to_end.web_process import environment, pixelrag, web_process

PRIVATE = {"PIXELRAG_ALLOW_PRIVATE_URLS": "1"}  # the loopback server is a private address


async def run(index: Path, *argv: str, env: dict | None = None):
    return await asyncio.to_thread(pixelrag, index, *argv, env=env)


async def documents(index: Path) -> dict[str, int]:
    async with Service(Settings(index_dir=index, backend="local")) as service:
        return {d.file_name: d.page_count for d in await service.all_documents()}


async def test_a_watched_folder_is_followed_exactly(tmp_path):
    index, folder = tmp_path / "index", tmp_path / "manuals"
    index.mkdir()
    folder.mkdir()
    text_pdf(folder / "alpha.pdf", ["Alpha pump: 12 kg."])
    text_pdf(folder / "beta.pdf", ["Beta valve, page 1.", "Beta valve: 40 bar.", "Beta valve, page 3."])
    (folder / "notes.txt").write_text("not a PDF")
    added = await run(index, "sources", "add", str(folder), "--every", "1h")
    assert added.returncode == 0 and "watching" in added.stdout, added.stderr
    first = await run(index, "sources", "check")
    assert first.returncode == 0, first.stderr
    assert "done: 2 PDFs; indexed" in first.stdout and "4 pages embedded" in first.stdout
    assert await documents(index) == {"alpha.pdf": 1, "beta.pdf": 3}

    (folder / "alpha.pdf").unlink()
    text_pdf(folder / "beta.pdf", ["Beta valve, page 1.", "Beta valve: 45 bar.", "Beta valve, page 3."])
    text_pdf(folder / "gamma.pdf", ["Gamma filter: 3 microns."])
    second = await run(index, "sources", "check")
    assert second.returncode == 0, second.stderr
    # beta's one changed page and gamma's page embedded; beta's two others reused; alpha removed
    assert "2 pages embedded, 2 reused" in second.stdout and "1 removed" in second.stdout, second.stdout
    assert await documents(index) == {"beta.pdf": 3, "gamma.pdf": 1}

    third = await run(index, "sources", "check")
    assert "2 PDFs; none removed" in third.stdout and "embedded" not in third.stdout  # nothing read again
    listed = json.loads((await run(index, "sources", "list", "--json")).stdout)
    assert listed[0]["failures"] == 0 and listed[0]["result"].startswith("2 PDFs")

    refused = await run(index, "sources", "remove", listed[0]["id"])  # no terminal: needs --yes
    assert refused.returncode == 2 and "--yes" in refused.stderr
    removed = await run(index, "sources", "remove", listed[0]["id"], "--yes")
    assert removed.returncode == 0 and "2 document(s) removed" in removed.stdout
    assert await documents(index) == {}


@pytest.fixture
async def pdf_site(tmp_path):
    """/datasheet.pdf with an ETag and a Last-Modified date; `site["mode"]` makes it misbehave."""
    pdf = text_pdf(tmp_path / "datasheet.pdf", ["X9 sensor datasheet: I2C address 0x76."]).read_bytes()
    site = {"mode": "ok", "requests": [], "pdf": pdf, "etag": '"v1"'}

    async def datasheet(request: web.Request) -> web.StreamResponse:
        site["requests"].append(dict(request.headers))
        if site["mode"] == "404":
            return web.Response(status=404, text="gone")
        if site["mode"] == "html":
            return web.Response(text="<html>We moved our datasheets</html>", content_type="text/html")
        if site["mode"] == "slow":
            await asyncio.sleep(4)
        if request.headers.get("If-None-Match") == site["etag"]:
            return web.Response(status=304, headers={"ETag": site["etag"]})
        headers = {"ETag": site["etag"], "Last-Modified": "Mon, 07 Dec 2026 09:00:00 GMT"}
        return web.Response(body=site["pdf"], content_type="application/pdf", headers=headers)

    app = web.Application()
    app.router.add_get("/datasheet.pdf", datasheet)
    runner = web.AppRunner(app)
    await runner.setup()
    server = web.TCPSite(runner, "127.0.0.1", 0)
    await server.start()
    port = server._server.sockets[0].getsockname()[1]
    site["url"] = f"http://127.0.0.1:{port}/datasheet.pdf"
    yield site
    await runner.cleanup()


async def test_a_watched_address_costs_one_304_when_unchanged_and_keeps_its_last_good_version(tmp_path, pdf_site):
    index = tmp_path / "index"
    index.mkdir()
    env = PRIVATE | {"PIXELRAG_REQUEST_TIMEOUT": "2"}
    assert (await run(index, "sources", "add", pdf_site["url"], "--every", "30m", env=env)).returncode == 0
    first = await run(index, "sources", "check", env=env)
    assert first.returncode == 0 and "indexed" in first.stdout, first.stdout + first.stderr
    assert await documents(index) == {"datasheet.pdf": 1}

    pdf_site["requests"].clear()
    second = await run(index, "sources", "check", env=env)
    assert "unchanged (304 Not Modified)" in second.stdout
    [asked] = pdf_site["requests"]  # one conditional request, nothing else
    assert asked["If-None-Match"] == '"v1"' and asked["If-Modified-Since"] == "Mon, 07 Dec 2026 09:00:00 GMT"

    for mode, reason in (("404", "HTTP 404"), ("slow", "could not download it"), ("html", "text/html, not a PDF")):
        pdf_site["mode"] = mode
        failed = await run(index, "sources", "check", env=env)
        assert failed.returncode == 1 and "failed" in failed.stdout and reason in failed.stdout, failed.stdout
        assert await documents(index) == {"datasheet.pdf": 1}  # the last good version stays
    [listed] = json.loads((await run(index, "sources", "list", "--json", env=env)).stdout)
    assert listed["failures"] == 3 and listed["failing_since"] > 0 and "text/html" in listed["result"]
    text = (await run(index, "sources", "list", env=env)).stdout
    assert "FAILING since" in text
    status = json.loads((await run(index, "status", "--json", env=env)).stdout)
    assert "FAILING since" in status["sources"][0] and "text/html" in status["sources"][0]
    assert len(status["jobs_failed_lately"]) == 3 and status["jobs_queued"] == 0 and status["jobs_running"] == []

    pdf_site["mode"] = "ok"  # a new version, with a new ETag
    doc = pymupdf.open()
    for body in ("X9 sensor datasheet: I2C address 0x77.", "X9 sensor: pin out."):
        doc.new_page().insert_textbox(pymupdf.Rect(50, 50, 550, 800), body, fontsize=11)
    pdf_site["pdf"], pdf_site["etag"] = doc.tobytes(), '"v2"'
    recovered = await run(index, "sources", "check", env=env)
    assert recovered.returncode == 0 and "indexed" in recovered.stdout, recovered.stdout
    assert await documents(index) == {"datasheet.pdf": 2}  # replaced, not added beside the old one
    [listed] = json.loads((await run(index, "sources", "list", "--json", env=env)).stdout)
    assert listed["failures"] == 0 and listed["failing_since"] == 0


async def test_a_worker_checks_each_source_on_its_schedule(tmp_path):
    index, folder = tmp_path / "index", tmp_path / "shared-drive"
    index.mkdir()
    folder.mkdir()
    text_pdf(folder / "policy.pdf", ["Travel policy: economy class under 6 hours."])
    assert (await run(index, "sources", "add", str(folder), "--every", "1m", "--scope", "slack:T1")).returncode == 0
    worker = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "worker", "--index", str(index),
        env=environment(), cwd=tmp_path, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while await documents(index) != {"policy.pdf": 1}:  # due at once: the worker queues its check
            assert time.monotonic() < deadline and worker.returncode is None
            await asyncio.sleep(0.5)
    finally:
        worker.send_signal(signal.SIGTERM)
        stderr = (await worker.stderr.read()).decode()
        assert await worker.wait() == 0, stderr
    jobs = json.loads((await run(index, "jobs", "--json")).stdout)["jobs"]
    assert [(j["kind"], j["state"], j["scope"]) for j in jobs] == [("check", "done", "slack:T1")]
    [listed] = json.loads((await run(index, "sources", "list", "--json")).stdout)
    assert 55 <= listed["next_check"] - listed["checked"] <= 61  # the next one in a minute, not before


async def test_a_chat_process_runs_a_worker_unless_told_not_to(tmp_path):
    index, folder = tmp_path / "index", tmp_path / "drive"
    index.mkdir()
    folder.mkdir()
    text_pdf(folder / "handbook.pdf", ["Handbook: the office opens at 8:00."])
    assert (await run(index, "sources", "add", str(folder))).returncode == 0
    async with web_process(index, PIXELRAG_WORKERS="0"):
        await asyncio.sleep(3)  # long enough for a worker to have said it is alive (it beats at once)
        assert json.loads((await run(index, "jobs", "--json")).stdout)["workers"] == []
    assert await documents(index) == {}
    async with web_process(index):  # the default: one worker beside the chat
        deadline = time.monotonic() + 120
        while await documents(index) != {"handbook.pdf": 1}:
            assert time.monotonic() < deadline
            await asyncio.sleep(0.5)
        assert len(json.loads((await run(index, "jobs", "--json")).stdout)["workers"]) == 1


async def test_a_source_failing_for_a_day_is_told_to_its_channel_once(tmp_path):
    from bot.job_worker import tell_failing
    from core import job_queue, watch_address

    settings = Settings(index_dir=tmp_path / "index")
    queue = await job_queue(settings).open()
    try:
        failing = await watch_address(queue, "https://vendor.example/x9.pdf", "slack:T1/C9", notify="slack:T1:C9")
        recent = await watch_address(queue, "https://vendor.example/y1.pdf", "slack:T1", notify="slack:T1:C7")
        other = await watch_address(queue, "https://vendor.example/z2.pdf", "discord:G1", notify="discord:G1:42")
        day_ago = time.time() - 25 * 3600
        for source, since in ((failing, day_ago), (recent, time.time() - 3600), (other, day_ago)):
            await queue.checked(source.id, {"failures": 3, "failing_since": since, "result": "HTTP 404."})
    finally:
        await queue.close()
    told: list[tuple[str, str]] = []

    async def post(channel: str, text: str) -> None:
        told.append((channel, text))

    assert await tell_failing(settings, "slack", post) == 1
    [(channel, text)] = told
    assert channel == "C9" and "vendor.example/x9.pdf has failed for a day: HTTP 404." in text
    assert await tell_failing(settings, "slack", post) == 0  # once
    queue = await job_queue(settings).open()
    try:  # told two days ago, recovered, failing again for a day since: a new failure, told again
        await queue.checked(failing.id, {"told": time.time() - 48 * 3600, "failing_since": time.time() - 24.5 * 3600})
    finally:
        await queue.close()
    assert await tell_failing(settings, "slack", post) == 1 and len(told) == 2
    assert await tell_failing(settings, "discord", post) == 1 and told[-1][0] == "42"
