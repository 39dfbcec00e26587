"""A loopback fake of Discord's REST API and attachment CDN, used by the real discord.py HTTP client.

The gateway is not faked (the adapter's handlers are driven with spec'd mocks), but what a handler
downloads goes through discord.py's own `HTTPClient.get_from_cdn`, against this server:

    async with FakeDiscord() as fake:
        att = await fake.attachment("shot.png", png, "image/png")   # a real discord.Attachment
        data = await att.read()                                    # a real HTTP GET, in chunks

Attachment URLs behave like Discord's signed CDN links: `expire(name)` answers 404 (the link's
signature expired, or the message was deleted), `forbid(name)` 403, `fail(name, 500)` a server
error, and `drop_after[name] = n` closes the connection after n bytes.
"""
from __future__ import annotations

import asyncio
import itertools
from types import SimpleNamespace

import discord
from aiohttp import web

BOT_USER = {"id": "999", "username": "pixelrag", "discriminator": "0", "global_name": None, "avatar": None,
            "bot": True}
CHUNK = 16 * 1024


class FakeDiscord:
    def __init__(self):
        self.files: dict[str, tuple[bytes, str]] = {}
        self.status: dict[str, int] = {}
        self.drop_after: dict[str, int] = {}
        self.downloads: list[str] = []
        self.url = ""
        self.http: discord.http.HTTPClient | None = None
        self._ids = itertools.count(700_000)
        self._runner: web.AppRunner | None = None
        self._saved_base = discord.http.Route.BASE

    async def __aenter__(self) -> "FakeDiscord":
        app = web.Application()
        app.router.add_get("/api/v10/users/@me", self._me)
        app.router.add_get("/attachments/{channel}/{id}/{name}", self._attachment)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"
        discord.http.Route.BASE = self.url + "/api/v10"
        self.http = discord.http.HTTPClient(asyncio.get_running_loop())
        await self.http.static_login("fake-bot-token")  # the library's own login, against the fake
        return self

    async def __aexit__(self, *exc) -> None:
        discord.http.Route.BASE = self._saved_base
        if self.http is not None:
            await self.http.close()
        if self._runner is not None:
            await self._runner.cleanup()

    def attachment(self, name: str, data: bytes, content_type: str | None, size: int | None = None) -> discord.Attachment:
        """A real discord.Attachment whose bytes this server serves."""
        att_id = next(self._ids)
        self.files[f"{att_id}/{name}"] = (data, content_type or "application/octet-stream")
        url = f"{self.url}/attachments/1234/{att_id}/{name}?ex=0&is=0&hm=signed"
        payload = {"id": str(att_id), "filename": name, "size": len(data) if size is None else size,
                   "url": url, "proxy_url": url}
        if content_type:
            payload["content_type"] = content_type
        return discord.Attachment(data=payload, state=SimpleNamespace(http=self.http))

    def expire(self, att: discord.Attachment) -> None:
        self.status[self._key(att)] = 404

    def forbid(self, att: discord.Attachment) -> None:
        self.status[self._key(att)] = 403

    def fail(self, att: discord.Attachment, status: int = 500) -> None:
        self.status[self._key(att)] = status

    def cut(self, att: discord.Attachment, after: int) -> None:
        self.drop_after[self._key(att)] = after

    @staticmethod
    def _key(att: discord.Attachment) -> str:
        return f"{att.id}/{att.filename}"

    async def _me(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != "Bot fake-bot-token":
            return web.json_response({"message": "401: Unauthorized", "code": 0}, status=401)
        return web.json_response(BOT_USER)

    async def _attachment(self, request: web.Request) -> web.StreamResponse:
        key = f"{request.match_info['id']}/{request.match_info['name']}"
        self.downloads.append(key)
        if key not in self.files or self.status.get(key) == 404:
            return web.Response(status=404, text="This content is no longer available.")
        if key in self.status:
            return web.Response(status=self.status[key], text="error")
        data, ctype = self.files[key]
        response = web.StreamResponse(headers={"Content-Type": ctype})
        response.content_length = len(data)
        await response.prepare(request)
        end = min(len(data), self.drop_after.get(key, len(data)))
        try:
            for start in range(0, end, CHUNK):
                await response.write(data[start:min(end, start + CHUNK)])
                await asyncio.sleep(0.001)
        except ConnectionError:
            return response
        if end < len(data):
            request.transport.close()
            return response
        await response.write_eof()
        return response
