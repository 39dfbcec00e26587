"""OCR with rapidocr's shipped PP-OCR models: the words that exist only as pixels.

Used for scanned pages, for drawings and photos on pages that do have a text layer (the text
layer's words are painted over first and only the regions of ink left are read), and for screenshot
queries. Blocking calls: run them off the event loop.
"""

from __future__ import annotations

import ctypes
import io
import logging
import sys
import threading
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from ...records import Word

MIN_SCORE = 0.5
INK_LEVEL = 200  # darker than this in some channel is ink; JPEG ringing next to a painted-over word is lighter
CELL = 16  # pixels at ocr_dpi; ink less than a cell apart is one region (a line's words, a drawing's parts)
MIN_CELL_INK = 3  # ink pixels that make a cell count: fewer is JPEG noise, not a glyph stroke
MARGIN = 16  # white around a region, so that the detector sees text at its edge as text
WHOLE_PAGE_SHARE = 0.5  # regions covering more of the page than this are cheaper to read in one pass


M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter
LARGE_BUFFER = 4 << 20


def return_large_buffers_when_freed() -> None:
    """Reading a page takes buffers of hundreds of MB, freed after it. glibc's malloc raises its mmap
    threshold each time such a buffer is freed, so later ones come from its heaps, and those keep the
    memory after free: a process grows by hundreds of MB over a document. A fixed threshold gives every
    buffer of LARGE_BUFFER or more its own mapping, returned to the system when freed. Process-wide;
    call it before the first page is read."""
    if not sys.platform.startswith("linux"):
        return
    try:
        ctypes.CDLL("libc.so.6").mallopt(M_MMAP_THRESHOLD, LARGE_BUFFER)
    except (OSError, AttributeError):  # not glibc (musl): its malloc maps large buffers already
        pass


def _session(model: Path):
    import onnxruntime

    options = onnxruntime.SessionOptions()
    options.log_severity_level = 4
    options.enable_cpu_mem_arena = False  # as rapidocr has it: an arena keeps the largest page's buffers
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return onnxruntime.InferenceSession(str(model), sess_options=options, providers=["CPUExecutionProvider"])


class Ocr:
    def __init__(self):
        self._engine = None
        self._lock = threading.Lock()  # one engine, one image at a time: it already uses both cores

    def _get(self):
        if self._engine is None:
            import rapidocr

            models = Path(rapidocr.__file__).parent / "models"  # shipped in the wheel: nothing is fetched
            det, rec = models / "PP-OCRv6_det_small.onnx", models / "PP-OCRv6_rec_small.onnx"
            # The angle classifier flips upright lines into garbage; pages here are upright.
            params = {"Global.use_cls": False, "Global.log_level": "error", "Det.model_path": str(det)}
            engine = rapidocr.RapidOCR(params={**params, "Rec.model_path": str(rec)})
            logging.getLogger("RapidOCR").setLevel(logging.ERROR)  # "no text detected" is not news
            detector, recognizer = engine._load_det_model(), engine._load_rec_model()
            # rapidocr cannot pass session options. By default onnxruntime's idle threads spin between
            # calls, taking the core that the page embedding runs on while pages are being indexed.
            detector.session.session, recognizer.session.session = _session(det), _session(rec)
            self._detector, self._det_limit = detector, (detector.limit_type, detector.limit_side_len)
            self._engine = engine
        return self._engine

    def lines(
        self, image: Image.Image, native_scale: bool = False
    ) -> list[tuple[str, tuple[float, float, float, float]]]:
        """(text, normalized box) per detected line. The detector enlarges an image whose short side
        is small, which helps a screenshot; a region of a page is read at the page's own scale
        (`native_scale`), or a small region would cost as much as a whole page."""
        rgb = np.asarray(image.convert("RGB"))
        with self._lock:
            engine = self._get()
            # rapidocr (pinned) builds the detector's resizing from these two fields on every call.
            limit = ("max", 4000) if native_scale else self._det_limit
            self._detector.limit_type, self._detector.limit_side_len = limit
            result = engine(rgb)
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

    def page_words(self, image: Image.Image, covered: tuple[Word, ...], first_line: int) -> list[Word]:
        """OCR words for the ink of a page's `image` that its text layer's words (`covered`) do not
        cover; a page without text layer (a scan) is read whole."""
        image = image.convert("RGB")  # a copy: the covered words are painted over
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
        regions = ink_regions(np.asarray(image)) if covered else [(0, 0, image.width, image.height)]  # a scan: whole
        if sum((x1 - x0) * (y1 - y0) for x0, y0, x1, y1 in regions) > WHOLE_PAGE_SHARE * image.width * image.height:
            regions = [(0, 0, image.width, image.height)]
        words: list[Word] = []
        line = first_line
        for region in regions:
            for text, box in self._region_lines(image, region):
                words.extend(split_line(text, box, line))
                line += 1
        return words

    def _region_lines(self, image: Image.Image, region: Box) -> list[tuple[str, tuple[float, float, float, float]]]:
        """The lines of one region of `image`, their boxes normalized to the whole image. The region
        is set on white with a margin, in a size the detector takes without resizing (multiples of 32)."""
        x0, y0, x1, y1 = region
        canvas = Image.new("RGB", (_up32(x1 - x0 + 2 * MARGIN), _up32(y1 - y0 + 2 * MARGIN)), "white")
        canvas.paste(image.crop(region), (MARGIN, MARGIN))

        def at(v: float, canvas_side: int, offset: int, side: int) -> float:
            return min(1.0, max(0.0, (v * canvas_side - MARGIN + offset) / side))

        cw, ch, w, h = canvas.width, canvas.height, image.width, image.height
        return [
            (text, (at(a, cw, x0, w), at(b, ch, y0, h), at(c, cw, x0, w), at(d, ch, y0, h)))
            for text, (a, b, c, d) in self.lines(canvas, native_scale=True)
        ]

    def image_text(self, data: bytes) -> str:
        """The text of a screenshot, line by line."""
        image: Image.Image = Image.open(io.BytesIO(data))
        if max(image.size) < 1000:  # small screenshots read better enlarged
            scale = 1000 / max(image.size)
            image = image.convert("RGB").resize((int(image.width * scale), int(image.height * scale)))
        return "\n".join(drop_stray_glyphs([text for text, _ in self.lines(image)]))


