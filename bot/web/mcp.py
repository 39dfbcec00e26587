"""The MCP server (Model Context Protocol, the official SDK's low-level server): pixelrag's pages and cited
answers as three tools an agent can call (docs/api.md):

- search_pages(query, image)          the top pages: each page's JPEG, with its document's title and id,
                                      the page, its score and its viewer link;
- ask(query, image, conversation)     the cited answer: its Markdown, then each citation's label, quote,
                                      viewer link and highlight crop;
- list_documents()                    the documents of the caller's collection.

Two transports: stdio (`pixelrag mcp`, an agent on this machine, as the local user in the collection
`--scope` names) and streamable HTTP at /mcp on `pixelrag web`, where each request's API key says who
asks and what they see, as on /api/. What ForAgents gives the HTTP API, the tools give as MCP content. A
mistake of the caller's (a bad image, a limit reached) is a tool error carrying its message."""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from aiohttp import web
from mcp.server import Server, ServerRequestContext
from mcp.server.stdio import stdio_server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    CallToolRequestParams,
    CallToolResult,
    ContentBlock,
    ImageContent,
    ListToolsResult,
    PaginatedRequestParams,
    TextContent,
    Tool,
    ToolAnnotations,
)

from core import BadInput, PixelragError, QueryImage, Service, Settings, ThreadMemory

from .asgi import serve_asgi
from .chat import ID, MAX_QUESTION
from .for_agents import ForAgents, Refused, caller, decoded_image

log = logging.getLogger("pixelrag.web")

Caller = tuple[str, str]  # (name, collection): whose questions they are (for the limits), and what they see
LOCAL_USER = "local"  # who asks over stdio
CALLER_KEY = "pixelrag.caller"  # in an HTTP request's ASGI scope: the Caller its API key names

INSTRUCTIONS = (
    "pixelrag answers questions about a team's PDF documents by reading their pages. list_documents says "
    "what can be searched; search_pages finds the pages for a question or a screenshot (page images "
    "included); ask gives an answer that cites the pages it read, quoting them."
)
QUERY = {"type": "string", "maxLength": MAX_QUESTION, "description": "the question or search words"}
IMAGE = {
    "type": "string",
    "description": "a screenshot as base64 (or a data: URL) of a PNG, JPEG or WebP, searched by its pixels; "
    "with or without a query",
}
CONVERSATION = {
    "type": "string",
    "pattern": "^[0-9a-f]{32}$",
    "description": "32 hexadecimal digits of your choosing: a follow-up in the same conversation is "
    "understood from the earlier questions",
}
READ_ONLY = ToolAnnotations(read_only_hint=True)  # no tool changes the documents (a client may call it unconfirmed)
TOOLS = {
    tool.name: tool
    for tool in (
        Tool(
            name="search_pages",
            title="Search the documents' pages",
            description="The pages that best match a query and/or a screenshot, best first: each page's "
            "image, its document's title and id, the page number, its score and a link to view it.",
            input_schema={"type": "object", "properties": {"query": QUERY, "image": IMAGE}},
            annotations=READ_ONLY,
        ),
        Tool(
            name="ask",
            title="Ask the documents",
            description="An answer read from the documents' pages, citing them: the answer's Markdown, then "
            "each citation's document and page, the words quoted, a link to the page and an image of the "
            "quoted part.",
            input_schema={
                "type": "object",
                "properties": {"query": QUERY, "image": IMAGE, "conversation": CONVERSATION},
            },
            annotations=READ_ONLY,
        ),
        Tool(
            name="list_documents",
            title="List the documents",
            description="The documents that can be searched: title, file name, pages, id and collection.",
            input_schema={"type": "object", "properties": {}},
            annotations=READ_ONLY,
        ),
    )
}


