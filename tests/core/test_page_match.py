"""Telling which page a screenshot was cut from by its pixels (core/answering/page_match.py)."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageDraw

from core.answering.page_match import shown_page


def page(seed: int, shapes: int = 60) -> Image.Image:
    """A page of line art and boxes: different on each seed, alike in kind (what text alone cannot tell apart)."""
    rng = np.random.default_rng(seed)
    image = Image.new("RGB", (900, 1270), "white")
    draw = ImageDraw.Draw(image)
    for _ in range(shapes):
        x, y = rng.integers(0, 820), rng.integers(0, 1190)
        w, h = rng.integers(20, 80), rng.integers(20, 80)
        draw.rectangle(
            (x, y, x + w, y + h), outline="black", width=3, fill=tuple(int(c) for c in rng.integers(0, 255, 3))
        )
        draw.line((x, y, x + int(rng.integers(-60, 60)), y + int(rng.integers(-60, 60))), fill="black", width=2)
    return image


def encoded(image: Image.Image, fmt: str = "JPEG", **options) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def test_the_page_a_screenshot_was_cut_from_is_found_though_scaled_compressed_and_rotated():
    pages = [page(seed) for seed in (1, 2, 3)]
    crop = pages[2].crop((100, 300, 700, 700))
    variants = [crop, crop.resize((300, 200)), crop.rotate(2, expand=True, fillcolor="white")]
    for variant in variants:
        assert shown_page([encoded(variant, quality=40)], [encoded(p) for p in pages]) == 2


def test_a_screenshot_of_no_candidate_page_moves_nothing():
    pages = [encoded(page(seed)) for seed in (1, 2, 3)]
    assert shown_page([encoded(page(4).crop((100, 300, 700, 700)))], pages) is None
    assert shown_page([encoded(Image.new("RGB", (400, 300), "white"), "PNG")], pages) is None  # no keypoints at all


def test_a_picture_printed_twice_goes_to_the_print_it_was_cut_from():
    # The same picture on two pages, once with a circle drawn on it (a manual's "this connector"):
    # both prints share the keypoints; the pixels tell which one the screenshot shows.
    picture = page(7).crop((100, 300, 700, 700))
    plain, circled = page(8), page(9)
    plain.paste(picture, (150, 200))
    circled.paste(picture, (150, 500))
    ImageDraw.Draw(circled).ellipse((350, 620, 550, 800), outline=(230, 0, 0), width=8)
    pages = [encoded(p) for p in (page(1), plain, circled)]
    assert shown_page([encoded(circled.crop((150, 500, 750, 900)), quality=40)], pages) == 2
    assert shown_page([encoded(plain.crop((150, 200, 750, 600)), quality=40)], pages) == 1


def in_a_window(cut: Image.Image, margin: int = 120) -> Image.Image:
    """`cut` as a screenshot shows it: on a viewer's grey background, inside a window with a title bar."""
    window = Image.new("RGB", (cut.width + 2 * margin, cut.height + 2 * margin + 40), (60, 62, 70))
    ImageDraw.Draw(window).rectangle((8, 48, window.width - 8, window.height - 8), fill=(222, 222, 226))
    for i, colour in enumerate(((236, 95, 90), (245, 190, 80), (98, 197, 84))):
        ImageDraw.Draw(window).ellipse((12 + 24 * i, 12, 28 + 24 * i, 28), fill=colour)
    window.paste(cut, (margin, margin + 40))
    return window


def test_a_screenshot_of_a_cut_inside_a_viewer_window_finds_its_page():
    # The window around the cut is no part of any page: the pixels are compared where the page's
    # keypoints are, not over the whole screenshot.
    pages = [page(seed) for seed in (1, 2, 3)]
    screenshot = in_a_window(pages[1].crop((200, 400, 600, 650)))
    assert shown_page([encoded(screenshot, "PNG")], [encoded(p) for p in pages]) == 1


def test_a_cut_holding_little_is_found_when_its_pixels_match_clearly():
    # A few boxes give fewer keypoints than a busy cut: fewer agreeing ones do when the page laid back
    # matches the cut clearly; where it matches poorly, retrieval's order stands.
    pages = [page(seed, shapes=25) for seed in (26, 126, 226)]
    assert shown_page([encoded(pages[1].crop((100, 300, 500, 500)), quality=60)], [encoded(p) for p in pages]) == 1
    pages = [page(seed, shapes=25) for seed in (25, 125, 225)]
    assert shown_page([encoded(pages[1].crop((300, 900, 800, 1100)), quality=60)], [encoded(p) for p in pages]) is None


def test_a_band_other_pages_print_too_is_no_evidence_of_a_page():
    # A strip that several pages print (a running header, a logo bar) agrees with each of them, pixel for
    # pixel; it is a sliver of the screenshot, which none of these pages shows.
    band = page(5).crop((0, 0, 900, 70))
    pages = [page(seed) for seed in (1, 2, 3)]
    for p in pages:
        p.paste(band, (0, 600))
    screenshot = page(6).crop((100, 300, 800, 1100))
    screenshot.paste(band.crop((100, 0, 800, 66)), (0, 300))
    assert shown_page([encoded(screenshot, "PNG")], [encoded(p) for p in pages]) is None


def test_a_small_screenshot_is_enlarged_until_its_keypoints_have_room():
    pages = [page(seed) for seed in (1, 2, 3)]
    small = pages[2].crop((100, 300, 700, 700)).resize((150, 100))  # a quarter of the page's resolution
    assert shown_page([encoded(small, "PNG")], [encoded(p) for p in pages]) == 2
