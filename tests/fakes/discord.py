"""A loopback fake of Discord's REST API and attachment CDN, used by the real discord.py HTTP client.

Longer than the ~300-line rule: it is one service's contract in one place (login, messages with
their Components V2 rules and edit rate limit, interactions, the CDN); the checks live in
`tests/fakes/discord_rules.py`.

The gateway is not faked (the adapter's handlers are driven with spec'd mocks, and `click` hands an
interaction payload to discord.py's own gateway parser), but what a handler downloads goes through
discord.py's own `HTTPClient.get_from_cdn`, against this server:

    async with FakeDiscord() as fake:
        att = await fake.attachment("shot.png", png, "image/png")   # a real discord.Attachment
        data = await att.read()                                    # a real HTTP GET, in chunks

Attachment URLs behave like Discord's signed CDN links: `expire(name)` answers 404 (the link's
signature expired, or the message was deleted), `forbid(name)` 403, `fail(name, 500)` a server
error, and `drop_after[name] = n` closes the connection after n bytes.

Messages (`POST/PATCH /channels/{id}/messages`) are checked as Discord checks them
(`discord_rules.py`): a refused one gets Discord's 400 with its error code and nothing is stored.
`refuse_v2 = True` refuses every Components V2 message (50035), as where the layout is not
accepted. Edits of one message are rate limited, `edit_limit` edits per `edit_window` seconds of
`clock` (injectable: tests pass time by hand), past it a 429 with `retry_after`. `versions[id]`
keeps every state a message was in, `rate_limited` every refused edit. `click` and `command` deliver
a button click or a slash command to discord.py's own interaction handling; the bot's callback,
follow-ups (`/webhooks/{app}/{token}`, refused before the interaction was answered) and their edits
come back here.

What a message would set off is recorded in `acted` (tests/fakes/markup.py): the mentions in its
content and text displays that Discord would notify under the request's `allowed_mentions` (absent:
every kind is parsed, on an edit as on a send), and masked links whose label hides the target, in
content, text displays and embeds.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections.abc import Callable
from types import SimpleNamespace

import discord
from aiohttp import web

from .discord_rules import V2_FLAG, Refused, check_edit, check_message, walk
from .markup import discord_pings, hidden_links

BOT_USER = {"id": "999", "username": "pixelrag", "discriminator": "0", "global_name": None, "avatar": None, "bot": True}
CHUNK = 16 * 1024
APP_ID = "999"
MESSAGE_CONTENT_LIMITED = 1 << 19  # application flag: the Message Content intent, under 100 servers


def _json(data, status: int = 200, headers: dict | None = None) -> web.Response:
    # exactly "application/json": discord.py decodes a body only with that content type
    return web.Response(
        body=json.dumps(data).encode(), status=status, headers={"Content-Type": "application/json", **(headers or {})}
    )


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
        self.clock: Callable[[], float] = time.monotonic
        self.edit_limit, self.edit_window = 5, 5.0  # per message
        self.refuse_v2 = False
        self.link_base: str | None = None  # PIXELRAG_PUBLIC_URL of the bot under test: links point there
        self.message_content_intent = True  # the Developer Portal's switch (Bot → Privileged Gateway Intents)
        self.messages: dict[str, dict] = {}  # id -> the message as Discord returns it
        self.versions: dict[str, list[dict]] = {}  # id -> every state it was in, first the one sent
        self.rate_limited: list[str] = []  # ids of messages whose edit got a 429
        self.refused: list[dict] = []  # the error bodies of refused messages
        self.acted: list[str] = []  # pings and hidden links the bot's messages would set off
        self.interaction_replies: dict[str, dict] = {}  # interaction id -> its callback body
        self._edits: dict[str, list[float]] = {}  # recent edits, for the rate limit
        self.edit_times: dict[str, list[float]] = {}  # every accepted edit's time on `clock`
        self._replied = asyncio.Event()
        self._tokens: dict[str, tuple[str, str]] = {}  # interaction token -> (its id, its channel)
        self.handled = 0  # message requests answered (created, edited, refused or rate limited)
        self._handled = asyncio.Condition()

    async def __aenter__(self) -> FakeDiscord:
        app = web.Application(middlewares=[self._count])
        app.router.add_get("/api/v10/users/@me", self._me)
        app.router.add_get("/api/v10/oauth2/applications/@me", self._application)
        app.router.add_put("/api/v10/applications/{app}/commands", self._commands)
        app.router.add_put("/api/v10/applications/{app}/guilds/{guild}/commands", self._commands)
        app.router.add_post("/api/v10/channels/{channel}/messages", self._create)
        app.router.add_patch("/api/v10/channels/{channel}/messages/{message}", self._edit)
        app.router.add_post("/api/v10/channels/{channel}/typing", self._typing)
        app.router.add_post("/api/v10/interactions/{id}/{token}/callback", self._callback)
        app.router.add_post("/api/v10/webhooks/{app}/{token}", self._followup)
        app.router.add_patch("/api/v10/webhooks/{app}/{token}/messages/{message}", self._followup_edit)
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

    def attachment(
        self, name: str, data: bytes, content_type: str | None, size: int | None = None
    ) -> discord.Attachment:
        """A real discord.Attachment whose bytes this server serves."""
        att_id = next(self._ids)
        self.files[f"{att_id}/{name}"] = (data, content_type or "application/octet-stream")
        url = f"{self.url}/attachments/1234/{att_id}/{name}?ex=0&is=0&hm=signed"
        payload = {
            "id": str(att_id),
            "filename": name,
            "size": len(data) if size is None else size,
            "url": url,
            "proxy_url": url,
        }
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
            return _json({"message": "401: Unauthorized", "code": 0}, status=401)
        return _json(BOT_USER)

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
                await response.write(data[start : min(end, start + CHUNK)])
                await asyncio.sleep(0.001)
        except ConnectionError:
            return response
        if end < len(data):
            request.transport.close()
            return response
        await response.write_eof()
        return response

    # ---- login and commands (what discord.py's Client.login and setup_hook ask for) --------------

    async def _application(self, request: web.Request) -> web.Response:
        if request.headers.get("Authorization") != "Bot fake-bot-token":
            return _json({"message": "401: Unauthorized", "code": 0}, status=401)
        # A bot in under 100 servers has the "limited" flag of each privileged intent switched on.
        flags = MESSAGE_CONTENT_LIMITED if self.message_content_intent else 0
        return _json(
            {
                "id": APP_ID,
                "name": "pixelrag",
                "description": "",
                "icon": None,
                "bot_public": True,
                "bot_require_code_grant": False,
                "verify_key": "0" * 64,
                "owner": BOT_USER,
                "flags": flags,
            }
        )

    async def _commands(self, request: web.Request) -> web.Response:
        commands = await request.json()
        return _json(
            [
                {
                    **c,
                    "id": str(next(self._ids)),
                    "application_id": APP_ID,
                    "version": "1",
                    "default_member_permissions": c.get("default_member_permissions"),
                }
                for c in commands
            ]
        )

    async def _typing(self, request: web.Request) -> web.Response:
        return web.Response(status=204)

    # ---- messages ------------------------------------------------------------------------------

    async def _body(self, request: web.Request) -> tuple[dict, dict[str, bytes]]:
        """The JSON payload and the uploaded files (by their index) of a create or edit request."""
        if not request.content_type.startswith("multipart/"):
            return await request.json(), {}
        payload, files = {}, {}
        reader = await request.multipart()
        async for part in reader:
            if part.name == "payload_json":
                payload = json.loads(await part.text())
            elif part.name and part.name.startswith("files["):
                files[part.name[6:-1]] = (part.filename, await part.read())
        return payload, files

    def _attachments(self, channel: str, payload: dict, files: dict) -> list[dict]:
        out = []
        for index, (filename, data) in files.items():
            meta = next((a for a in payload.get("attachments", []) if str(a.get("id")) == index), {})
            att_id = str(next(self._ids))
            name = meta.get("filename", filename)
            self.files[f"{att_id}/{name}"] = (data, "application/octet-stream")
            url = f"{self.url}/attachments/{channel}/{att_id}/{name}"
            out.append(
                {
                    "id": att_id,
                    "filename": name,
                    "size": len(data),
                    "url": url,
                    "proxy_url": url,
                    **({"description": meta["description"]} if "description" in meta else {}),
                }
            )
        return out

    def _message(self, channel: str, payload: dict, attachments: list[dict]) -> dict:
        return {
            "id": str(next(self._ids)),
            "channel_id": channel,
            "author": BOT_USER,
            "type": 0,
            "content": payload.get("content") or "",
            "embeds": payload.get("embeds") or [],
            "components": payload.get("components") or [],
            "attachments": attachments,
            "flags": payload.get("flags") or 0,
            "mentions": [],
            "mention_roles": [],
            "mention_everyone": False,
            "pinned": False,
            "tts": False,
            "timestamp": "2026-01-01T00:00:00+00:00",
            "edited_timestamp": None,
        }

    @staticmethod
    def _refusal(refused: Refused) -> web.Response:
        return _json(
            {
                "message": refused.message,
                "code": refused.code,
                **({"errors": refused.errors} if refused.errors else {}),
            },
            status=refused.status,
        )

    async def handled_beyond(self, count: int) -> None:
        """Returns once more than `count` message requests have been answered (a gate for tests)."""
        async with self._handled:
            await self._handled.wait_for(lambda: self.handled > count)

    async def until(self, predicate: Callable[[], bool]) -> None:
        """Returns once `predicate()` holds after a message request (a gate for tests)."""
        async with self._handled:
            await self._handled.wait_for(predicate)

    @web.middleware
    async def _count(self, request: web.Request, handler):
        try:
            return await handler(request)
        finally:
            if request.method in ("POST", "PATCH") and ("/messages" in request.path or "/webhooks/" in request.path):
                async with self._handled:
                    self.handled += 1
                    self._handled.notify_all()

    async def _create(self, request: web.Request, channel: str | None = None) -> web.Response:
        channel = channel or request.match_info["channel"]
        payload, files = await self._body(request)
        try:
            if self.refuse_v2 and (payload.get("flags") or 0) & V2_FLAG:
                raise Refused(
                    50035,
                    "Invalid Form Body",
                    {
                        "flags": {
                            "_errors": [
                                {"code": "MESSAGE_FLAGS_INVALID", "message": "Components V2 are not accepted here."}
                            ]
                        }
                    },
                )
            check_message(
                payload,
                {str(a.get("filename")) for a in payload.get("attachments", [])} | {name for name, _ in files.values()},
                len(files),
                self.link_base,
            )
        except Refused as refused:
            self.refused.append({"code": refused.code, "errors": refused.errors, "message": refused.message})
            return self._refusal(refused)
        self._note_acting(payload)
        message = self._message(channel, payload, self._attachments(channel, payload, files))
        self.messages[message["id"]] = message
        self.versions[message["id"]] = [json.loads(json.dumps(message))]
        return _json(message)

    async def _edit(self, request: web.Request, channel: str | None = None) -> web.Response:
        channel, mid = channel or request.match_info["channel"], request.match_info["message"]
        if mid not in self.messages:
            return _json({"message": "Unknown Message", "code": 10008}, status=404)
        now = self.clock()
        recent = [t for t in self._edits.get(mid, []) if now - t < self.edit_window]
        if len(recent) >= self.edit_limit:
            self.rate_limited.append(mid)
            retry = round(self.edit_window - (now - recent[0]), 3)
            return _json(
                {"message": "You are being rate limited.", "retry_after": retry, "global": False},
                status=429,
                headers={"Via": "1.1 google", "Retry-After": str(retry)},
            )
        self._edits[mid] = recent + [now]
        self.edit_times.setdefault(mid, []).append(now)
        payload, files = await self._body(request)
        old = self.messages[mid]
        try:
            if self.refuse_v2 and (payload.get("flags") or 0) & V2_FLAG and not old["flags"] & V2_FLAG:
                raise Refused(
                    50035,
                    "Invalid Form Body",
                    {
                        "flags": {
                            "_errors": [
                                {"code": "MESSAGE_FLAGS_INVALID", "message": "Components V2 are not accepted here."}
                            ]
                        }
                    },
                )
            merged = check_edit(old, payload, files, self.link_base)
        except Refused as refused:
            self.refused.append({"code": refused.code, "errors": refused.errors, "message": refused.message})
            return self._refusal(refused)
        self._note_acting(payload)
        if "attachments" in payload:  # the kept ones, then the new uploads
            kept = {str(a.get("id")) for a in payload["attachments"]}
            merged["attachments"] = [a for a in old["attachments"] if a["id"] in kept] + self._attachments(
                channel, payload, files
            )
        merged["edited_timestamp"] = "2026-01-01T00:00:01+00:00"
        self.messages[mid] = merged
        self.versions[mid].append(json.loads(json.dumps(merged)))
        return _json(merged)

    def _note_acting(self, payload: dict) -> None:
        texts = [payload.get("content") or ""] + [
            c.get("content") or "" for c in walk(payload.get("components") or []) if c.get("type") == 10
        ]
        embeds = [str(e.get(k) or "") for e in payload.get("embeds") or [] for k in ("title", "description")]
        embeds += [str(f.get("value") or "") for e in payload.get("embeds") or [] for f in e.get("fields") or []]
        for text in texts:
            self.acted += discord_pings(text, payload.get("allowed_mentions"))
        self.acted += [f"link to {href}" for text in texts + embeds for href in hidden_links(text)]

    # ---- interactions ----------------------------------------------------------------------------

    def click(
        self, client: discord.Client, message_id: str, custom_id: str, user_id: int, guild_id: int | None = None
    ) -> str:
        """A button click on a stored message, as the gateway delivers it: the INTERACTION_CREATE
        payload handed to discord.py's own parser (its view store finds the dynamic item). Returns
        the interaction id; `reply(id)` waits for the bot's answer to it."""
        message = self.messages[message_id]
        inter_id = str(next(self._ids))
        user = {
            "id": str(user_id),
            "username": f"user{user_id}",
            "discriminator": "0",
            "global_name": None,
            "avatar": None,
        }
        payload = {
            "id": inter_id,
            "application_id": APP_ID,
            "type": 3,
            "token": f"token-{inter_id}",
            "version": 1,
            "channel_id": message["channel_id"],
            "message": message,
            "locale": "en-US",
            "app_permissions": "0",
            "entitlements": [],
            "attachment_size_limit": 10 * 1024 * 1024,
            "authorizing_integration_owners": {},
            "data": {"custom_id": custom_id, "component_type": 2},
        }
        if guild_id:
            payload.update(
                guild_id=str(guild_id),
                guild_locale="en-US",
                member={
                    "user": user,
                    "roles": [],
                    "joined_at": "2026-01-01T00:00:00+00:00",
                    "deaf": False,
                    "mute": False,
                    "permissions": "0",
                    "flags": 0,
                },
            )
            payload["channel"] = {"id": message["channel_id"], "type": 0, "guild_id": str(guild_id), "name": "general"}
        else:
            payload["user"] = user
            payload["channel"] = {"id": message["channel_id"], "type": 1, "recipients": [user]}
        self._tokens[payload["token"]] = (inter_id, message["channel_id"])
        client._connection.parse_interaction_create(payload)
        return inter_id

    def command(
        self, client: discord.Client, name: str, options: dict[str, str], user_id: int, channel_id: str = "5555"
    ) -> str:
        """A slash command used in a DM, as the gateway delivers it; discord.py's command tree runs it.
        Its replies (defer, follow-ups and their edits) come back here through the interaction's token."""
        inter_id = str(next(self._ids))
        user = {
            "id": str(user_id),
            "username": f"user{user_id}",
            "discriminator": "0",
            "global_name": None,
            "avatar": None,
        }
        payload = {
            "id": inter_id,
            "application_id": APP_ID,
            "type": 2,
            "token": f"token-{inter_id}",
            "version": 1,
            "channel_id": channel_id,
            "channel": {"id": channel_id, "type": 1, "recipients": [user]},
            "user": user,
            "locale": "en-US",
            "app_permissions": "0",
            "entitlements": [],
            "attachment_size_limit": 10 * 1024 * 1024,
            "authorizing_integration_owners": {},
            "data": {
                "id": str(next(self._ids)),
                "name": name,
                "type": 1,
                "options": [{"name": k, "type": 3, "value": v} for k, v in options.items()],
            },
        }
        self._tokens[payload["token"]] = (inter_id, channel_id)
        client._connection.parse_interaction_create(payload)
        return inter_id

    def _acknowledged(self, request: web.Request) -> str | None:
        """The channel of an interaction whose token this is, once it was answered (else Discord's 10015)."""
        token = request.match_info["token"]
        if request.match_info["app"] != APP_ID or token not in self._tokens:
            return None
        inter_id, channel = self._tokens[token]
        return channel if inter_id in self.interaction_replies else None

    async def _followup(self, request: web.Request) -> web.Response:
        channel = self._acknowledged(request)
        if channel is None:
            return _json({"message": "Unknown Webhook", "code": 10015}, status=404)
        return await self._create(request, channel)

    async def _followup_edit(self, request: web.Request) -> web.Response:
        channel = self._acknowledged(request)
        if channel is None:
            return _json({"message": "Unknown Webhook", "code": 10015}, status=404)
        return await self._edit(request, channel)

    async def reply(self, interaction_id: str) -> dict:
        while interaction_id not in self.interaction_replies:
            self._replied.clear()
            await self._replied.wait()
        return self.interaction_replies[interaction_id]

    async def _callback(self, request: web.Request) -> web.Response:
        inter_id = request.match_info["id"]
        if request.match_info["token"] != f"token-{inter_id}":
            return _json({"message": "Unknown interaction", "code": 10062}, status=404)
        if inter_id in self.interaction_replies:
            return _json({"message": "Interaction has already been acknowledged.", "code": 40060}, status=400)
        body, _ = await self._body(request)
        data = body.get("data") or {}
        if len(data.get("content") or "") > 2000:
            return self._refusal(Refused(50035, "Invalid Form Body"))
        self.interaction_replies[inter_id] = body
        self._replied.set()
        flags = data.get("flags") or 0
        return _json(
            {
                "interaction": {
                    "id": inter_id,
                    "type": 3,
                    "response_message_id": str(next(self._ids)),
                    "response_message_loading": False,
                    "response_message_ephemeral": bool(flags & 64),
                }
            }
        )
