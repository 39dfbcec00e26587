"""`pixelrag chat`: the conversation flow in a terminal, one thread with memory (kept in memory only).

Commands: /image PATH (attach a screenshot to the next question), /index PATH_OR_URL, /docs,
/new (start a new thread), /help, /quit. Images are written to a folder and their paths printed.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from core import SHARED_SCOPE, Conversation, EmbeddedThreads, PixelragError, QueryImage, Service, Settings

from .cli_jobs import located
from .terminal import ProgressBar, print_answer, print_report, printable, read_image, save_images

HELP = """Ask a question about the indexed PDFs. Follow-ups remember this thread.
  /image PATH         attach a screenshot (PNG, JPEG, WebP) to the next question
  /index PATH_OR_URL  index a PDF
  /docs               list indexed documents
  /new                start a new thread
  /quit               leave"""


async def run_console(settings: Settings, out_dir: Path, stdin=None) -> int:
    threads = await EmbeddedThreads(Path(":memory:")).open()
    try:
        async with Service(settings) as service:
            conversation = Conversation(service, threads, settings.history_exchanges)
            return await Console(service, conversation, out_dir, stdin or sys.stdin).run()
    finally:
        await threads.close()


class Console:
    def __init__(self, service: Service, conversation: Conversation, out_dir: Path, stdin):
        self.service, self.conversation, self.out_dir, self.stdin = service, conversation, out_dir, stdin
        self.images: list[QueryImage] = []
        self.thread = 1
        self.turns = 0

    async def run(self) -> int:
        settings = self.service.settings
        print(f"pixelrag chat ({settings.backend} backend, index {settings.index_dir}). /help for commands.")
        while True:
            print("\nyou> ", end="", flush=True)
            line = await asyncio.to_thread(self.stdin.readline)
            if not line:
                return 0
            line = line.strip()
            if line in ("/quit", "/exit"):
                return 0
            if line:
                try:
                    await self.handle(line)
                except PixelragError as exc:
                    print(f"pixelrag: {exc}")

    async def handle(self, line: str) -> None:
        command, _, arg = line.partition(" ")
        arg = arg.strip()
        if command == "/help":
            print(HELP)
        elif command == "/new":
            self.thread += 1
            self.images.clear()
            print("New thread.")
        elif command == "/docs":
            docs = await self.service.documents(SHARED_SCOPE)
            print(printable("\n".join(f"- {d.title} ({d.page_count} pages)" for d in docs)) or "No documents yet.")
        elif command == "/index":
            print_report(await self.service.requests.index(located([arg]), progress=ProgressBar()), as_json=False)
        elif command == "/image":
            try:
                self.images.append(read_image(arg))
            except PixelragError as exc:  # a folder, no such file: said as it is
                print(printable(str(exc)))
                return
            print(f"Attached {self.images[-1].name}; it goes with your next question.")
        elif command.startswith("/"):
            print(f"Unknown command {command}.\n{HELP}")
        else:
            self.turns += 1
            key = ("console", "local", "terminal", str(self.thread))
            reply = await self.conversation.ask(key, line, tuple(self.images))
            assert reply.answer is not None  # None only for a kept reply sent again (keep_reply)
            self.images.clear()
            print()
            print_answer(save_images(reply.answer, self.out_dir / f"turn-{self.turns:03d}"))
