"""Answering a question: the pipeline as stages (pipeline.py: resolve, retrieve, select, read, cite),
the screenshots a question carries (query_images.py, checked once; page_match.py, which page one was
cut from), the quotes found on their pages and drawn as images (citations.py), and how much of a
thread a follow-up's resolver reads (history.py)."""
