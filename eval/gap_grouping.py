"""How well coverage gaps (core/chat/gaps.py) group questions: hand-written pairs (eval/gap-pairs.jsonl),
each anchor question with a paraphrase ("same") and with a question about another fact of the same thing
("different": the width, not the height), plus every two anchors of different subjects. The queries are
embedded as a question's are (the local backend's query path; --backend gemini with a key).

    python eval/gap_grouping.py [--backend local] [--threshold 0.92]

The anchors alternate between a tuning half (even) and a judging half (odd): the threshold is chosen on
the tuning half (the best balanced accuracy: paraphrases joined, other facts kept apart) and reported on
both; a threshold is kept only when the judging half agrees.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from core.backends import make_backend  # noqa: E402
from core.chat.gaps import SAME_QUESTION  # noqa: E402
from core.config import Settings  # noqa: E402

PAIRS = ROOT / "eval" / "gap-pairs.jsonl"


async def embeddings(backend, questions: list[str]) -> dict[str, np.ndarray]:
    out = {}
    for question in questions:
        text = backend.query_text(question, [])
        vector = np.asarray(await backend.embed_query(text, []), dtype=np.float32)
        out[question] = vector / np.linalg.norm(vector)
    return out


def figures(pairs: list[dict], vectors: dict[str, np.ndarray], threshold: float) -> dict[str, float]:
    def cos(a: str, b: str) -> float:
        return float(np.dot(vectors[a], vectors[b]))

    same = [cos(p["a"], p["b"]) for p in pairs if p["same"]]
    other_fact = [cos(p["a"], p["b"]) for p in pairs if not p["same"]]
    anchors = list(dict.fromkeys(p["a"] for p in pairs))
    other_subject = [cos(a, b) for a, b in itertools.combinations(anchors, 2)]
    joined = sum(s >= threshold for s in same) / len(same)
    apart = sum(s < threshold for s in other_fact) / len(other_fact)
    return {
        "paraphrases joined": joined,
        "other facts kept apart": apart,
        "other subjects kept apart": sum(s < threshold for s in other_subject) / len(other_subject),
        "balanced": (joined + apart) / 2,
        "cos paraphrase median": float(np.median(same)),
        "cos other fact median": float(np.median(other_fact)),
    }


def halves(pairs: list[dict]) -> tuple[list[dict], list[dict]]:
    anchors = list(dict.fromkeys(p["a"] for p in pairs))
    tuning = {a for i, a in enumerate(anchors) if i % 2 == 0}
    return [p for p in pairs if p["a"] in tuning], [p for p in pairs if p["a"] not in tuning]


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", default="local")
    parser.add_argument("--threshold", type=float, default=SAME_QUESTION, help="the threshold to report")
    args = parser.parse_args()
    pairs = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line.strip()]
    backend = make_backend(Settings(backend=args.backend))
    questions = list(dict.fromkeys(q for p in pairs for q in (p["a"], p["b"])))
    vectors = await embeddings(backend, questions)
    tuning, judging = halves(pairs)
    grid = [round(t, 2) for t in np.arange(0.80, 0.99, 0.01)]
    best = max(grid, key=lambda t: (figures(tuning, vectors, t)["balanced"], -abs(t - args.threshold)))
    print(f"{len(pairs)} pairs, {len(questions)} questions; backend {backend.name}")
    print(f"best threshold on the tuning half: {best}")
    print()
    print("| half | threshold | paraphrases joined | other facts apart | other subjects apart | balanced |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, half in (("tuning", tuning), ("judging", judging)):
        for threshold in sorted({best, args.threshold}):
            f = figures(half, vectors, threshold)
            print(
                f"| {name} | {threshold:.2f} | {f['paraphrases joined']:.2f} | {f['other facts kept apart']:.2f} | "
                f"{f['other subjects kept apart']:.2f} | {f['balanced']:.2f} |"
            )
    f = figures(pairs, vectors, args.threshold)
    print()
    print(f"median cosine: paraphrases {f['cos paraphrase median']:.3f}, other facts {f['cos other fact median']:.3f}")


if __name__ == "__main__":
    asyncio.run(main())
