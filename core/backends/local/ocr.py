"""OCR with rapidocr's shipped PP-OCR models: the words that exist only as pixels.

Used for scanned pages, for drawings and photos on pages that do have a text layer (the text
layer's words are painted over first, so only the remaining ink is read), and for screenshot
queries. Blocking calls: run them off the event loop.
"""

from __future__ import annotations

import io
import logging
import threading

import numpy as np
from PIL import Image, ImageDraw

from ...records import Word

MIN_SCORE = 0.5


class Ocr:
    def __init__(self):
        self._engine = None
        self._lock = threading.Lock()  # one engine, one image at a time: it already uses both cores

    def _get(self):
        if self._engine is None:
            from rapidocr import RapidOCR

            # The angle classifier flips upright lines into garbage; pages here are upright.
            self._engine = RapidOCR(params={"Global.use_cls": False, "Global.log_level": "error"})
            logging.getLogger("RapidOCR").setLevel(logging.ERROR)  # "no text detected" is not news
        return self._engine

    def lines(self, image: Image.Image) -> list[tuple[str, tuple[float, float, float, float]]]:
        """(text, normalized box) per detected line."""
        rgb = np.asarray(image.convert("RGB"))
        with self._lock:
            result = self._get()(rgb)
        if result is None or result.boxes is None:
            return []
        h, w = rgb.shape[:2]
        out: list[tuple[str, tuple[float, float, float, float]]] = []
        for quad, text, score in zip(result.boxes, result.txts, result.scores):
            text = text.strip()
            if not text or score < MIN_SCORE:
                continue
            xs, ys = quad[:, 0], quad[:, 1]
            box = (max(0.0, xs.min() / w), max(0.0, ys.min() / h), min(1.0, xs.max() / w), min(1.0, ys.max() / h))
            x0, y0, x1, y1 = (float(v) for v in box)
            out.append((text, (x0, y0, x1, y1)))
        return out

    def page_words(
        self, jpeg: bytes, dpi: float, ocr_dpi: int, covered: tuple[Word, ...], first_line: int
    ) -> list[Word]:
        """OCR words for ink that the text layer does not cover, read at `ocr_dpi` (or at `dpi`, the
        page's own, where a big page was rendered at less: enlarging adds no detail, only memory)."""
        image: Image.Image = Image.open(io.BytesIO(jpeg))
        scale = min(1.0, ocr_dpi / dpi)
        target = (max(1, int(image.width * scale)), max(1, int(image.height * scale)))
        image = image.convert("RGB")
        if image.size != target:
            image = image.resize(target, Image.Resampling.LANCZOS)
        mask = ImageDraw.Draw(image)
        for word in covered:
            x0, y0, x1, y1 = word.box
            pad = 0.002
            mask.rectangle(
                (
                    (x0 - pad) * image.width,
                    (y0 - pad) * image.height,
                    (x1 + pad) * image.width,
                    (y1 + pad) * image.height,
                ),
                fill="white",
            )
        words: list[Word] = []
        for n, (text, box) in enumerate(self.lines(image)):
            words.extend(split_line(text, box, first_line + n))
        return words

    def image_text(self, data: bytes) -> str:
        """The text of a screenshot, line by line."""
        image: Image.Image = Image.open(io.BytesIO(data))
        if max(image.size) < 1000:  # small screenshots read better enlarged
            scale = 1000 / max(image.size)
            image = image.convert("RGB").resize((int(image.width * scale), int(image.height * scale)))
        return "\n".join(drop_stray_glyphs([text for text, _ in self.lines(image)]))


def _is_cjk(c: str) -> bool:
    return "\u2e80" <= c <= "\u9fff" or "\uac00" <= c <= "\ud7af" or "\uf900" <= c <= "\ufaff"


def drop_stray_glyphs(lines: list[str]) -> list[str]:
    """The recogniser also knows Chinese, and reads arrows and icons in a Latin-script screenshot as
    one or two CJK characters ("个" for an up arrow). Such a fragment would become a query word that
    nothing matches and pull the query's embedding away, so in a mostly Latin screenshot it is dropped."""
    letters = [c for line in lines for c in line if c.isalpha()]
    if sum(map(_is_cjk, letters)) * 2 >= len(letters):
        return lines
    return [line for line in lines if not (len(line.strip()) <= 2 and any(map(_is_cjk, line)))]


def split_line(text: str, box: tuple[float, float, float, float], line: int) -> list[Word]:
    """Split an OCR line into words, giving each a share of the box proportional to its length."""
    parts = text.split()
    total = sum(len(p) for p in parts) + max(0, len(parts) - 1)
    x0, y0, x1, y1 = box
    width = (x1 - x0) / max(total, 1)
    words, pos = [], 0
    for part in parts:
        words.append(Word(part, (x0 + pos * width, y0, x0 + (pos + len(part)) * width, y1), line, "ocr"))
        pos += len(part) + 1
    return words
