"""Screenshot queries: render a question's crop from its PDF page as the corpus README does, and
derive the robustness variants the harness scores separately (50 % downscale, JPEG q40, rotated
2 degrees, framed like a screenshot in a viewer window).
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path

from PIL import Image, ImageDraw

CROP_DPI = 150
VARIANTS = ("crop", "half", "jpeg40", "rot2", "screenshot")


def render_crop(pdf_path: Path, page: int, box: Sequence[float], dpi: int = CROP_DPI) -> bytes:
    """The crop as the corpus README makes it: PyMuPDF, top-left-origin points, 150 DPI, PNG."""
    import pymupdf

    with pymupdf.open(pdf_path) as doc:
        pix = doc[page - 1].get_pixmap(dpi=dpi, clip=pymupdf.Rect(*box))
        return pix.tobytes("png")


def _png(image: Image.Image) -> bytes:
    buf = io.BytesIO()
    image.save(buf, "PNG")
    return buf.getvalue()


def image_variant(png: bytes, variant: str) -> tuple[bytes, str]:
    """(bytes, mime type) of one robustness variant of a screenshot query."""
    image = Image.open(io.BytesIO(png)).convert("RGB")
    if variant == "crop":
        return png, "image/png"
    if variant == "half":
        return _png(
            image.resize((max(1, image.width // 2), max(1, image.height // 2)), Image.Resampling.LANCZOS)
        ), "image/png"
    if variant == "jpeg40":
        buf = io.BytesIO()
        image.save(buf, "JPEG", quality=40)
        return buf.getvalue(), "image/jpeg"
    if variant == "rot2":
        return _png(image.rotate(2, resample=Image.Resampling.BICUBIC, expand=True, fillcolor="white")), "image/png"
    if variant == "screenshot":
        return _png(frame_like_screenshot(image)), "image/png"
    raise ValueError(f"unknown image variant {variant!r}")


def frame_like_screenshot(image: Image.Image) -> Image.Image:
    """Pad the image on a grey viewer background inside a window: border, title bar, buttons."""
    pad, bar, border = 40, 28, 2
    inner = Image.new("RGB", (image.width + 2 * pad, image.height + 2 * pad), (225, 225, 228))
    inner.paste(image, (pad, pad))
    win = Image.new("RGB", (inner.width + 2 * border, inner.height + bar + 2 * border), (70, 70, 80))
    draw = ImageDraw.Draw(win)
    draw.rectangle((border, border, win.width - border - 1, border + bar - 1), fill=(52, 56, 64))
    for i, color in enumerate(((236, 95, 90), (245, 190, 80), (98, 197, 84))):
        x = border + 12 + i * 20
        draw.ellipse((x, border + 8, x + 12, border + 20), fill=color)
    win.paste(inner, (border, border + bar))
    return win
