"""Screenshot queries: checked, decoded and normalised once, before any backend sees them.

What a person attaches (a retina PNG of several MB, a WebP, a phone photo with an EXIF rotation,
seven screenshots at once) is turned into what every backend accepts: at most MAX_IMAGES PNG or
JPEG images, the long side at most MAX_SIDE pixels, together within IMAGES_BUDGET bytes (one
Gemini embedding request carries them all, base64-encoded, under its 4 MiB body limit).
"""

from __future__ import annotations

import io
import warnings

from PIL import Image, ImageOps

from ..errors import BadInput, megabytes
from ..records import QueryImage

ACCEPTED = {"PNG": "image/png", "JPEG": "image/jpeg", "WEBP": "image/webp"}  # what people may attach
MAX_PIXELS = 40_000_000  # decoded size refused before it expands (decompression bombs)
MAX_IMAGES = 6  # gemini-embedding-2 takes at most 6 images per content
MAX_SIDE = 2048  # enough for OCR of screen text and more than the models look at
IMAGES_BUDGET = 2_800_000  # bytes for all images of one query: ~3.7 MB once base64-encoded
MIN_SIDE = 320  # below this a screenshot's text is no longer readable; stop shrinking
# A side more than this many times the other is a sliver, not a screenshot: shrunk to MAX_SIDE, its short
# side would be a pixel or none, which OCR and the models refuse.
MAX_ASPECT = 100
JPEG_QUALITIES = (90, 80, 70)
EXIF_ORIENTATION = 0x0112
# How chat platforms label the same images (a content type, or only a file name).
MIME_ALIASES = {
    "image/png": "image/png",
    "image/jpeg": "image/jpeg",
    "image/jpg": "image/jpeg",
    "image/webp": "image/webp",
}
SUFFIXES = {".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".webp": "image/webp"}


def attachment_kind(content_type: str | None, file_name: str | None) -> str | None:
    """'pdf', an accepted image MIME type, or None for a file that can't be used; the content type
    decides, the file name only when there is none."""
    ctype = (content_type or "").split(";")[0].strip().lower()
    suffix = ("." + file_name.rsplit(".", 1)[-1].lower()) if file_name and "." in file_name else ""
    if ctype:
        return "pdf" if ctype == "application/pdf" else MIME_ALIASES.get(ctype)
    return "pdf" if suffix == ".pdf" else SUFFIXES.get(suffix)


def open_image(image: QueryImage, max_bytes: int) -> Image.Image:
    """The decoded image (every pixel read, so a damaged or truncated file fails here, with a message)."""
    if len(image.data) > max_bytes:
        raise BadInput(
            f"{image.name}: {megabytes(len(image.data))} is over the {megabytes(max_bytes)} limit for screenshots."
        )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # our own MAX_PIXELS decides
        try:
            img = Image.open(io.BytesIO(image.data))
        except Image.DecompressionBombError:
            raise BadInput(
                f"{image.name}: the image is too large to read (over {MAX_PIXELS // 1_000_000} "
                "million pixels); send a smaller screenshot."
            ) from None
        except Exception:
            raise BadInput(f"{image.name}: not a readable PNG, JPEG or WebP image.") from None
        if img.format not in ACCEPTED:
            raise BadInput(f"{image.name}: {img.format or 'unknown'} images are not supported; use PNG, JPEG or WebP.")
        w, h = img.size
        if w * h > MAX_PIXELS:
            raise BadInput(
                f"{image.name}: {w}x{h} pixels is too large to read (over {MAX_PIXELS // 1_000_000} "
                "million pixels); send a smaller screenshot."
            )
        if max(w, h) > MAX_ASPECT * min(w, h):
            raise BadInput(
                f"{image.name}: {w}x{h} pixels is a sliver, not a screenshot (one side is over {MAX_ASPECT} "
                "times the other); send a screenshot of the part of the page you mean."
            )
        try:
            img.load()
        except Exception:
            raise BadInput(
                f"{image.name}: the image is damaged or incomplete (it could not be decoded); "
                "take the screenshot again."
            ) from None
    return img


def validate_query_image(image: QueryImage, max_bytes: int) -> QueryImage:
    """The attachment with its MIME type taken from its bytes; BadInput when it cannot be used."""
    img = open_image(image, max_bytes)
    assert img.format is not None  # open_image refuses any format not in ACCEPTED
    return QueryImage(image.data, ACCEPTED[img.format], image.name)


def prepare_query_images(
    images: tuple[QueryImage, ...] | list[QueryImage], max_bytes: int
) -> tuple[tuple[QueryImage, ...], tuple[str, ...]]:
    """The images a question is searched and read with, and notes for the person about what was left
    out. Every image is decoded; the first MAX_IMAGES are kept and normalised to share the budget."""
    kept, notes = list(images[:MAX_IMAGES]), []
    if len(images) > MAX_IMAGES:
        left = ", ".join(img.name for img in images[MAX_IMAGES:])
        notes.append(f"Only the first {MAX_IMAGES} screenshots were used; left out: {left}.")
    budget = IMAGES_BUDGET // max(1, len(kept))
    out = []
    for image in kept:
        data, mime = fit(open_image(image, max_bytes), image.data, budget)
        out.append(QueryImage(data, mime, image.name))
    return tuple(out), tuple(notes)


def fit(img: Image.Image, original: bytes, budget: int) -> tuple[bytes, str]:
    """PNG or JPEG bytes of `img`, upright, within `budget` bytes and MAX_SIDE pixels.

    A PNG or JPEG that already fits is passed on unchanged. Otherwise PNG is tried first (screen
    text stays crisp), then JPEG at falling quality, then smaller sizes."""
    rotated = img.getexif().get(EXIF_ORIENTATION, 1) != 1
    if img.format in ("PNG", "JPEG") and not rotated and max(img.size) <= MAX_SIDE and len(original) <= budget:
        return original, ACCEPTED[img.format]
    scaled = shrink(flatten(ImageOps.exif_transpose(img) if rotated else img), MAX_SIDE)
    candidates: list[tuple[str, int | None]] = [] if img.format == "JPEG" else [("PNG", None)]
    candidates += [("JPEG", q) for q in JPEG_QUALITIES]
    while True:
        for kind, quality in candidates:
            data = encode(scaled, kind, quality)
            if len(data) <= budget or max(scaled.size) <= MIN_SIDE:
                return data, ACCEPTED[kind]
        scaled = shrink(scaled, max(MIN_SIDE, int(max(scaled.size) * 0.75)))
        candidates = [("JPEG", JPEG_QUALITIES[1])]


def flatten(img: Image.Image) -> Image.Image:
    """RGB (or greyscale) pixels; transparency is composed onto white, as a chat client shows it."""
    if img.mode in ("RGB", "L"):
        return img
    if img.mode in ("RGBA", "LA", "PA") or (img.mode == "P" and "transparency" in img.info):
        rgba = img.convert("RGBA")
        background = Image.new("RGB", rgba.size, "white")
        background.paste(rgba, mask=rgba.getchannel("A"))
        return background
    return img.convert("RGB")


def shrink(img: Image.Image, side: int) -> Image.Image:
    if max(img.size) <= side:
        return img
    scale = side / max(img.size)
    return img.resize((max(1, round(img.width * scale)), max(1, round(img.height * scale))), Image.Resampling.LANCZOS)


def encode(img: Image.Image, kind: str, quality: int | None) -> bytes:
    buf = io.BytesIO()
    if kind == "PNG":
        img.save(buf, "PNG", optimize=False, compress_level=6)
    else:
        img.save(buf, "JPEG", quality=quality, optimize=True)
    return buf.getvalue()
