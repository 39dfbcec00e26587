"""What pixelrag serves to a browser: the page viewer that citations link to (viewer.py, pages.py), on
the chat processes' own port when PIXELRAG_PUBLIC_URL is set (bot/health.py adds it), and on its own
with `pixelrag web` (server.py)."""
