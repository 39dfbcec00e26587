"""The official PixelRAG /search schema, spoken by one of its own clients: pixelrag-langchain, installed
from its package in a virtualenv of its own (`make setup-test` makes .venv-clients: it pins an httpx older
than the one google-genai needs), run against the real `pixelrag web` process of test_api's fixture."""

from __future__ import annotations

import base64
import json
import os
import subprocess

import pytest

from tests.conftest import ROOT
from tests.end_to_end.web_process import QUESTION, bearer, pixelrag

CLIENTS_PYTHON = ROOT / ".venv-clients" / "bin" / "python"

# Run by the client's virtualenv: the package's client, retriever and tool, as an agent would use them.
CLIENT_SCRIPT = """
import base64, json, sys
from pixelrag_langchain import (
    PixelRAGAPIError, PixelRAGClient, PixelRAGConfig, PixelRAGRetriever, PixelRAGSearchTool,
)
base, key, question, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
config = PixelRAGConfig(base_url=base, api_key=key or None, n_docs=n)
client = PixelRAGClient(config)
try:
    tiles = client.search(question, include_images=True)
except PixelRAGAPIError as exc:
    print(json.dumps({"refused": exc.status_code, "body": exc.body}))
    sys.exit(0)
documents = PixelRAGRetriever(config=config, raise_on_error=True).invoke(question)
print(json.dumps({
    "tiles": [
        {"score": t.score, "source": t.source, "article_id": t.article_id, "tile_index": t.tile_index,
         "coordinates": t.has_tile_coordinates, "image": t.image_base64, "raw": t.raw}
        for t in tiles
    ],
    "fetched": base64.b64encode(client.fetch_tile(tiles[0])).decode(),
    "status": client.status(),
    "retrieved": [d.metadata["tile_url"] for d in documents],
    "tool": PixelRAGSearchTool(config=config).invoke({"query": question}),
}))
"""


def langchain_client(base: str, key: str, question: str, n_docs: int = 3) -> dict:
    if not CLIENTS_PYTHON.exists():
        if os.environ.get("PIXELRAG_REQUIRE_CLIENTS"):
            pytest.fail(f"{CLIENTS_PYTHON} is missing: make setup-test installs the clients' virtualenv")
        pytest.skip("no .venv-clients (make setup-test makes it)")
    run = subprocess.run(
        [str(CLIENTS_PYTHON), "-c", CLIENT_SCRIPT, base, key, question, str(n_docs)],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": os.environ.get("PATH", ""), "NO_PROXY": "*"},
    )
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


async def test_the_official_clients_search_finds_what_pixelrag_ask_finds(api):
    base, session, keys, index = api
    cli = json.loads(pixelrag(index, "ask", QUESTION, "--retrieve-only", "--json").stdout)
    seen = langchain_client(base, keys["everyone"], QUESTION, n_docs=3)
    expected = [(h["title"], h["page"], h["score"]) for h in cli["hits"][:3]]
    assert [(t["source"], t["tile_index"] + 1, t["score"]) for t in seen["tiles"]] == expected
    first = seen["tiles"][0]
    assert first["coordinates"] and first["raw"]["page"] == cli["hits"][0]["page"]
    image = base64.b64decode(first["image"])
    assert image[:3] == b"\xff\xd8\xff"  # the page's JPEG, inline
    assert base64.b64decode(seen["fetched"]) == image  # /tile/{article}/{tile}/{chunk} serves the same
    assert len(seen["retrieved"]) == 3 and all(url.startswith(f"{base}/tile/") for url in seen["retrieved"])
    assert "hf300-brochure" in seen["tool"] or "HydroFlow" in seen["tool"]
    assert seen["status"]["total_vectors"] == 4 and seen["status"]["collection"] == "shared"


async def test_the_official_clients_see_only_their_keys_collection(api):
    base, session, keys, _ = api
    question = "How many litres does the Z9 blender hold?"
    shared = langchain_client(base, keys["everyone"], question, n_docs=10)
    assert shared["tiles"] and all(t["source"] != "hr-note.pdf" for t in shared["tiles"])
    channel = langchain_client(base, keys["hr"], question, n_docs=10)
    assert channel["tiles"][0]["source"] == "hr-note.pdf"
    note = channel["tiles"][0]
    # The note's tile, asked for with the shared key: no such tile in that collection.
    async with session.get(f"{base}/tile/{note['article_id']}/0/0", headers=bearer(keys["everyone"])) as response:
        assert response.status == 404 and response.headers["Content-Type"].startswith("application/json")
    async with session.get(f"{base}/tile/{note['article_id']}/0/0", headers=bearer(keys["hr"])) as response:
        assert response.status == 200 and (await response.read())[:3] == b"\xff\xd8\xff"
    for key in ("", "prk_unknown", keys["gone"]):
        refused = langchain_client(base, key, question)
        assert refused["refused"] == 401 and "pixelrag keys add" in json.loads(refused["body"])["detail"]


async def test_requests_outside_the_schema_are_refused_with_a_detail(api):
    base, session, keys, _ = api
    for body, words in (
        ({}, '"queries"'),
        ({"queries": []}, '"queries"'),
        ({"queries": [{"text": "x"}] * 17}, "At most 16"),
        ({"queries": [{"text": "x"}], "n_docs": 0}, '"n_docs"'),
        ({"queries": [{"text": "x"}], "n_docs": "5"}, '"n_docs"'),
        ({"queries": [{"embedding": [0.1, 0.2]}]}, "embeds queries itself"),
        ({"queries": [{"text": ""}]}, "text, image, or both"),
        ({"queries": [{"image": "data:image/png;base64,%%%"}]}, "base64"),
    ):
        async with session.post(f"{base}/search", headers=bearer(keys["everyone"]), json=body) as response:
            assert response.status == 400, body
            assert words in (await response.json())["detail"], body
    two = {"queries": [{"text": QUESTION}, {"text": "How many litres does the Z9 blender hold?"}], "n_docs": 2}
    async with session.post(f"{base}/search", headers=bearer(keys["hr"]), json=two) as response:
        results = (await response.json())["results"]
    assert [len(r["hits"]) for r in results] == [2, 2]
    assert results[0]["hits"][0]["url"] != results[1]["hits"][0]["url"]  # each query ranked on its own
    async with session.get(f"{base}/health") as response:
        assert response.status == 200 and (await response.json()) == {"status": "ok"}
