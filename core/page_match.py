"""Which retrieved page a screenshot was cut from, told by its pixels (OpenCV ORB keypoints).

Retrieval ranks a screenshot by its OCR'd words (and, with Gemini, its embedding); a photo or drawing
whose few words recur on other pages (a board's labels, the product name on a cover) can rank another
page first. The page the screenshot shows shares dozens of keypoints with it that agree on one scale,
rotation and offset; any other page shares a handful by chance. Keypoints survive downscaling, JPEG
and a slight rotation, and a page is matched in tens of milliseconds, so only the candidates are tried.
A picture printed on two pages (a photo, and again with a circle drawn on it) matches both; the print
whose pixels, laid back onto the screenshot, look most like it is the one it was cut from.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

CANDIDATES = 8  # pages retrieval returns for a screenshot question, to look for the one it shows
MIN_INLIERS = 8  # keypoints agreeing on one placement whose pixels match too, on the best page
MAX_SIDE = 1600  # pixels; a larger image is scaled down first (keypoints need no more)
FEATURES = 3000  # per image: a picture in a corner of a busy page still gets enough of them
RATIO = 0.75  # Lowe's ratio test: a match must be clearly better than the second-best one
SAME_PIXELS = 0.5  # correlation of the query with the page region it is placed on


def _gray(data: bytes) -> np.ndarray | None:
    image = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_GRAYSCALE)
    if image is None:
        return None
    scale = MAX_SIDE / max(image.shape)
    return cv2.resize(image, None, fx=scale, fy=scale, interpolation=cv2.INTER_AREA) if scale < 1 else image


def _features(orb, data: bytes):
    image = _gray(data)
    points, desc = orb.detectAndCompute(image, None) if image is not None else ((), None)
    return image, points, desc


def agreeing_keypoints(query, pages: Sequence) -> list[tuple[int, float]]:
    """For each page, how many of the query image's keypoints match it under one similarity transform
    (RANSAC) whose pixels match too, and how well those pixels match (their correlation): the evidence
    that the query was cut from that page. Images come as _features() of their bytes."""
    query_image, query_points, query_desc = query
    matcher = cv2.BFMatcher(cv2.NORM_HAMMING)
    out = []
    for page_image, page_points, page_desc in pages:
        if query_desc is None or page_desc is None or len(page_desc) < 2:
            out.append((0, 0.0))
            continue
        good = [
            m
            for m, n in (pair for pair in matcher.knnMatch(query_desc, page_desc, k=2) if len(pair) == 2)
            if m.distance < RATIO * n.distance
        ]
        if len(good) < 4:
            out.append((0, 0.0))
            continue
        src = np.array([query_points[m.queryIdx].pt for m in good], dtype=np.float32)
        dst = np.array([page_points[m.trainIdx].pt for m in good], dtype=np.float32)
        transform, mask = cv2.estimateAffinePartial2D(src, dst, method=cv2.RANSAC, ransacReprojThreshold=5.0)
        agreeing = int(mask.sum()) if mask is not None else 0
        # Keypoints of plain line art agree by chance too: the page, laid back onto the query by that
        # placement, must also look like it, pixel for pixel.
        alike = _likeness(query_image, page_image, transform) if agreeing else 0.0
        out.append((agreeing, alike) if alike >= SAME_PIXELS else (0, 0.0))
    return out


def _likeness(query: np.ndarray, page: np.ndarray, transform: np.ndarray) -> float:
    """The correlation of the query's pixels with the page's, laid back onto the query by `transform`."""
    back = cv2.warpAffine(
        page,
        cv2.invertAffineTransform(transform),
        (query.shape[1], query.shape[0]),
        flags=cv2.INTER_AREA,
        borderValue=255,
    )
    a, b = query.astype(np.float32).ravel(), back.astype(np.float32).ravel()
    if a.std() < 1e-3 or b.std() < 1e-3:
        return 0.0
    return float(np.corrcoef(a, b)[0, 1])


def shown_page(queries: Sequence[bytes], pages: Sequence[bytes]) -> int | None:
    """The index of the page one of the query images was cut from, when the pixels say so clearly; else None."""
    if not queries or len(pages) < 2:
        return None
    orb = cv2.ORB.create(nfeatures=FEATURES)
    page_features = [_features(orb, data) for data in pages]
    evidence = np.max([agreeing_keypoints(_features(orb, q), page_features) for q in queries], axis=0)
    scores, alike = evidence[:, 0], evidence[:, 1]
    if scores.max() < MIN_INLIERS:
        return None
    # Another print of the same picture may hold fewer keypoints (they fall elsewhere on its page): of the
    # pages it is placed on, the pixels pick the one that looks most like it.
    return max((i for i in range(len(pages)) if scores[i] > 0), key=lambda i: alike[i])
