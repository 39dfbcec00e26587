"""Rendering a page: its image, whether it is blank, and the pixels OCR reads."""

from __future__ import annotations

import io

import pymupdf
from PIL import Image, JpegImagePlugin

from core.config import Settings
from core.indexing.sources import page_pixels, render_page


def _pdf(draw=None) -> pymupdf.Document:
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    if draw:
        draw(page)
    return doc


def test_a_blank_page_is_blank_and_a_page_with_one_dot_is_not():
    settings = Settings()
    assert render_page(_pdf(), 0, "d", settings).blank
    dot = _pdf(lambda page: page.draw_rect(pymupdf.Rect(300, 400, 301, 401), color=(0, 0, 0), fill=(0, 0, 0)))
    rendered = render_page(dot, 0, "d", settings)
    assert not rendered.blank and rendered.needs_ocr  # no text layer: its ink is read by OCR


def test_the_page_image_keeps_colour_at_full_resolution():
    doc = _pdf(lambda page: page.insert_text((72, 100), "Red label", color=(1, 0, 0), fontsize=9))
    rendered = render_page(doc, 0, "d", Settings())
    image = Image.open(io.BytesIO(rendered.jpeg))
    assert image.format == "JPEG" and image.size == (1653, 2339)  # 595 x 842 pt at 200 dpi
    assert JpegImagePlugin.get_sampling(image) == 0  # 4:4:4: thin coloured strokes stay sharp


def test_ocr_reads_the_page_image_shrunk_never_enlarged():
    rendered = render_page(_pdf(), 0, "d", Settings())
    assert page_pixels(rendered.jpeg, rendered.dpi, 150).size == (1239, 1754)
    assert page_pixels(rendered.jpeg, rendered.dpi, 300).size == (1653, 2339)
