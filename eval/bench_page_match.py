"""How often the pixels tell which page a screenshot was cut from (core/answering/page_match.py), and how long it takes.

Cuts are drawn at random from the PDFs of one folder as the question sets cut them (150 dpi; boxes of 20-90 %
of the page's width and 8-45 % of its height; cuts with no ink left out, as no screenshot shows blank paper),
in each robustness variant of eval/screenshots.py. Each is matched against its own page and up to seven
other pages of the same document, drawn as the index draws them, in random order: the neighbours most alike.
A match is right, wrong (another page first: the worst outcome, it overrides retrieval) or none (retrieval's
order stands). The draws depend on the seed and the file's name only, so two versions of the code see the
same cuts.

    python eval/bench_page_match.py FOLDER [--per-document 5] [--seed 11]
"""

from __future__ import annotations

import argparse
import collections
import io
import random
import sys
import time
from pathlib import Path

import numpy as np
from PIL import Image

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from core import load_settings  # noqa: E402
from core.answering.page_match import CANDIDATES, shown_page  # noqa: E402
from core.indexing.sources import render_page  # noqa: E402
from eval.screenshots import VARIANTS, image_variant, render_crop  # noqa: E402

MIN_INK = 0.01  # share of dark pixels below which a cut is blank paper


def has_ink(png: bytes) -> bool:
    return bool((np.asarray(Image.open(io.BytesIO(png)).convert("L")) < 128).mean() >= MIN_INK)


def main() -> None:
    import pymupdf

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path)
    ap.add_argument("--per-document", type=int, default=5, help="cuts drawn from each PDF")
    ap.add_argument("--seed", type=int, default=11)
    args = ap.parse_args()
    settings = load_settings()
    outcomes: collections.Counter = collections.Counter()
    seconds, blank = [], 0
    for pdf in sorted(args.folder.glob("*.pdf")):
        rng = random.Random(f"{args.seed}:{pdf.name}")
        with pymupdf.open(pdf) as doc:
            if doc.page_count < 2:
                continue
            drawn: dict[int, bytes] = {}
            for _ in range(args.per_document):
                page = rng.randrange(doc.page_count)
                rect = doc[page].rect
                w, h = rng.uniform(0.2, 0.9) * rect.width, rng.uniform(0.08, 0.45) * rect.height
                x0, y0 = rng.uniform(0, rect.width - w), rng.uniform(0, rect.height - h)
                png = render_crop(pdf, page + 1, (x0, y0, x0 + w, y0 + h))
                if not has_ink(png):
                    blank += 1
                    continue
                others = [i for i in range(doc.page_count) if i != page]
                order = rng.sample(others, min(CANDIDATES - 1, len(others))) + [page]
                rng.shuffle(order)
                for i in order:
                    if i not in drawn:
                        drawn[i] = render_page(doc, i, "bench", settings).jpeg
                for variant in VARIANTS:
                    data, _ = image_variant(png, variant)
                    t0 = time.perf_counter()
                    found = shown_page([data], [drawn[i] for i in order])
                    seconds.append(time.perf_counter() - t0)
                    outcome = "none" if found is None else "right" if order[found] == page else "wrong"
                    outcomes[(variant, outcome)] += 1
    print("| variant | right | none | wrong |\n|---|---|---|---|")
    for variant in VARIANTS:
        print(f"| {variant} | " + " | ".join(str(outcomes[(variant, o)]) for o in ("right", "none", "wrong")) + " |")
    print(
        f"\n{len(seconds)} matches against {CANDIDATES} pages, p50 {1000 * np.median(seconds):.0f} ms; "
        f"{blank} blank cuts left out"
    )


if __name__ == "__main__":
    main()
