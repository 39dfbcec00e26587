"""Generate a realistic sample brochure: the values that matter exist only as pixels on two pages.

Page 1  cover and overview (text layer)
Page 2  specification table (text layer)
Page 3  dimension drawing: a raster image whose labels (148 mm hole spacing, …) have no text layer
Page 4  a scanned service page: one photo-like image, no text layer at all

Usage: python eval/sample_document.py OUT.pdf
"""

from __future__ import annotations

import io
import random
import sys
from pathlib import Path

import pymupdf
from PIL import Image, ImageFilter

A4 = pymupdf.paper_rect("a4")
PRODUCT = "HydroFlow HF-300"
SAMPLE_QUESTION = f"What is the mounting hole spacing of the {PRODUCT}?"
# What the benchmarks ask the brochure: a drawing, a table, the service text, a price it does not state.
QUESTIONS = (
    SAMPLE_QUESTION,
    "What is the maximum system pressure?",
    "How long is the warranty on the pump?",
    f"What is the price of the {PRODUCT} pump?",
    f"Which voltage does the {PRODUCT} need?",
)


def _raster(draw, width_pt: float, height_pt: float, dpi: int = 150) -> bytes:
    """Draw on a scratch page and return it as PNG pixels, so no text layer survives."""
    scratch = pymupdf.open()
    page = scratch.new_page(width=width_pt, height=height_pt)
    draw(page)
    png = page.get_pixmap(dpi=dpi).tobytes("png")
    scratch.close()
    return png


def _cover(doc) -> None:
    page = doc.new_page(width=A4.width, height=A4.height)
    page.draw_rect(pymupdf.Rect(0, 0, A4.width, 120), color=None, fill=(0.05, 0.25, 0.45))
    page.insert_text((50, 70), PRODUCT, fontsize=30, fontname="hebo", color=(1, 1, 1))
    page.insert_text((50, 100), "Compact circulation pump for heating and solar circuits", fontsize=13, color=(1, 1, 1))
    body = (
        f"The {PRODUCT} is a wet-rotor circulation pump for domestic heating, solar thermal and "
        "domestic hot water circuits. A three-speed EC motor adapts the flow to the circuit, and the "
        'cast-iron volute with threaded 1" connections fits most existing installations.\n\n'
        "Highlights\n"
        "- Three speed settings selected with a rotary switch on the terminal box\n"
        "- Quiet operation below 38 dB(A) at speed 2\n"
        "- Suitable for water-glycol mixtures up to 50 %\n"
        "- Dimensions and mounting details: see the drawing on page 3\n"
        "- Service intervals and warranty: see page 4\n"
    )
    page.insert_textbox(pymupdf.Rect(50, 150, A4.width - 50, 600), body, fontsize=11, lineheight=1.4)


def _spec_table(doc) -> None:
    page = doc.new_page(width=A4.width, height=A4.height)
    page.insert_text((50, 70), "Technical specifications", fontsize=20, fontname="hebo")
    rows = [
        ("Parameter", "Value"),
        ("Rated power", "45 W (speed 3)"),
        ("Supply voltage", "230 V AC, 50 Hz"),
        ("Maximum flow rate", "3.2 m³/h"),
        ("Maximum head", "6.0 m"),
        ("Maximum system pressure", "10 bar"),
        ("Fluid temperature", "+2 °C to +110 °C"),
        ("Connection thread", 'G 1" male'),
        ("Protection class", "IP44"),
        ("Weight", "2.6 kg"),
    ]
    top, height = 100, 26
    for i, (name, value) in enumerate(rows):
        y = top + i * height
        if i == 0:
            page.draw_rect(pymupdf.Rect(50, y, A4.width - 50, y + height), color=None, fill=(0.85, 0.9, 0.95))
        page.draw_line((50, y + height), (A4.width - 50, y + height), color=(0.6, 0.6, 0.6), width=0.5)
        font = "hebo" if i == 0 else "helv"
        page.insert_text((56, y + 17), name, fontsize=11, fontname=font)
        page.insert_text((300, y + 17), value, fontsize=11, fontname=font)
    page.insert_text((50, top + len(rows) * height + 30), "Prices are available from your distributor.", fontsize=10)


