"""Socket Mode for the fake Slack (tests/fakes/slack.py): how `pixelrag slack` without --http is reached.

`apps.connections.open`, called with the app-level token (xapp-, never the bot token), answers a
WebSocket URL on the fake; the connection opens with a `hello`. Events, slash commands and
interactions then arrive as envelopes (`events_api`, `slash_commands`, `interactive`), each to be
acknowledged with its `envelope_id` within 3 seconds, a slash command's reply in the ack's payload.
An envelope not acknowledged in time is delivered again with `retry_attempt` one higher (up to three
retries), as Slack does. `refresh()` sends `disconnect` with reason `refresh_requested`: the client
must open a new connection through apps.connections.open, and envelopes go to the newest
connection. Acks of unknown envelopes, or acks after the deadline, are recorded in `late_acks`.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from typing import Any

from aiohttp import WSMsgType, web

APP_TOKEN = "xapp-test-token"
ACK_DEADLINE_S = 3.0
RETRIES = 3


class SocketMode:
    def __init__(self, slack):
        self.slack = slack  # the FakeSlack whose server and loop this shares
        self.connections: list[web.WebSocketResponse] = []  # open ones, oldest first
        self.opened = 0  # connections ever opened (a refresh makes one more)
        self.acks: dict[str, dict] = {}  # envelope_id -> the ack's payload ({} without one)
        self.late_acks: list[str] = []
        self.retries: list[tuple[str, int]] = []  # (envelope_id, retry_attempt) of redeliveries
        self.envelopes: dict[str, dict] = {}
        self._ids = itertools.count(1)
        self._acked: dict[str, asyncio.Event] = {}

    # ----- the server side (on the fake's loop) -----------------------------------------------
    def routes(self, app: web.Application) -> None:
        app.router.add_get("/socket-mode/{n}", self._socket)

    def open_connection(self, headers: dict) -> dict | str:
        """apps.connections.open: only the app-level token opens a connection."""
        if headers.get("Authorization") != f"Bearer {APP_TOKEN}":
            return "invalid_auth"
        return {"url": self.slack.base_url.replace("http://", "ws://") + f"/socket-mode/{self.opened + 1}"}

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse(autoping=True)
        await ws.prepare(request)
        self.opened += 1
        self.connections.append(ws)
        await ws.send_json(
            {
                "type": "hello",
                "num_connections": len(self.connections),
                "debug_info": {"host": "fake", "approximate_connection_time": 18060},
                "connection_info": {"app_id": "A1"},
            }
        )
        try:
            async for message in ws:
                if message.type != WSMsgType.TEXT:
                    continue
                data = json.loads(message.data)
                envelope_id = data.get("envelope_id")
                if envelope_id not in self._acked or envelope_id in self.acks:
                    self.late_acks.append(str(envelope_id))
                    continue
                self.acks[envelope_id] = data.get("payload") or {}
                self._acked[envelope_id].set()
        finally:
            if ws in self.connections:
                self.connections.remove(ws)
        return ws

    async def _deliver(self, kind: str, payload: dict, accepts_response: bool) -> str:
        envelope_id = f"env-{next(self._ids)}"
        self._acked[envelope_id] = asyncio.Event()
        self.envelopes[envelope_id] = payload
        for attempt in range(RETRIES + 1):
            while not self.connections:
                await asyncio.sleep(0.02)  # between a disconnect and the client's new connection
            await self.connections[-1].send_json(
                {
                    "envelope_id": envelope_id,
                    "type": kind,
                    "payload": payload,
                    "accepts_response_payload": accepts_response,
                    "retry_attempt": attempt,
                    "retry_reason": "timeout" if attempt else "",
                }
            )
            if attempt:
                self.retries.append((envelope_id, attempt))
            try:
                await asyncio.wait_for(self._acked[envelope_id].wait(), ACK_DEADLINE_S)
                return envelope_id
            except TimeoutError:
                continue
        return envelope_id

    async def _refresh(self) -> None:
        for ws in list(self.connections):
            await ws.send_json({"type": "disconnect", "reason": "refresh_requested", "debug_info": {"host": "fake"}})

    # ----- for tests (any thread) --------------------------------------------------------------
    def _run(self, coro) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.slack._loop)

    async def connected(self, count: int = 1, timeout: float = 60.0) -> None:
        """Until `count` connections were opened and one is open."""
        deadline = time.monotonic() + timeout
        while not (self.opened >= count and self.connections):
            if time.monotonic() > deadline:
                raise AssertionError(f"no Socket Mode connection ({self.opened} opened)")
            await asyncio.sleep(0.05)

    async def send(self, kind: str, payload: dict, accepts_response: bool = False) -> str:
        """Deliver an envelope and wait until it is acknowledged (or its retries run out); its id."""
        return await asyncio.wrap_future(self._run(self._deliver(kind, payload, accepts_response)))

    async def refresh(self) -> None:
        await asyncio.wrap_future(self._run(self._refresh()))
