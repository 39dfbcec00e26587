"""The settings a command runs with: the environment (and .env), then the command line's choices."""

from __future__ import annotations

from pathlib import Path

from core import BadInput, Settings, load_settings


def settings_of(args, existing: bool = True) -> Settings:
    """The settings, with the command line's choices. `existing`: an index folder named on purpose (by
    --index or PIXELRAG_INDEX_DIR) must exist, so that a misspelt one is not taken for an empty index."""
    # Read once by main(), which set up logging from them; read here when called on its own.
    settings = getattr(args, "environment", None) or load_settings(extra_prefixes=("SLACK_", "DISCORD_"))
    if getattr(args, "index", None):
        settings = settings.with_(index_dir=Path(args.index))
    named = settings.index_dir != Settings().index_dir  # not the default ./index, which a new install lacks
    if existing and named and not settings.database_url and not settings.index_dir.exists():
        raise BadInput(f"{settings.index_dir}: no such index folder (`pixelrag index` creates one).")
    if getattr(args, "backend", None):
        settings = settings.with_(backend=args.backend)
    if getattr(args, "jev", None) is not None:  # --jev / --no-jev win over PIXELRAG_JEV
        settings = settings.with_(jev="rerank" if args.jev else "off")
    return settings
