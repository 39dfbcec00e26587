"""The MCP server through the official SDK's own client, against real processes: `pixelrag mcp` over stdio
and `pixelrag web`'s /mcp over streamable HTTP (keys from `pixelrag keys`). The tools give the pages and
answers `pixelrag ask` gives, a key or --scope decides what is seen, a caller's mistake is a tool error,
and a request without a valid key is refused with HTTP 401."""

from __future__ import annotations

import base64
import io
import json
import signal
import sys
from contextlib import asynccontextmanager
from pathlib import Path

import aiohttp
import httpx2
import pytest
from mcp import Client, MCPError, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from PIL import Image

from tests.end_to_end.web_process import (
    BLENDER,
    CHANNEL,
    QUESTION,
    bearer,
    environment,
    keyed_index,
    pixelrag,
    web_process,
)

TOOLS = {"search_pages", "ask", "list_documents"}


@pytest.fixture
async def served(tmp_path, brochure_index):
    """`pixelrag web` serving the brochure and the channel's note; stopped with Ctrl-C, which must end it
    cleanly with /mcp's requests served."""
    index, keys = await keyed_index(tmp_path, brochure_index)
    async with web_process(index, stop=signal.SIGINT) as base:
        yield base, keys, index


@pytest.fixture
async def keyed(tmp_path, brochure_index):
    """The same index, for `pixelrag mcp` to serve."""
    index, _ = await keyed_index(tmp_path, brochure_index)
    return index


@asynccontextmanager
async def over_http(base: str, headers: dict, mode: str = "auto", responses: list | None = None):
    """The SDK's client on /mcp with these headers; `responses` collects the HTTP responses it was given.
    mode "auto" speaks the 2026 protocol (each request stands alone), "legacy" the 2025 one (an initialize
    handshake first)."""

    async def heard(response: httpx2.Response) -> None:
        if responses is not None:
            responses.append(response)

    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(60, read=300), event_hooks={"response": [heard]})
    async with http, Client(streamable_http_client(f"{base}/mcp", http_client=http), mode=mode) as client:
        yield client


@asynccontextmanager
async def over_stdio(index: Path, *options: str):
    """`pixelrag mcp` run by the SDK's client; it must write nothing but the protocol on stdout (a line the
    client cannot read reaches its message handler as an exception) and no traceback on stderr."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "bot.cli", "mcp", "--index", str(index), *options],
        env=environment(),
        cwd=index.parent,
    )
    unreadable: list[Exception] = []

    async def heard(message) -> None:
        if isinstance(message, Exception):
            unreadable.append(message)

    log = index.parent / "mcp-stderr.txt"
    with log.open("w") as stderr:
        async with Client(stdio_client(params, errlog=stderr), message_handler=heard) as client:
            yield client
    assert not unreadable, unreadable
    assert "Traceback" not in log.read_text(), log.read_text()


def titles(result) -> list[str]:
    return [r["title"] for r in result.structured_content["results"]]


def decoded(image) -> Image.Image:
    return Image.open(io.BytesIO(base64.b64decode(image.data)))


def refusal(error: BaseException) -> list[MCPError]:
    """The MCP errors inside what the client raised (its task groups wrap them)."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in refusal(inner)]
    return [error] if isinstance(error, MCPError) else []


async def test_the_three_tools_are_listed_over_both_transports(served):
    base, keys, index = served
    for mode in ("auto", "legacy"):
        async with over_http(base, bearer(keys["everyone"]), mode) as client:
            listed = (await client.list_tools()).tools
            assert {tool.name for tool in listed} == TOOLS, mode
            assert all(tool.description and tool.input_schema["type"] == "object" for tool in listed)
    async with over_stdio(index) as client:  # beside the web server, as on a team's machine
        assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_search_and_ask_give_what_pixelrag_ask_gives(served, mode):
    base, keys, index = served
    cli = json.loads(pixelrag(index, "ask", QUESTION, "--retrieve-only", "--json").stdout)
    async with over_http(base, bearer(keys["everyone"]), mode) as client:
        found = await client.call_tool("search_pages", {"query": QUESTION})
        answered = await client.call_tool("ask", {"query": QUESTION})
    assert not found.is_error
    results = found.structured_content["results"]
    assert [(r["title"], r["page"], r["score"]) for r in results] == [
        (h["title"], h["page"], h["score"]) for h in cli["hits"]
    ]
    assert [block.type for block in found.content] == ["text", "image"] * len(results)
    for result, text, image in zip(results, found.content[::2], found.content[1::2]):
        for shown in (result["title"], f"p. {result['page']}", result["document"], result["view"]):
            assert shown in text.text
        assert image.mime_type == "image/jpeg" and decoded(image).format == "JPEG"

    cli = json.loads(pixelrag(index, "ask", QUESTION, "--json", "--out", "answers").stdout)
    record = answered.structured_content
    assert not answered.is_error and record["markdown"] == cli["markdown"] and "148" in cli["markdown"]
    assert [(c["page"], c["quote"]) for c in record["citations"]] == [(c["page"], c["quote"]) for c in cli["citations"]]
    assert answered.content[0].text.startswith(cli["markdown"])
    cited = [block for block in answered.content[1:] if block.type == "text"]
    crops = [block for block in answered.content if block.type == "image"]
    assert len(cited) == len(record["citations"]) and len(crops) == len(record["citations"])
    for citation, text, crop in zip(record["citations"], cited, crops):
        assert f"{citation['title']}, p. {citation['page']}" in text.text and citation["quote"] in text.text
        assert citation["url"] in text.text and crop.mime_type == "image/png" and decoded(crop).format == "PNG"
    async with aiohttp.ClientSession() as session, session.get(base + record["citations"][0]["url"]) as response:
        assert response.status == 200  # the citation's link opens the viewer


