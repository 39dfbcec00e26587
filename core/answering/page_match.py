"""Which retrieved page a screenshot was cut from, told by its pixels (OpenCV ORB keypoints).

Retrieval ranks a screenshot by its OCR'd words (and, with Gemini, its embedding); a photo or drawing
whose few words recur on other pages (a board's labels, the product name on a cover) can rank another
page first. The page the screenshot shows shares dozens of keypoints with it that agree on one scale,
rotation and offset (each page keypoint matched once); any other page shares a handful by chance.
Keypoints survive downscaling, JPEG and a slight rotation, and a page is matched in tens of milliseconds,
so only the candidates are tried. The page laid back onto the screenshot by that placement must look like
it too, over the whole screenshot or over the part the agreeing keypoints span (a screenshot shows the cut
inside a viewer's window). A picture printed on two pages (a photo, and again with a circle drawn on it)
matches both; the print whose pixels look most like it is the one it was cut from.
eval/bench_page_match.py counts right, wrong and undecided matches on random cuts of real PDFs.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

CANDIDATES = 8  # pages retrieval returns for a screenshot question, to look for the one it shows
MIN_INLIERS = 8  # keypoints agreeing on one placement whose pixels match too, on the best page
# Fewer keypoints agree when the cut holds little (a few shapes, a short line of text): then the pixels
# laid back must match clearly, over the whole cut.
FEW_INLIERS, CLEAR_PIXELS = 5, 0.7
MAX_SIDE = 1600  # pixels; a larger image is scaled down first (keypoints need no more)
MIN_SIDE = 600  # pixels; a smaller one is enlarged
FEATURES = 3000  # per image: a picture in a corner of a busy page still gets enough of them
RATIO = 0.75  # Lowe's ratio test: a match must be clearly better than the second-best one
SAME_PIXELS = 0.5  # correlation of the query with the page region it is placed on
MIN_SHARE = 0.1  # of the query's pixels: the least span of agreeing keypoints whose pixels alone may match

Box = tuple[int, int, int, int]  # x0, y0, x1, y1 in pixels


def _gray(data: bytes) -> np.ndarray | None:
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_GRAYSCALE)
    if image is None:
        return None
    side = max(image.shape)
    scale = min(max(side, MIN_SIDE), MAX_SIDE) / side  # a small screenshot: keypoints need room around them
    if scale == 1:
        return image
    return cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA if scale < 1 else cv2.INTER_CUBIC)


def _features(orb, data: bytes):
    image = _gray(data)
    points, desc = orb.detectAndCompute(image, None) if image is not None else ((), None)
    return image, points, desc


@dataclass(frozen=True)
class Placement:
    """Where a query image sits on a page, as its keypoints that agree with the page's tell."""

    agreeing: int  # keypoints that agree on one similarity transform (RANSAC)
    transform: np.ndarray  # query pixels -> page pixels
    span: Box  # the query pixels those keypoints span


def placements(query, pages: Sequence) -> list[Placement | None]:
    """For each page, the query image's placement on it, if any. Images come as _features() of their bytes."""
    _, query_points, query_desc = query
    matcher = cv2.BFMatcher(cv2.NORM_HAMMING)
    out: list[Placement | None] = []
    for _, page_points, page_desc in pages:
        if query_desc is None or page_desc is None or len(page_desc) < 2:
            out.append(None)
            continue
        # A page keypoint is matched by the query keypoint nearest to it only: a mark the query repeats (a
        # bullet, a symbol) would otherwise pile its matches on one page point, and a placement that shrinks
        # the whole query onto that point agrees with all of them.
        nearest: dict[int, cv2.DMatch] = {}
        for m, n in (pair for pair in matcher.knnMatch(query_desc, page_desc, k=2) if len(pair) == 2):
            if m.distance < RATIO * n.distance and (
                m.trainIdx not in nearest or m.distance < nearest[m.trainIdx].distance
            ):
                nearest[m.trainIdx] = m
        good = list(nearest.values())
        if len(good) < 4:
            out.append(None)
            continue
        src = np.array([query_points[m.queryIdx].pt for m in good], dtype=np.float32)
        dst = np.array([page_points[m.trainIdx].pt for m in good], dtype=np.float32)
        transform, mask = cv2.estimateAffinePartial2D(src, dst, method=cv2.RANSAC, ransacReprojThreshold=5.0)
        agreeing = int(mask.sum()) if mask is not None else 0
        out.append(Placement(agreeing, transform, _spanned(src[mask.ravel() == 1])) if agreeing else None)
    return out


