"""The opt-in TypeSafe Jev page selector: the request (selector.py), what it decides (decisions.py) and
the thumbnails it sees (thumbnails.py)."""