Box = tuple[int, int, int, int]  # pixels: x0, y0, x1, y1


def _up32(n: int) -> int:
    return -(-n // 32) * 32


def ink_regions(rgb: np.ndarray) -> list[Box]:
    """Pixel boxes (x0, y0, x1, y1) around the groups of ink in an image, top to bottom; none for a
    blank one. Ink is gathered in cells of CELL pixels; cells at most two empty cells apart form one
    group."""
    height, width = rgb.shape[:2]
    rows, cols = -(-height // CELL), -(-width // CELL)
    ink = np.zeros((rows * CELL, cols * CELL), dtype=np.uint16)
    # Channel by channel: numpy's min over a last axis of three is an order of magnitude slower.
    darkest = np.minimum(np.minimum(rgb[..., 0], rgb[..., 1]), rgb[..., 2])
    ink[:height, :width] = darkest < INK_LEVEL
    cells = ink.reshape(rows, CELL, cols, CELL).sum(axis=(1, 3)) >= MIN_CELL_INK
    grown = cells.copy()  # each inked cell reaches its eight neighbours, bridging one-cell gaps
    grown[1:] |= cells[:-1]
    grown[:-1] |= cells[1:]
    wide = grown.copy()
    wide[:, 1:] |= grown[:, :-1]
    wide[:, :-1] |= grown[:, 1:]
    seen = np.zeros_like(wide)
    boxes: list[Box] = []
    for r, c in zip(*np.nonzero(wide & cells)):
        if seen[r, c]:
            continue
        seen[r, c] = True
        stack, top, left, bottom, right = [(r, c)], r, c, r, c
        while stack:
            y, x = stack.pop()
            top, left, bottom, right = min(top, y), min(left, x), max(bottom, y), max(right, x)
            for ny, nx in ((y - 1, x), (y + 1, x), (y, x - 1), (y, x + 1)):
                if 0 <= ny < rows and 0 <= nx < cols and wide[ny, nx] and not seen[ny, nx]:
                    seen[ny, nx] = True
                    stack.append((ny, nx))
        boxes.append((left * CELL, top * CELL, min(width, (right + 1) * CELL), min(height, (bottom + 1) * CELL)))
    return sorted(_merge_overlapping(boxes), key=lambda b: (b[1], b[0]))


def _merge_overlapping(boxes: list[Box]) -> list[Box]:
    """Boxes of two groups can overlap (one group wraps around another); read such a pair once."""
    out: list[Box] = []
    for box in boxes:
        while overlapping := [o for o in out if box[0] < o[2] and o[0] < box[2] and box[1] < o[3] and o[1] < box[3]]:
            for o in overlapping:
                out.remove(o)
            x0s, y0s, x1s, y1s = zip(box, *overlapping)
            box = (min(x0s), min(y0s), max(x1s), max(y1s))
        out.append(box)
    return out


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