def _spanned(points: np.ndarray) -> Box:
    x0, y0 = np.floor(points.min(axis=0)).astype(int)
    x1, y1 = np.ceil(points.max(axis=0)).astype(int) + 1
    return int(x0), int(y0), int(x1), int(y1)


def laid_back(query: np.ndarray, page: np.ndarray, placement: Placement) -> np.ndarray:
    """The page's pixels laid back onto the query's as placed."""
    return cv2.warpAffine(
        page,
        cv2.invertAffineTransform(placement.transform),
        (query.shape[1], query.shape[0]),
        flags=cv2.INTER_AREA,
        borderValue=255,
    )


def alike(query: np.ndarray, back: np.ndarray, box: Box | None = None) -> float:
    """The correlation of the query's pixels with the page's laid back onto them, within `box` if given."""
    if box is not None:
        x0, y0, x1, y1 = box
        query, back = query[y0:y1, x0:x1], back[y0:y1, x0:x1]
    a, b = query.astype(np.float32).ravel(), back.astype(np.float32).ravel()
    if a.std() < 1e-3 or b.std() < 1e-3:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


def big_enough(span: Box, query: np.ndarray) -> bool:
    """Whether the part of the query a placement's keypoints span is a good part of it: a band that other pages
    print too (a running header) is a sliver of the query."""
    x0, y0, x1, y1 = span
    return (x1 - x0) * (y1 - y0) >= MIN_SHARE * query.size


def _pixels_agree(query: np.ndarray, back: np.ndarray, placement: Placement, whole: float) -> bool:
    """Whether a placement is evidence of its page: enough agreeing keypoints and a page laid back that looks
    like the query (`whole`: over all of it), or fewer keypoints and a page that looks clearly like it."""
    if placement.agreeing >= MIN_INLIERS:
        if whole >= SAME_PIXELS:
            return True
        return big_enough(placement.span, query) and alike(query, back, placement.span) >= SAME_PIXELS
    return placement.agreeing >= FEW_INLIERS and whole >= CLEAR_PIXELS


def shown_page(queries: Sequence[bytes], pages: Sequence[bytes]) -> int | None:
    """The index of the page one of the query images was cut from, when the pixels say so clearly; else None."""
    if not queries or len(pages) < 2:
        return None
    orb = cv2.ORB.create(nfeatures=FEATURES)
    page_features = [_features(orb, data) for data in pages]
    best: tuple[int, int] | None = None  # (agreeing keypoints, page index)
    for data in queries:
        query = _features(orb, data)
        placed = {i: p for i, p in enumerate(placements(query, page_features)) if p}
        backs = {i: laid_back(query[0], page_features[i][0], p) for i, p in placed.items()}
        # Keypoints of plain line art agree by chance too: the page laid back onto the query must look like
        # it, over the whole query or, where the query shows more than the page (a screenshot shows the cut
        # inside a viewer's window), over the good part of it that the agreeing keypoints span.
        whole = {i: alike(query[0], back) for i, back in backs.items()}
        shown = {i: p for i, p in placed.items() if _pixels_agree(query[0], backs[i], p, whole[i])}
        if not shown:
            continue
        top = max(shown, key=lambda i: shown[i].agreeing)
        if best is not None and shown[top].agreeing <= best[0]:
            continue
        # Another print of the same picture may hold fewer keypoints (they fall elsewhere on its page): of the
        # pages it is placed on, the pixels pick the one that looks most like it, all compared over the same
        # part of the query: the whole of it when it is all page, else what the best placement spans.
        if any(whole[i] >= SAME_PIXELS for i in shown):
            pick = max(shown, key=lambda i: whole[i])
        else:
            pick = max(shown, key=lambda i: alike(query[0], backs[i], shown[top].span))
        best = (shown[top].agreeing, pick)
    return best[1] if best else None
