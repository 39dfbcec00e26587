"""manifest.yml, the Slack app's declaration: the scopes and events an installed app is granted, what
`pixelrag doctor` compares a token with (and what the Slack fake grants its tokens)."""

from __future__ import annotations

from pathlib import Path

import yaml

from core import BadInput, first_line

MANIFEST = Path(__file__).resolve().parents[2] / "manifest.yml"  # beside bot/ in a checkout


def load(path: Path = MANIFEST) -> dict:
    try:
        manifest = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BadInput(f"{path}: cannot read the Slack app manifest ({exc.strerror}); pass --manifest.") from None
    except yaml.YAMLError as exc:
        raise BadInput(f"{path}: not a YAML manifest ({first_line(exc)}).") from None
    if not isinstance(manifest, dict):
        raise BadInput(f"{path}: not a Slack app manifest.")
    return manifest


def bot_scopes(manifest: dict) -> set[str]:
    """oauth_config.scopes.bot: what the bot token is granted once the app is installed."""
    return set((manifest.get("oauth_config") or {}).get("scopes", {}).get("bot") or [])


def bot_events(manifest: dict) -> set[str]:
    """settings.event_subscriptions.bot_events: the events an installed app is sent."""
    return set((manifest.get("settings") or {}).get("event_subscriptions", {}).get("bot_events") or [])
