"""`pixelrag chat`: the conversation service in a terminal — one thread with history.

Commands: /image PATH (attach a screenshot to the next question), /index PATH_OR_URL, /docs,
/new (start a new thread), /help, /quit. Images are written to a folder and their paths printed.
"""
from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from core.config import Settings
from core.errors import PixelragError
from core.records import SHARED_SCOPE, Exchange, QueryImage, Turn

from .cli import ProgressBar, print_answer, print_report

HELP = """Ask a question about the indexed PDFs. Follow-ups remember this thread.
  /image PATH         attach a screenshot (PNG, JPEG, WebP) to the next question
  /index PATH_OR_URL  index a PDF
  /docs               list indexed documents
  /new                start a new thread
  /quit               leave"""


async def run_console(settings: Settings, out_dir: Path, stdin=None) -> int:
    from core.service import Service

    service = Service(settings)
    stdin = stdin or sys.stdin
    history: list[Exchange] = []
    images: list[QueryImage] = []
    turn_no = 0
    print(f"pixelrag chat ({settings.backend} backend, index {settings.index_dir}). /help for commands.")
    while True:
        print("\nyou> ", end="", flush=True)
        line = await asyncio.to_thread(stdin.readline)
        if not line:
            return 0
        line = line.strip()
        if not line:
            continue
        command, _, arg = line.partition(" ")
        try:
            if command in ("/quit", "/exit"):
                return 0
            if command == "/help":
                print(HELP)
            elif command == "/new":
                history.clear()
                images.clear()
                print("New thread.")
            elif command == "/docs":
                docs = service.documents(SHARED_SCOPE)
                print("\n".join(f"- {d.title} ({d.page_count} pages)" for d in docs) or "No documents yet.")
            elif command == "/index":
                print_report(await service.index([arg.strip()], progress=ProgressBar()), as_json=False)
            elif command == "/image":
                path = Path(arg.strip()).expanduser()
                if not path.is_file():
                    print(f"{path}: no such file.")
                    continue
                images.append(QueryImage(path.read_bytes(), "", path.name))
                print(f"Attached {path.name}; it goes with your next question.")
            elif command.startswith("/"):
                print(f"Unknown command {command}.\n{HELP}")
            else:
                turn_no += 1
                answer = await service.answer(Turn(line, tuple(images), history=tuple(history)),
                                              out_dir / f"turn-{turn_no:03d}")
                images.clear()
                print()
                print_answer(answer)
                history.append(Exchange.of(line, answer))
        except PixelragError as exc:
            print(f"pixelrag: {exc}")
