"""Screenshot normalisation: what every backend receives, whatever a person attached."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from core.answering.query_images import IMAGES_BUDGET, MAX_IMAGES, MAX_SIDE, prepare_query_images, validate_query_image
from core.errors import BadInput
from core.records import QueryImage

LIMIT = 5 * 1024 * 1024


def encoded(img: Image.Image, fmt: str, **kw) -> bytes:
    buf = io.BytesIO()
    img.save(buf, fmt, **kw)
    return buf.getvalue()


def noisy(size: tuple[int, int], mode: str = "RGB", seed: int = 1, sigma: float = 40) -> Image.Image:
    """Pixels that compress like a busy retina screenshot (photos, gradients, anti-aliased text)."""
    rng = np.random.default_rng(seed)
    channels = {"RGB": 3, "RGBA": 4}[mode]
    base = np.linspace(0, 255, size[0], dtype=np.float32)[None, :, None]
    pixels = base + rng.normal(0, sigma, (size[1], size[0], channels))
    if mode == "RGBA":
        pixels[..., 3] = 255
        pixels[: size[1] // 4, :, 3] = 0  # a transparent band
    return Image.fromarray(pixels.clip(0, 255).astype(np.uint8), mode)


def decoded(image: QueryImage) -> Image.Image:
    img = Image.open(io.BytesIO(image.data))
    img.load()
    return img


def test_a_retina_png_over_the_request_budget_is_scaled_and_reencoded():
    # Before: a 4.5 MB PNG was sent as it was and Gemini refused the 6 MB base64 body.
    pixels = np.asarray(noisy((2880, 1800))).copy()
    pixels[500:] = 255  # a busy band of photos above a plain page
    big = encoded(Image.fromarray(pixels), "PNG")
    assert IMAGES_BUDGET < len(big) <= LIMIT
    [image], notes = prepare_query_images([QueryImage(big, "image/png", "retina.png")], LIMIT)
    assert not notes
    img = decoded(image)
    assert max(img.size) <= MAX_SIDE and img.format in ("PNG", "JPEG")
    assert image.mime_type == Image.MIME[img.format]
    assert len(image.data) <= IMAGES_BUDGET
    assert abs(img.width / img.height - 2880 / 1800) < 0.01  # the aspect ratio is kept


def test_webp_becomes_png_or_jpeg_and_transparency_becomes_white():
    webp = encoded(noisy((600, 400), "RGBA"), "WEBP", lossless=True)
    [image], _ = prepare_query_images([QueryImage(webp, "image/webp", "shot.webp")], LIMIT)
    img = decoded(image)
    assert img.format in ("PNG", "JPEG") and image.mime_type in ("image/png", "image/jpeg")
    assert img.mode in ("RGB", "L")
    assert img.convert("RGB").getpixel((10, 10)) == (255, 255, 255)  # the transparent band


def test_a_small_png_or_jpeg_is_passed_on_unchanged():
    png = encoded(noisy((300, 200)), "PNG")
    jpeg = encoded(noisy((300, 200)), "JPEG", quality=80)
    images, notes = prepare_query_images([QueryImage(png, "", "a.png"), QueryImage(jpeg, "", "b.jpg")], LIMIT)
    assert [i.data for i in images] == [png, jpeg] and [i.mime_type for i in images] == ["image/png", "image/jpeg"]
    assert not notes


def test_a_rotated_phone_photo_is_turned_upright():
    img = noisy((400, 200))
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise to view
    photo = encoded(img, "JPEG", exif=exif.tobytes())
    [image], _ = prepare_query_images([QueryImage(photo, "image/jpeg", "photo.jpg")], LIMIT)
    assert decoded(image).size == (200, 400)


def test_at_most_six_images_and_the_reply_names_the_rest():
    shots = [QueryImage(encoded(noisy((900, 700), seed=i), "PNG"), "image/png", f"s{i}.png") for i in range(8)]
    images, notes = prepare_query_images(shots, LIMIT)
    assert [i.name for i in images] == [f"s{i}.png" for i in range(MAX_IMAGES)]
    assert sum(len(i.data) for i in images) <= IMAGES_BUDGET  # all of them fit one embedding request
    [note] = notes
    assert "s6.png" in note and "s7.png" in note and str(MAX_IMAGES) in note


def test_damaged_and_oversized_images_are_refused_with_a_reason():
    png = encoded(noisy((800, 600)), "PNG")
    with pytest.raises(BadInput, match="damaged or incomplete"):
        validate_query_image(QueryImage(png[: len(png) // 2], "", "half.png"), LIMIT)
    with pytest.raises(BadInput, match="damaged or incomplete"):
        prepare_query_images([QueryImage(png[: len(png) // 2], "", "half.png")], LIMIT)
    huge = encoded(Image.new("1", (20_000, 20_000)), "PNG")  # a small file, 400 million pixels
    with pytest.raises(BadInput, match="too large to read"):
        validate_query_image(QueryImage(huge, "", "huge.png"), LIMIT)
