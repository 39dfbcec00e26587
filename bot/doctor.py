"""`pixelrag doctor`: every service the settings name, tried once with the real client libraries, so that a
misconfigured install is found out in one run instead of one failure at a time.

Each check gives lines of (status, what, detail): "ok", "FAIL" or "skip" (not configured, so not tried).
Nothing is changed anywhere: the database is read, not migrated; Socket Mode is handed a connection
address that is never opened; Discord is logged in to over HTTP, never the gateway."""

from __future__ import annotations

from pathlib import Path

from core import FAIL, OK, SKIP, Finding, Findings, PixelragError, Service, Settings, first_line

from .slack import manifest as slack_manifest


async def diagnose(settings: Settings, manifest: Path = slack_manifest.MANIFEST) -> Findings:
    """The core's checks (index, Gemini, TypeSafe) with Slack's and Discord's in their place."""
    async with Service(settings) as service:
        return await service.diagnose(
            [("slack", lambda: slack_checks(settings, manifest)), ("discord", lambda: discord_check(settings))]
        )


def report(findings: Findings) -> tuple[str, int]:
    """The lines to print, and the exit code: 0 only when nothing failed."""
    width = max((len(f.what) for f in findings), default=0)
    lines = [f"{f.status:<4}  {f.what:<{width}}  {f.detail}" for f in findings]
    failed = sum(f.status == FAIL for f in findings)
    lines.append(f"{failed} check(s) failed." if failed else "All checks passed.")
    return "\n".join(lines), 1 if failed else 0


# --- Slack ------------------------------------------------------------------------------------------
async def slack_checks(settings: Settings, manifest: Path) -> Findings:
    from slack_sdk.web.async_client import AsyncWebClient

    from .slack.settings import SlackSettings

    options = SlackSettings.parse(settings)
    if not (options.bot_token or options.app_token or options.signing_secret):
        return [Finding(SKIP, "slack", "SLACK_BOT_TOKEN is not set")]
    client = AsyncWebClient(base_url=options.api_url, timeout=int(settings.request_timeout_s))
    return [*await bot_token_check(client, options, manifest), await connection_check(client, options)]


async def bot_token_check(client, options, manifest: Path) -> Findings:
    from slack_sdk.errors import SlackApiError

    what = "slack bot token"
    if not options.bot_token.startswith("xoxb-"):
        return [Finding(FAIL, what, "SLACK_BOT_TOKEN must be the Bot User OAuth Token (xoxb-…)")]
    try:
        me = await client.auth_test(token=options.bot_token)
    except SlackApiError as exc:
        return [Finding(FAIL, what, f"Slack refused SLACK_BOT_TOKEN ({exc.response.get('error')})")]
    except Exception as exc:  # noqa: BLE001 - the network's many ways to fail are one line each
        return [Finding(FAIL, what, f"cannot reach Slack at {options.api_url} ({first_line(exc)})")]
    team = f"{me.get('team')} ({me.get('team_id')})"
    return [
        Finding(OK, what, f"workspace {team} as @{me.get('user')}"),
        scopes_check(me.headers.get("x-oauth-scopes"), manifest),
    ]


def scopes_check(granted_header: str | None, manifest: Path) -> Finding:
    try:
        wanted = slack_manifest.bot_scopes(slack_manifest.load(manifest))
    except PixelragError as exc:
        return Finding(FAIL, "slack scopes", str(exc))
    if granted_header is None:
        return Finding(FAIL, "slack scopes", "Slack did not say which scopes the token has (no x-oauth-scopes)")
    granted = {s.strip() for s in granted_header.split(",") if s.strip()}
    if missing := sorted(wanted - granted):
        return Finding(
            FAIL,
            "slack scopes",
            f"the token lacks {', '.join(missing)} (manifest.yml asks for them): add them under OAuth & "
            "Permissions → Bot Token Scopes and reinstall the app",
        )
    return Finding(OK, "slack scopes", f"all {len(wanted)} scopes manifest.yml asks for")


async def connection_check(client, options) -> Finding:
    """How Slack reaches the bot: Socket Mode (an app-level token) or the Events API (a signing secret)."""
    from slack_sdk.errors import SlackApiError

    if options.app_token:
        if not options.app_token.startswith("xapp-"):
            return Finding(FAIL, "slack app token", "SLACK_APP_TOKEN must be an app-level token (xapp-…)")
        try:
            await client.apps_connections_open(app_token=options.app_token)
        except SlackApiError as exc:
            error = exc.response.get("error")
            return Finding(
                FAIL, "slack app token", f"Slack refused SLACK_APP_TOKEN ({error}); it needs connections:write"
            )
        except Exception as exc:  # noqa: BLE001
            return Finding(FAIL, "slack app token", f"cannot reach Slack ({first_line(exc)})")
        return Finding(OK, "slack app token", "Socket Mode can connect")
    if options.signing_secret:
        return Finding(OK, "slack signing secret", "set: `pixelrag slack --http` checks it on every request")
    return Finding(
        FAIL, "slack connection", "set SLACK_APP_TOKEN (Socket Mode) or SLACK_SIGNING_SECRET (pixelrag slack --http)"
    )


# --- Discord ----------------------------------------------------------------------------------------
async def discord_check(settings: Settings) -> Findings:
    import discord

    from .discord.settings import DiscordSettings

    options = DiscordSettings.parse(settings.extra)
    if not options.token:
        return [Finding(SKIP, "discord", "DISCORD_TOKEN is not set")]
    client = discord.Client(intents=discord.Intents.none())
    try:
        await client.login(options.token)
        app = await client.application_info()
    except discord.LoginFailure:
        return [Finding(FAIL, "discord token", "Discord refused DISCORD_TOKEN: copy the bot token again")]
    except discord.HTTPException as exc:
        return [Finding(FAIL, "discord token", f"Discord answered {exc.status} ({first_line(exc)})")]
    except Exception as exc:  # noqa: BLE001
        return [Finding(FAIL, "discord token", f"cannot reach Discord ({first_line(exc)})")]
    finally:
        await client.close()
    found = [Finding(OK, "discord token", f"application {app.name} ({app.id})")]
    intent_on = app.flags.gateway_message_content or app.flags.gateway_message_content_limited
    if options.message_content and not intent_on:
        found.append(
            Finding(
                FAIL,
                "discord intent",
                "the Message Content intent is off in the Developer Portal (Bot → Privileged Gateway Intents): "
                "turn it on, or set DISCORD_MESSAGE_CONTENT=0 to run on mentions and slash commands only",
            )
        )
    else:
        said = "on" if intent_on else "off, and DISCORD_MESSAGE_CONTENT=0 does without it"
        found.append(Finding(OK, "discord intent", f"Message Content {said}"))
    return found
