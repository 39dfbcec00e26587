"""One exception family. Every message is written for the person who asked."""


class PixelragError(Exception):
    """Base class; str(error) is safe to show to a user."""


class BadInput(PixelragError):
    """A file, image, URL, question or command that cannot be used."""


class IndexProblem(PixelragError):
    """The index is missing, damaged, or was built by another backend."""


class RemoteError(PixelragError):
    """A remote service (Gemini, a download) kept failing after retries."""


class Busy(PixelragError):
    """The same document is already being indexed."""
