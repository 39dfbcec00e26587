"""The Discord adapter: messages and app commands in, core service calls, rendered answers out;
`serve` runs the bot, `build_client` makes it without connecting; `DiscordQuestions` and
`DiscordCommands` are what it does.

Modules in tiers, each importing only its own tier and those before it (a test holds it):
settings.py; render.py, layout.py, feedback.py (records -> Discord objects, no I/O but a button's
click); replies.py, stream.py, progress.py (sending); routing.py, permissions.py, files.py,
questions.py, commands.py (behaviour); cogs.py, client.py (wiring).
"""

from .client import PixelragBot, build_client, serve
from .commands import DiscordCommands
from .questions import DiscordQuestions
from .settings import DiscordSettings

__all__ = ["DiscordCommands", "DiscordQuestions", "DiscordSettings", "PixelragBot", "build_client", "serve"]