def _drawing(page) -> None:
    gray = (0.2, 0.2, 0.2)
    body = pymupdf.Rect(110, 90, 370, 250)
    page.draw_rect(body, color=gray, width=2)
    page.draw_circle((240, 170), 48, color=gray, width=2)
    for x in (150, 330):  # mounting holes
        page.draw_circle((x, 270), 6, color=gray, width=1.5)
    page.draw_rect(pymupdf.Rect(100, 260, 380, 280), color=gray, width=1.5)

    def dim(p0, p1, label, at):
        page.draw_line(p0, p1, color=(0, 0, 0.6), width=1)
        page.insert_text(at, label, fontsize=12, color=(0, 0, 0.6))

    dim((150, 300), (330, 300), "Mounting hole spacing 148 mm", (160, 318))
    dim((100, 340), (380, 340), "Overall length 265 mm", (180, 358))
    dim((400, 90), (400, 280), "Height 182 mm", (408, 190))
    page.insert_text((110, 80), "Front view", fontsize=11)
    page.insert_text((120, 395), "Mounting holes: 2 x 9 mm diameter", fontsize=11)


def _drawing_page(doc) -> None:
    page = doc.new_page(width=A4.width, height=A4.height)
    page.insert_text((50, 70), "Dimensions", fontsize=20, fontname="hebo")
    png = _raster(_drawing, 500, 420)
    page.insert_image(pymupdf.Rect(50, 100, 550, 520), stream=png)
    page.insert_text((50, 550), "Figure 3: installation drawing, all dimensions in millimetres.", fontsize=10)


def _service_text(page) -> None:
    page.insert_text((60, 80), "Service and warranty", fontsize=20, fontname="hebo")
    text = (
        "Maintenance\n"
        "Check the pump for noise and leaks once a year before the heating season.\n"
        "Replace the shaft seal kit HF-S12 every 20,000 operating hours.\n"
        "Vent the pump after every refill of the heating circuit.\n\n"
        "Warranty\n"
        "The manufacturer grants a warranty of 36 months from the date of purchase.\n"
        "The warranty does not cover damage caused by dry running or frost.\n"
        "Service hotline: +49 30 1234 5678 (Monday to Friday, 8:00 to 17:00)."
    )
    page.insert_textbox(pymupdf.Rect(60, 110, A4.width - 60, 700), text, fontsize=12, lineheight=1.5)


def _scanned_page(doc, seed: int = 7) -> None:
    """A page that went through a scanner: slightly rotated, blurred, noisy JPEG, no text layer."""
    png = _raster(_service_text, A4.width, A4.height, dpi=150)
    img = Image.open(io.BytesIO(png)).convert("L")
    img = img.rotate(0.6, expand=False, fillcolor=255, resample=Image.Resampling.BICUBIC)
    img = img.filter(ImageFilter.GaussianBlur(0.6))
    rng = random.Random(seed)
    noise = Image.effect_noise(img.size, 12)
    img = Image.blend(img, noise.point(lambda v: 255 if v > 128 + rng.randint(0, 0) else 235), 0.08)
    buf = io.BytesIO()
    img.convert("RGB").save(buf, "JPEG", quality=70)
    page = doc.new_page(width=A4.width, height=A4.height)
    page.insert_image(page.rect, stream=buf.getvalue())


def build(out: Path) -> Path:
    doc = pymupdf.open()
    _cover(doc)
    _spec_table(doc)
    _drawing_page(doc)
    _scanned_page(doc)
    doc.set_metadata({"title": f"{PRODUCT} product brochure", "author": "pixelrag sample generator"})
    out.parent.mkdir(parents=True, exist_ok=True)
    doc.save(out, garbage=3, deflate=True)
    doc.close()
    return out


if __name__ == "__main__":
    target = Path(sys.argv[1] if len(sys.argv) > 1 else "index/sample/hf300-brochure.pdf")
    print(build(target))
