"""OCR: real rapidocr on rendered images (screenshots, the ink a text layer leaves), and the
stray-glyph filter."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from core.backends.local.ocr import Ocr, drop_stray_glyphs, ink_regions
from core.records import Word


def test_stray_cjk_glyphs_are_dropped_from_latin_screenshots_only():
    assert drop_stray_glyphs(["个个", "ANODE", "CATHODE"]) == ["ANODE", "CATHODE"]
    assert drop_stray_glyphs(["车 Testing", "Output"]) == ["车 Testing", "Output"]  # longer lines stay
    chinese = ["通信端口(COM1)", "复位", "出"]
    assert drop_stray_glyphs(chinese) == chinese  # a Chinese screenshot keeps its short words


def test_screenshot_text_is_read_line_by_line():
    image = Image.new("RGB", (900, 260), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.load_default(size=48)
    draw.text((40, 40), "Maximum pressure", fill="black", font=font)
    draw.text((40, 150), "10 bar", fill="black", font=font)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    assert Ocr().image_text(buffer.getvalue()).split("\n") == ["Maximum pressure", "10 bar"]


def _page(labels: list[tuple[str, tuple[int, int], int]]) -> Image.Image:
    """An A4 page at 150 dpi with text drawn at pixel positions in given sizes."""
    image = Image.new("RGB", (1240, 1754), "white")
    draw = ImageDraw.Draw(image)
    for text, at, size in labels:
        draw.text(at, text, fill="black", font=ImageFont.load_default(size=size))
    return image


def test_ink_regions_are_the_groups_of_ink_top_to_bottom():
    image = _page([("Hole spacing 148 mm", (800, 1500), 28), ("Title", (100, 100), 40)])
    regions = ink_regions(np.asarray(image))
    assert len(regions) == 2
    (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = regions
    assert ax0 <= 100 < ax1 and ay0 <= 110 < ay1 and ax1 < 400  # the title, not the page
    assert bx0 <= 800 and by0 <= 1510 < by1 and bx1 > 1000
    assert ink_regions(np.asarray(Image.new("RGB", (400, 300), "white"))) == []


def test_only_ink_the_text_layer_leaves_is_read_with_boxes_on_the_page(monkeypatch):
    # The heading is in the text layer (covered); the drawing's label exists only as pixels.
    image = _page([("Installation", (100, 100), 40), ("Hole spacing 148 mm", (800, 1500), 28)])
    covered = (Word("Installation", (100 / 1240, 95 / 1754, 330 / 1240, 150 / 1754), 0, "text"),)
    ocr = Ocr()
    read = []
    real_lines = ocr.lines
    monkeypatch.setattr(ocr, "lines", lambda img, **kw: read.append(img.size) or real_lines(img, **kw))
    words = ocr.page_words(image, covered, first_line=1)
    assert [w.text for w in words] == ["Hole", "spacing", "148", "mm"]
    assert len(read) == 1 and read[0][0] * read[0][1] < 0.1 * 1240 * 1754  # a crop, not the page
    x0, y0, x1, y1 = words[0].box
    assert 790 / 1240 < x0 < 820 / 1240 and 1495 / 1754 < y0 < y1 < 1545 / 1754
    assert words[-1].box[2] < 1110 / 1240 and all(w.line == 1 and w.source == "ocr" for w in words)


def test_a_page_whose_text_layer_covers_its_ink_runs_no_ocr(monkeypatch):
    image = _page([("Installation", (100, 100), 40)])
    covered = (Word("Installation", (100 / 1240, 95 / 1754, 330 / 1240, 150 / 1754), 0, "text"),)
    ocr = Ocr()
    monkeypatch.setattr(ocr, "lines", lambda *a, **kw: pytest.fail("OCR ran on a page with no ink left"))
    assert ocr.page_words(image, covered, first_line=1) == []
