"""Screenshot OCR: real rapidocr on rendered images, and the stray-glyph filter."""
from __future__ import annotations

import io

from PIL import Image, ImageDraw, ImageFont

from core.backends.local.ocr import Ocr, drop_stray_glyphs


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
