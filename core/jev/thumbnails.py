"""The images Jev sees: baseline (not progressive) JPEG thumbnails, the longer side capped at 1024 px,
padded with white up to the smallest size accepted. The reader still reads the original page images.

MIN_SIDE is our assumption, not a documented limit: neither typesafe-sdk 0.7.5 (its source checks
only that an image is non-empty and labels PNG/JPEG by signature) nor the docs we could read state a
minimum. It is one constant here, and tests/fakes/typesafe.py enforces the same one.
"""

from __future__ import annotations

import io

from PIL import Image

MAX_SIDE = 1024
MIN_SIDE = 64
QUALITY = 80


def thumbnail(data: bytes) -> bytes:
    """A JPEG of the image within MAX_SIDE, at least MIN_SIDE on each side (blocking: a worker thread)."""
    with Image.open(io.BytesIO(data)) as opened:
        img = opened.convert("RGB")
        img.thumbnail((MAX_SIDE, MAX_SIDE), Image.Resampling.LANCZOS)
        if img.width < MIN_SIDE or img.height < MIN_SIDE:
            canvas = Image.new("RGB", (max(img.width, MIN_SIDE), max(img.height, MIN_SIDE)), "white")
            canvas.paste(img, ((canvas.width - img.width) // 2, (canvas.height - img.height) // 2))
            img = canvas
        out = io.BytesIO()
        img.save(out, format="JPEG", quality=QUALITY, progressive=False)
        return out.getvalue()
