"""The HTTP API through real processes: `pixelrag keys` makes the keys, `pixelrag web` serves /api/, and
`pixelrag ask` answers the same question on the command line. Each route refuses a missing or revoked
key, never shows a document outside the key's collection, and gives the same pages and answer as
`pixelrag ask`."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import aiohttp
import pytest
from PIL import Image

from tests.conftest import ROOT, closed_port, text_pdf

QUESTION = "What is the mounting hole spacing of the HydroFlow HF-300?"
CHANNEL = "slack:T1/C9"
PER_HOUR = 5  # each key's questions an hour, as a person's in chat


def pixelrag(index: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_", "PIXELRAG_"))}
    env["PYTHONPATH"] = str(ROOT)
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *argv, "--index", str(index)],
        capture_output=True,
        text=True,
        env=env,
        cwd=index.parent,
        timeout=240,
    )


@pytest.fixture
async def api(tmp_path, brochure_index):
    """The brochure in the shared collection and a channel's own note; `pixelrag web` serving them."""
    index = tmp_path / "index"
    shutil.copytree(brochure_index, index)
    note = text_pdf(tmp_path / "hr-note.pdf", ["HR note: the Z9 blender in the break room holds 1.5 litres."])
    from core import Service, Settings

    async with Service(Settings(index_dir=index, backend="local")) as service:
        await service.index_bytes(note.read_bytes(), "hr-note.pdf", scope=CHANNEL)
    keys = {}
    for name, scope in (("everyone", "shared"), ("hr", CHANNEL), ("gone", "shared")):
        made = pixelrag(index, "keys", "add", name, "--scope", scope)
        assert made.returncode == 0, made.stderr
        keys[name] = made.stdout.strip().splitlines()[-1]
    assert pixelrag(index, "keys", "revoke", "gone").returncode == 0
    port = closed_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_", "PIXELRAG_"))}
    env["PYTHONPATH"] = str(ROOT)
    env["PIXELRAG_USER_QUESTIONS_PER_HOUR"] = str(PER_HOUR)
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot.cli", "web", "--index", str(index), "--port", str(port),
        cwd=tmp_path, env=env, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    try:
        async with aiohttp.ClientSession() as session:
            for _ in range(600):
                try:
                    async with session.get(f"{base}/readyz") as response:
                        if response.status == 200:
                            break
                except aiohttp.ClientConnectionError:
                    pass
                await asyncio.sleep(0.1)
            else:
                raise AssertionError("pixelrag web did not become ready")
            yield base, session, keys, index
    finally:
        process.terminate()
        _, stderr = await process.communicate()
        assert b"Traceback" not in stderr, stderr.decode()


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


async def test_a_key_is_required_and_a_revoked_one_refused(api):
    base, session, keys, _ = api
    for headers in ({}, bearer("prk_not-a-key"), bearer(keys["gone"]), {"Authorization": keys["everyone"]}):
        for method, route in (("GET", "documents"), ("POST", "search"), ("POST", "ask")):
            async with session.request(method, f"{base}/api/{route}", headers=headers, json={"query": "x"}) as response:
                assert response.status == 401, (route, headers)
                assert response.headers["WWW-Authenticate"].startswith("Bearer")
                assert "pixelrag keys add" in (await response.json())["error"]


async def test_a_key_sees_exactly_its_collection(api):
    base, session, keys, _ = api
    listed = {}
    for name in ("everyone", "hr"):
        async with session.get(f"{base}/api/documents", headers=bearer(keys[name])) as response:
            assert response.status == 200
            listed[name] = {d["file_name"]: d["collection"] for d in (await response.json())["documents"]}
    assert listed["everyone"] == {"hf300-brochure.pdf": "shared"}
    assert listed["hr"] == {"hf300-brochure.pdf": "shared", "hr-note.pdf": CHANNEL}
    question = {"query": "How many litres does the Z9 blender hold?"}
    async with session.post(f"{base}/api/search", headers=bearer(keys["everyone"]), json=question) as response:
        found = [r["title"] for r in (await response.json())["results"]]
    assert found and all("hr-note" not in title for title in found)
    async with session.post(f"{base}/api/search", headers=bearer(keys["hr"]), json=question) as response:
        assert (await response.json())["results"][0]["title"] == "hr-note.pdf"
    async with session.post(
        f"{base}/api/search", headers=bearer(keys["hr"]), json=question | {"top": 100}
    ) as response:  # every page the key sees: the brochure's 4 and the note's 1
        assert len((await response.json())["results"]) == 5