class McpTools:
    """The tools, each answering for the caller `caller_of` finds in a request's context."""

    def __init__(self, agents: ForAgents, caller_of: Callable[[ServerRequestContext], Caller]):
        self.agents, self.caller_of = agents, caller_of
        self.max_image_bytes = agents.service.settings.max_image_bytes
        self.tools: dict[str, Callable[[str, str, dict[str, Any]], Awaitable[CallToolResult]]] = {
            "search_pages": self.search_pages,
            "ask": self.ask,
            "list_documents": self.list_documents,
        }

    def server(self) -> Server:
        return Server(
            "pixelrag",
            version=_installed_version(),
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            get_tool_input_schema=lambda name: TOOLS[name].input_schema if name in TOOLS else None,
        )

    async def _list_tools(self, ctx: ServerRequestContext, params: PaginatedRequestParams | None) -> ListToolsResult:
        return ListToolsResult(tools=list(TOOLS.values()))

    async def _call_tool(self, ctx: ServerRequestContext, params: CallToolRequestParams) -> CallToolResult:
        if params.name not in TOOLS:
            raise MCPError(INVALID_PARAMS, f"No tool is named {params.name!r}: {', '.join(TOOLS)}.")
        name, scope = self.caller_of(ctx)
        arguments = params.arguments or {}
        try:
            _known_arguments(TOOLS[params.name], arguments)
            return await self.tools[params.name](name, scope, arguments)
        except PixelragError as exc:  # BadInput and LimitReached among them: the message is for the caller
            return _tool_error(str(exc))
        except Exception:
            log.exception("the MCP tool %s failed", params.name)
            return _tool_error("Something went wrong while answering; it was logged.")

    async def search_pages(self, name: str, scope: str, arguments: dict[str, Any]) -> CallToolResult:
        query, images = self._question(arguments)
        results = await self.agents.search(name, scope, query, images, with_images=True)
        content: list[ContentBlock] = []
        for n, item in enumerate(results, 1):
            jpeg = item.pop("jpeg")
            content.append(
                TextContent(
                    text=f"{n}. {item['title']}, p. {item['page']} (score {item['score']:.4f})\n"
                    f"document: {item['document']}\nview: {item['view'] or '(no link)'}"
                )
            )
            if jpeg:
                content.append(ImageContent(data=base64.b64encode(jpeg).decode(), mime_type="image/jpeg"))
        if not results:
            content.append(TextContent(text="No page matched."))
        return CallToolResult(content=content, structured_content={"query": query, "results": results})

    async def ask(self, name: str, scope: str, arguments: dict[str, Any]) -> CallToolResult:
        query, images = self._question(arguments)
        conversation = arguments.get("conversation") or ""
        if conversation and not (isinstance(conversation, str) and ID.fullmatch(conversation)):
            raise BadInput('"conversation" must be 32 hexadecimal digits.')
        record, answer = await self.agents.ask(name, scope, query, images, conversation)
        lines = [f"Interpreted as: {answer.interpreted_question}\n"] if answer.changed_question else []
        lines.append(answer.clarifying_question or answer.markdown)
        lines += [f"\nLimitation: {text}" for text in answer.limitations]
        lines += [f"\nNote: {text}" for text in answer.notes]
        content: list[ContentBlock] = [TextContent(text="\n".join(lines))]
        for n, (citation, cited) in enumerate(zip(answer.citations, record["citations"]), 1):
            content.append(
                TextContent(text=f"[{n}] {citation.label}: “{citation.quote}”\nview: {cited['url'] or '(no link)'}")
            )
            if citation.crop:  # the quoted part of the page, highlighted
                content.append(ImageContent(data=base64.b64encode(citation.crop).decode(), mime_type="image/png"))
        return CallToolResult(content=content, structured_content=record)

    async def list_documents(self, name: str, scope: str, arguments: dict[str, Any]) -> CallToolResult:
        listed = await self.agents.documents(scope)
        lines = [f"{len(listed['documents'])} document(s) in the collection {scope}:"]
        lines += [
            f"- {d['title']} ({d['file_name']}, {d['pages']} pages; id {d['id']}, collection {d['collection']})"
            for d in listed["documents"]
        ]
        return CallToolResult(content=[TextContent(text="\n".join(lines))], structured_content=listed)

    def _question(self, arguments: dict[str, Any]) -> tuple[str, list[QueryImage]]:
        """The query and the screenshot, checked as /api/ checks them; BadInput says what is wrong."""
        query = arguments.get("query") or ""
        if not isinstance(query, str) or len(query) > MAX_QUESTION:
            raise BadInput(f'"query" must be text of at most {MAX_QUESTION} characters.')
        images = [decoded_image(arguments["image"], self.max_image_bytes)] if arguments.get("image") else []
        if not query.strip() and not images:
            raise BadInput('Give a "query", an "image", or both.')
        return query.strip(), images


