"""The HTTP API through real processes: `pixelrag keys` makes the keys, `pixelrag web` serves /api/, and
`pixelrag ask` answers the same question on the command line. Each route refuses a missing or revoked
key, never shows a document outside the key's collection, and gives the same pages and answer as
`pixelrag ask`."""

from __future__ import annotations

import base64
import io
import json

import aiohttp
from PIL import Image

from tests.end_to_end.web_process import CHANNEL, PER_HOUR, QUESTION, bearer, pixelrag


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
