"""The Slack adapter: Slack events and /pixelrag in, core's answers and indexing jobs out.

Read in this order: app.py (Bolt, listeners registered), middleware.py (addressed? claimed?),
questions.py (a question's way to the reply), replies.py (posting in the thread), indexing.py and
commands.py (documents), feedback.py (the 👍 / 👎 clicks), agent.py (the agent view: thread titles,
suggested prompts), home.py and home_view.py (the App Home tab), files.py, permissions.py, render.py
(Block Kit), settings.py, serve.py.
"""

from .app import SlackBot, build_app
from .serve import serve

__all__ = ["SlackBot", "build_app", "serve"]