def _known_arguments(tool: Tool, arguments: dict[str, Any]) -> None:
    """BadInput naming the arguments `tool` does not take: a misspelt one is said, not ignored."""
    known = tool.input_schema["properties"]
    unknown = sorted(set(arguments) - set(known))
    if unknown:
        takes = f"takes {', '.join(known)}" if known else "takes no arguments"
        raise BadInput(f"{tool.name} {takes}; not {', '.join(unknown)}.")


def _tool_error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(text=message)], is_error=True)


def _installed_version() -> str:
    try:
        return version("pixelrag-docbot")
    except PackageNotFoundError:  # run from a checkout that was never installed
        return ""


async def serve_stdio(settings: Settings, threads: ThreadMemory, scope: str) -> None:
    """`pixelrag mcp`: one agent on this machine, over stdin and stdout until it closes stdin, asking as the
    local user in `scope`. `threads` (not yet open) keeps its conversations and usage. The SDK points the
    process's stdout at stderr while it serves, so it is entered first: nothing but the protocol reaches
    the agent, whatever a library prints while the index opens."""
    async with stdio_server() as (incoming, outgoing):
        opened = await threads.open()
        try:
            async with Service(settings, costs=opened) as service:
                await service.warm_up()
                server = McpTools(ForAgents(service, opened), lambda ctx: (LOCAL_USER, scope)).server()
                await server.run(incoming, outgoing, server.create_initialization_options())
        finally:
            await opened.close()


class McpOverHttp:
    """/mcp on `pixelrag web`: the SDK's streamable HTTP transport, stateless (each POST stands alone, with
    no session to carry from one key to another), behind the API keys: each request's own key names who
    asks and the collection they see."""

    def __init__(self, service: Service, threads: ThreadMemory):
        self.threads = threads
        server = McpTools(ForAgents(service, threads), _caller_of_request).server()
        # A body holds at most one screenshot, as base64 (4 characters for 3 bytes), and the rest of a call.
        most = service.settings.max_image_bytes * 4 // 3 + 1_000_000
        # Answers as JSON, not server-sent events: a search's page images outgrow the 1 MiB a client of the
        # SDK accepts in one event, and no tool sends anything before its result.
        self.manager = StreamableHTTPSessionManager(
            server, stateless=True, json_response=True, max_request_body_size=most
        )

    def add_routes(self, app: web.Application) -> None:
        app.router.add_route("*", "/mcp", self.handle)
        app.cleanup_ctx.append(self.running)

    async def running(self, app: web.Application) -> AsyncIterator[None]:
        """The SDK's manager, from the server's start to its cleanup (after the last request), run by a task
        of its own: the anyio task group it holds must be entered and left by one task."""
        ready, stop = asyncio.Event(), asyncio.Event()

        async def run() -> None:
            async with self.manager.run():
                ready.set()
                await stop.wait()

        task = asyncio.create_task(run(), name="pixelrag-mcp")
        started = asyncio.create_task(ready.wait())
        await asyncio.wait({task, started}, return_when=asyncio.FIRST_COMPLETED)
        started.cancel()
        if task.done():
            task.result()  # why it could not start
        try:
            yield
        finally:
            stop.set()
            await task

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            found = await caller(self.threads, request.headers.get("Authorization"))
        except Refused as exc:
            return _refused(str(exc), exc.status, exc.headers)
        if request.method != "POST":  # stateless: no stream of the server's own to open, no session to end
            return _refused("Send MCP messages to /mcp as POST requests.", 405, {"Allow": "POST"})
        return await serve_asgi(request, self.manager.handle_request, {CALLER_KEY: found})


def _caller_of_request(ctx: ServerRequestContext) -> Caller:
    """Who asks over HTTP: the key McpOverHttp checked, carried by the request the SDK hands the tool."""
    assert ctx.request is not None  # the HTTP transport hands each message the request that carried it
    return ctx.request.scope[CALLER_KEY]


def _refused(message: str, status: int, headers: dict[str, str] | None = None) -> web.Response:
    """A JSON-RPC error without an id, as MCP clients read a refused request: they show its message."""
    error = {"jsonrpc": "2.0", "id": None, "error": {"code": INVALID_REQUEST, "message": message}}
    return web.json_response(error, status=status, headers=headers)
