"""What the end-to-end tests of agents' routes share (test_api.py, test_compat.py, test_mcp.py): the
`pixelrag` command as a process, an index holding the brochure in the shared collection and a channel's
own note with keys made by `pixelrag keys`, and `pixelrag web` serving it."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from tests.conftest import ROOT, closed_port, text_pdf

QUESTION = "What is the mounting hole spacing of the HydroFlow HF-300?"
CHANNEL = "slack:T1/C9"
BLENDER = "How many litres does the Z9 blender hold?"  # only the channel's note says
PER_HOUR = 5  # each key's questions an hour in the `api` fixture's server, as a person's in chat

# `pixelrag` with Python's Ctrl-C handler, which a process started with SIGINT ignored (a shell's
# background job) would otherwise inherit the lack of.
WITH_CTRL_C = "import signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); " + (
    "from bot.cli import main; sys.exit(main(sys.argv[1:]))"
)


def environment(**extra: str) -> dict[str, str]:
    """This environment without Gemini's or pixelrag's settings (the local backend: nothing leaves the
    machine), the checkout importable."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GEMINI_", "GOOGLE_", "PIXELRAG_"))}
    return env | {"PYTHONPATH": str(ROOT)} | extra


def pixelrag(index: Path, *argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "bot.cli", *argv, "--index", str(index)],
        capture_output=True,
        text=True,
        env=environment(**(env or {})),
        cwd=index.parent,
        timeout=240,
    )


def bearer(key: str) -> dict:
    return {"Authorization": f"Bearer {key}"}


async def keyed_index(tmp_path: Path, brochure_index: Path) -> tuple[Path, dict[str, str]]:
    """A copy of the brochure's index with the channel's own note, and keys by name: everyone (the shared
    collection), hr (the channel) and gone (revoked)."""
    index = tmp_path / "index"
    shutil.copytree(brochure_index, index)
    note = text_pdf(tmp_path / "hr-note.pdf", ["HR note: the Z9 blender in the break room holds 1.5 litres."])
    from core import Service, Settings

    async with Service(Settings(index_dir=index, backend="local")) as service:
        await service.index_bytes(note.read_bytes(), "hr-note.pdf", scope=CHANNEL)
    keys = {}
    for name, scope in (("everyone", "shared"), ("hr", CHANNEL), ("gone", "shared")):
        made = pixelrag(index, "keys", "add", name, "--scope", scope)
        assert made.returncode == 0, made.stderr
        keys[name] = made.stdout.strip().splitlines()[-1]
    assert pixelrag(index, "keys", "revoke", "gone").returncode == 0
    return index, keys


@asynccontextmanager
async def web_process(index: Path, stop: int = signal.SIGTERM, **env: str) -> AsyncIterator[str]:
    """`pixelrag web` serving `index` (its base URL) until the block ends, then stopped by `stop`; it must
    have written no traceback, and a Ctrl-C (SIGINT) must end it as one ends a command (exit 130)."""
    port = closed_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", WITH_CTRL_C, "web", "--index", str(index), "--port", str(port),
        cwd=index.parent, env=environment(**env), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    assert process.stdout is not None
    serving = await process.stdout.readline()  # said once it listens, the index open
    if not serving.startswith(b"pixelrag web: http://"):
        if process.returncode is None:
            process.kill()
        raise AssertionError("pixelrag web did not start: " + (await process.communicate())[1].decode())
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        if process.returncode is None:
            process.send_signal(stop)
        _, stderr = await process.communicate()
        assert b"Traceback" not in stderr and b"Task was destroyed" not in stderr, stderr.decode()
        assert stop != signal.SIGINT or process.returncode == 130, (process.returncode, stderr.decode())
