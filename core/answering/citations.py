"""Citations: find a quote among a page's words, then draw page previews and highlight crops.

exact       — the quote was found among the page's text-layer or OCR words; the box is theirs.
approximate — only the reader's estimated region is known; drawn dashed.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import replace

from PIL import Image, ImageDraw

from ..language.tokens import tokens
from ..records import Box, Citation, Highlight, Page, Word


def union_box(words: Sequence[Word]) -> Box:
    """The smallest box around the words."""
    return (
        min(w.box[0] for w in words),
        min(w.box[1] for w in words),
        max(w.box[2] for w in words),
        max(w.box[3] for w in words),
    )


MIN_MATCH = 0.8  # share of the quote's tokens that must be found, in order
PREVIEW_WIDTH = 1100
CROP_MARGIN = 0.06  # context kept around a highlight, as a share of the page
SOLID, DASH = (230, 40, 40), (245, 140, 0)


def locate(quote: str, page: Page) -> Box | None:
    """Box of the word sequence that best matches the quote, or None when it is not on the page."""
    want = tokens(quote)[:40]
    if not want:
        return None
    flat = [(t, i) for i, w in enumerate(page.words) for t in tokens(w.text)]
    best, best_span = 0.0, None
    for start, (tok, _) in enumerate(flat):
        if tok != want[0] and not (len(want) > 1 and tok == want[1]):
            continue
        matched, j, span = 0, start, []
        for token in want:
            # allow a couple of stray tokens between quote words (hyphenation, OCR noise)
            for k in range(j, min(j + 3, len(flat))):
                if flat[k][0] == token:
                    matched += 1
                    span.append(flat[k][1])
                    j = k + 1
                    break
        score = matched / len(want)
        if score > best:
            best, best_span = score, span
            if score == 1.0:
                break
    if best < MIN_MATCH or not best_span:
        return None
    return union_box(page.words[min(best_span) : max(best_span) + 1])


def highlight(quote: str, page: Page, estimated: Box | None) -> Highlight | None:
    box = locate(quote, page)
    if box is not None:
        x0, y0, x1, y1 = box
        rect = (x0 * page.width_pt, y0 * page.height_pt, x1 * page.width_pt, y1 * page.height_pt)
        return Highlight("exact", box, rect)
    if estimated is not None:
        return Highlight("approximate", estimated)
    return None


def _draw_box(draw: ImageDraw.ImageDraw, rect: tuple[float, float, float, float], kind: str, width: int) -> None:
    if kind == "exact":
        draw.rectangle(rect, outline=SOLID, width=width)
        return
    x0, y0, x1, y1 = rect
    dash = width * 4
    for edge in ((x0, y0, x1, y0), (x0, y1, x1, y1), (x0, y0, x0, y1), (x1, y0, x1, y1)):
        ex0, ey0, ex1, ey1 = edge
        length = max(abs(ex1 - ex0), abs(ey1 - ey0))
        steps = int(length // (2 * dash)) + 1
        for s in range(steps):
            a, b = s * 2 * dash / max(length, 1), min(1.0, (s * 2 * dash + dash) / max(length, 1))
            draw.line(
                (ex0 + (ex1 - ex0) * a, ey0 + (ey1 - ey0) * a, ex0 + (ex1 - ex0) * b, ey0 + (ey1 - ey0) * b),
                fill=DASH,
                width=width,
            )


def _pad(box: Box) -> Box:
    x0, y0, x1, y1 = box
    return (x0 - 0.004, y0 - 0.003, x1 + 0.004, y1 + 0.003)


class PageImage:
    """A cited page's image, decoded once and scaled to the preview's width once, however often it is cited:
    scaling the page costs more than all else a citation's images need (BOX: an area average, the fastest
    filter that does not alias small print)."""

    def __init__(self, jpeg: bytes):
        try:
            with Image.open(io.BytesIO(jpeg)) as img:
                self.full = img.convert("RGB")
        except Image.DecompressionBombError as exc:  # a huge page indexed before pages were capped
            raise OSError("the page image is too large to draw; index its document again") from exc
        except (OSError, SyntaxError, ValueError) as exc:  # what PIL raises for a file that is no image
            raise OSError("the stored page image is damaged; `pixelrag reindex` draws it again") from exc
        self._preview: Image.Image | None = None

    @property
    def preview(self) -> Image.Image:
        if self._preview is None:
            w, h = self.full.size
            self._preview = (
                self.full.resize((PREVIEW_WIDTH, max(1, round(h * PREVIEW_WIDTH / w))), Image.Resampling.BOX)
                if w > PREVIEW_WIDTH
                else self.full
            )
        return self._preview


def _mark(image: Image.Image, hl: Highlight, origin: tuple[float, float], scale: tuple[float, float]) -> None:
    """Draw the highlight on `image`, which shows the page from `origin` (normalized) at `scale` px per unit."""
    x0, y0, x1, y1 = _pad(hl.box)
    (ox, oy), (sx, sy) = origin, scale
    rect = ((x0 - ox) * sx, (y0 - oy) * sy, (x1 - ox) * sx, (y1 - oy) * sy)
    _draw_box(ImageDraw.Draw(image), rect, hl.kind, max(2, int(sx) // 400))


def with_images(citation: Citation, page: PageImage) -> Citation:
    """The citation with its images: a page preview (JPEG) and, when there is a highlight, a crop of
    the evidence (PNG). Highlights are drawn on copies: `page` serves the page's other citations."""
    hl = citation.highlight
    preview = page.preview.copy()
    crop_png = None
    if hl is not None:
        _mark(preview, hl, (0.0, 0.0), preview.size)
        w, h = page.full.size
        x0, y0, x1, y1 = hl.box
        # keep some context around the evidence
        cx0, cx1 = max(0.0, x0 - CROP_MARGIN), min(1.0, x1 + CROP_MARGIN)
        cy0, cy1 = max(0.0, y0 - CROP_MARGIN), min(1.0, y1 + CROP_MARGIN)
        crop = page.full.crop(
            (int(cx0 * w), int(cy0 * h), max(int(cx1 * w), int(cx0 * w) + 1), max(int(cy1 * h), int(cy0 * h) + 1))
        )
        _mark(crop, hl, (int(cx0 * w) / w, int(cy0 * h) / h), (w, h))
        crop_png = _encode(crop, "PNG", compress_level=1)  # fast; these are uploaded, not archived
    return replace(citation, preview=_encode(preview, "JPEG", quality=85), crop=crop_png)


def _encode(image: Image.Image, fmt: str, **options) -> bytes:
    buf = io.BytesIO()
    image.save(buf, fmt, **options)
    return buf.getvalue()
