"""Files on disk that survive a crash: written once under a temporary name and renamed, directories
synced, and the build lock that keeps two builders of one index folder apart."""

from __future__ import annotations

import fcntl
import hashlib
import os
import uuid
from collections.abc import Callable
from pathlib import Path

from ..errors import IndexProblem


def write_replacing(path: Path, data: bytes) -> None:
    """`data` at `path`, whole or not at all: written under a temporary name (removed again when the
    write fails, on a full disk say), then renamed over the old file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:6]}")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class BuildLock:
    """An exclusive flock on the index directory, released on exit. Acquire it in a thread: it blocks.
    The lock file names the process holding it, so a waiting build can say whom it waits for."""

    def __init__(self, root: Path, on_wait: Callable[[str], None]):
        try:
            root.mkdir(parents=True, exist_ok=True)
            self.handle = open(root / ".build.lock", "a+")
        except PermissionError:
            raise IndexProblem(
                f"Cannot write to the index folder {root} (permission denied): run as a user who "
                "may write there, or give --index another folder."
            ) from None
        except OSError as exc:
            raise IndexProblem(f"Cannot use {root} as an index folder ({exc.strerror}).") from None
        try:
            fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.handle.seek(0)
            on_wait(self.handle.read().strip() or "another process")
            fcntl.flock(self.handle, fcntl.LOCK_EX)
        self.handle.seek(0)
        self.handle.truncate()
        self.handle.write(f"process {os.getpid()}")
        self.handle.flush()

    def __enter__(self) -> BuildLock:
        return self

    def __exit__(self, *exc) -> None:
        self.handle.truncate(0)
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()
