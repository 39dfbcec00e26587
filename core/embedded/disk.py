"""Files on disk that survive a crash: written once under a temporary name and renamed, directories
synced, the build lock that keeps two builders of one index folder apart, and the page links' secret,
made once by whichever process asks first."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import secrets
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


def not_a_folder(root: Path) -> IndexProblem:
    return IndexProblem(
        f"{root} is a file, not an index folder: give --index (or PIXELRAG_INDEX_DIR) a folder, or move the file away."
    )


@contextlib.contextmanager
def folder_problems(root: Path):
    """An OSError of making or writing the index folder `root`, said in one line as IndexProblem."""
    try:
        yield
    except (FileExistsError, NotADirectoryError):
        raise not_a_folder(root) from None
    except PermissionError:
        raise IndexProblem(
            f"Cannot write to the index folder {root} (permission denied): run as a user who "
            "may write there, or give --index another folder."
        ) from None
    except OSError as exc:
        raise IndexProblem(f"Cannot use {root} as an index folder ({exc.strerror}).") from None


class BuildLock:
    """An exclusive flock on the index directory, released on exit. Acquire it in a thread: it blocks.
    The lock file names the process holding it, so a waiting build can say whom it waits for."""

    def __init__(self, root: Path, on_wait: Callable[[str], None]):
        with folder_problems(root):
            root.mkdir(parents=True, exist_ok=True)
            self.handle = open(root / ".build.lock", "a+")
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


def kept_secret(root: Path) -> bytes:
    """The page links' secret, in root/link-secret (readable by this user only): made by the first
    process that asks (O_EXCL: one of two at once wins), read by every other."""
    path = root / "link-secret"
    try:
        root.mkdir(parents=True, exist_ok=True)
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
            out.write(secrets.token_hex(32) + "\n")
            out.flush()
            os.fsync(out.fileno())
    except FileExistsError:
        pass
    except OSError as exc:
        if not path.is_file():
            raise IndexProblem(
                f"{path}: the page links' secret cannot be kept ({exc.strerror}); set PIXELRAG_LINK_SECRET."
            ) from exc
    try:
        secret = bytes.fromhex(path.read_text(encoding="ascii").strip())
    except (OSError, ValueError) as exc:
        raise IndexProblem(
            f"{path} cannot be read as the page links' secret; delete it (links made so far stop working) "
            "or set PIXELRAG_LINK_SECRET."
        ) from exc
    if len(secret) < 16:
        raise IndexProblem(f"{path} holds too short a secret; delete it (links made so far stop working).")
    return secret
