"""Building the index: an indexing request becomes a job per PDF (requests.py; worker.py does them), and
a job, a move or a removal one build (indexer.py), which builds each document (document.py: render ->
words -> embed, reusing unchanged pages) and publishes them together. sources.py opens, downloads and
checks a PDF; page_rendering.py draws its pages (in worker processes for long documents). A build never
loses documents it was not asked to touch, even over a damaged index (core/embedded/recovery.py)."""

from .document import ProgressFn
from .indexer import Indexer, build_key

__all__ = ["Indexer", "ProgressFn", "build_key"]