async def test_a_key_is_required_and_a_revoked_one_refused(served):
    base, keys, _ = served
    for headers in ({}, bearer("prk_not-a-key"), bearer(keys["gone"]), {"Authorization": keys["everyone"]}):
        responses: list[httpx2.Response] = []
        with pytest.raises(BaseException) as raised:
            async with over_http(base, headers, responses=responses):
                pass
        assert refusal(raised.value) and all("pixelrag keys add" in e.message for e in refusal(raised.value))
        assert responses and all(r.status_code == 401 for r in responses), headers
        assert all(r.headers["WWW-Authenticate"] == 'Bearer realm="pixelrag"' for r in responses)
        assert all(r.headers["Content-Type"].startswith("application/json") for r in responses)


async def test_a_key_sees_exactly_its_collection(served):
    base, keys, _ = served
    async with over_http(base, bearer(keys["everyone"])) as everyone, over_http(base, bearer(keys["hr"])) as hr:
        listed = {}
        for name, client in (("everyone", everyone), ("hr", hr)):
            documents = (await client.call_tool("list_documents", {})).structured_content["documents"]
            listed[name] = {d["file_name"]: d["collection"] for d in documents}
        assert listed["everyone"] == {"hf300-brochure.pdf": "shared"}
        assert listed["hr"] == {"hf300-brochure.pdf": "shared", "hr-note.pdf": CHANNEL}
        found = titles(await everyone.call_tool("search_pages", {"query": BLENDER}))
        assert found and "hr-note.pdf" not in found
        assert titles(await hr.call_tool("search_pages", {"query": BLENDER}))[0] == "hr-note.pdf"


async def test_over_stdio_the_scope_decides_what_is_seen(keyed):
    async with over_stdio(keyed) as client:
        listed = await client.call_tool("list_documents", {})
        assert [d["file_name"] for d in listed.structured_content["documents"]] == ["hf300-brochure.pdf"]
        assert "hr-note.pdf" not in listed.content[0].text
        assert "hr-note.pdf" not in titles(await client.call_tool("search_pages", {"query": BLENDER}))
    async with over_stdio(keyed, "--scope", CHANNEL) as client:
        listed = await client.call_tool("list_documents", {})
        assert {d["file_name"] for d in listed.structured_content["documents"]} == {"hf300-brochure.pdf", "hr-note.pdf"}
        assert titles(await client.call_tool("search_pages", {"query": BLENDER}))[0] == "hr-note.pdf"


async def test_a_bad_call_is_a_tool_error_not_a_crash(keyed):
    async with over_stdio(keyed) as client:
        for tool, arguments, words in (
            (
                "search_pages",
                {"query": "which part?", "image": base64.b64encode(b"GIF89a....").decode()},
                "PNG, JPEG or WebP",
            ),
            ("search_pages", {"image": "%%%"}, "base64"),
            ("search_pages", {}, 'Give a "query"'),
            ("search_pages", {"question": "x"}, "not question"),
            ("ask", {"query": "x" * 4001}, "at most 4000"),
            ("ask", {"query": "x", "conversation": "../../etc"}, "32 hexadecimal"),
        ):
            result = await client.call_tool(tool, arguments)
            assert result.is_error and words in result.content[0].text, (tool, arguments, result.content)
            assert "Traceback" not in result.content[0].text
        assert not (await client.call_tool("list_documents", {})).is_error  # still serving


async def test_a_conversation_keeps_its_thread(served):
    base, keys, _ = served
    async with over_http(base, bearer(keys["everyone"])) as client:
        await client.call_tool("ask", {"query": QUESTION, "conversation": "c" * 32})
        followed = await client.call_tool("ask", {"query": "And its weight?", "conversation": "c" * 32})
        alone = await client.call_tool("ask", {"query": "And its weight?"})
    assert "HF-300" in followed.structured_content["interpreted_question"]
    assert "HF-300" not in alone.structured_content["interpreted_question"]
