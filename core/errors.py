"""One exception family. Every message is written for the person who asked."""


class PixelragError(Exception):
    """Base class; str(error) is safe to show to a user."""


class BadInput(PixelragError):
    """A file, image, URL, question or command that cannot be used."""


class IndexProblem(PixelragError):
    """The index is missing, damaged, or was built by another backend."""


class RemoteError(PixelragError):
    """A remote service (Gemini, a download) kept failing after retries."""


class DatabaseUnavailable(RemoteError):
    """PIXELRAG_DATABASE_URL's server does not answer (stopped, restarting, unreachable)."""


class Busy(PixelragError):
    """The same document is already being indexed."""


def first_line(exc: BaseException) -> str:
    """An exception's first line, for a message: a library's error may run on for a page."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


def plural(n: int, word: str) -> str:
    """A count for a message: '1 page', '3 pages'."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def megabytes(n: float) -> str:
    """A size for a message: '5.2 MB', '40 MB'."""
    return f"{n / 1e6:.1f}".removesuffix(".0") + " MB"


def failure_reason(exc: BaseException) -> str:
    """Why a download failed, in words: 'HTTP 500', 'the connection dropped', 'no answer in time'."""
    status = getattr(exc, "status", None)
    if isinstance(status, int):
        return f"HTTP {status}"
    if isinstance(exc, TimeoutError):
        return "no answer in time"
    return "the connection dropped"
