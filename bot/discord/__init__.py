"""The Discord adapter: messages and app commands in, core service calls, rendered answers out;
`serve` runs the bot, `build_client` makes it without connecting, `DiscordHandlers` is what it does."""

from .client import PixelragBot, build_client, serve
from .handlers import DiscordHandlers
from .settings import DiscordSettings

__all__ = ["DiscordHandlers", "DiscordSettings", "PixelragBot", "build_client", "serve"]