async def test_search_and_ask_give_what_pixelrag_ask_gives(api):
    base, session, keys, index = api
    cli = pixelrag(index, "ask", QUESTION, "--retrieve-only", "--json")
    expected = [(h["title"], h["page"], h["score"]) for h in json.loads(cli.stdout)["hits"]]
    async with session.post(
        f"{base}/api/search", headers=bearer(keys["everyone"]), json={"query": QUESTION, "images": True}
    ) as response:
        assert response.status == 200
        results = (await response.json())["results"]
    assert [(r["title"], r["page"], r["score"]) for r in results] == expected
    assert all(r["view"].startswith("/view/") and r["image"].startswith("data:image/jpeg;base64,") for r in results)

    cli = json.loads(pixelrag(index, "ask", QUESTION, "--json", "--out", "answers").stdout)
    events = []
    async with session.post(f"{base}/api/ask", headers=bearer(keys["everyone"]), json={"query": QUESTION}) as response:
        assert response.status == 200 and response.headers["Content-Type"].startswith("text/event-stream")
        async for block in _events(response):
            events.append(block)
    names = [name for name, _ in events]
    assert names[0] == "step" and "pages" in names and names[-1] == "answer"
    answer = events[-1][1]
    assert answer["markdown"] == cli["markdown"] and "148" in answer["markdown"]
    assert [(c["page"], c["quote"]) for c in answer["citations"]] == [(c["page"], c["quote"]) for c in cli["citations"]]
    async with session.get(base + answer["citations"][0]["url"]) as response:
        assert response.status == 200  # the citation's link opens the viewer


async def test_bad_bodies_are_one_clear_line(api):
    base, session, keys, _ = api
    shot = io.BytesIO()
    Image.new("RGB", (40, 30), "white").save(shot, "PNG")
    for body, words in (
        ("not json", "Send a JSON body"),
        ([], "JSON object"),
        ({}, 'Give a "query"'),
        ({"query": "x" * 4001}, "at most 4000"),
        ({"image": "%%%"}, "base64"),
        ({"query": "which part?", "image": base64.b64encode(b"GIF89a....").decode()}, "image"),
        ({"query": "x", "conversation": "../../etc"}, "32 hexadecimal"),
        ({"query": "x", "top": 0}, '"top"'),
        ({"query": "x", "top": 101}, '"top"'),
        ({"query": "x", "top": True}, '"top"'),
    ):
        kwargs = {"data": body} if isinstance(body, str) else {"json": body}
        async with session.post(f"{base}/api/search", headers=bearer(keys["everyone"]), **kwargs) as response:
            assert response.status == 400, body
            assert words in (await response.json())["error"], body
    image = {"image": base64.b64encode(shot.getvalue()).decode()}
    async with session.post(f"{base}/api/search", headers=bearer(keys["everyone"]), json=image) as response:
        assert response.status == 200  # a screenshot alone is a question


async def test_each_key_is_counted_as_a_person_by_the_limits(api):
    base, session, keys, _ = api
    for _ in range(PER_HOUR):
        async with session.post(
            f"{base}/api/search", headers=bearer(keys["hr"]), json={"query": "blender"}
        ) as response:
            assert response.status == 200
    for route in ("search", "ask"):
        async with session.post(
            f"{base}/api/{route}", headers=bearer(keys["hr"]), json={"query": "blender"}
        ) as response:
            assert response.status == 429 and 0 < int(response.headers["Retry-After"]) <= 3600
            assert "PIXELRAG_USER_QUESTIONS_PER_HOUR" in (await response.json())["error"]
    async with session.post(f"{base}/api/search", headers=bearer(keys["everyone"]), json={"query": "x"}) as response:
        assert response.status == 200  # another key is another person


async def _events(response: aiohttp.ClientResponse):
    """The server-sent events of a response: (event, data)."""
    buffered = ""
    async for chunk in response.content.iter_any():
        buffered += chunk.decode()
        while "\n\n" in buffered:
            block, buffered = buffered.split("\n\n", 1)
            fields = dict(line.split(": ", 1) for line in block.splitlines())
            yield fields["event"], json.loads(fields["data"])
