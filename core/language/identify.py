"""Which language a text is written in, by py3langid's model (n-gram naive Bayes over 97 languages, in
its wheel). Told among all of them, then kept only when it is one the caller can use: told among a few,
a Czech page would be called Polish."""

from __future__ import annotations

import functools
from collections.abc import Sequence

# A page whose likeliest language is below this is mixed (a German manual's English screenshots
# weigh in) or too short to tell: nothing is assumed about it.
CONFIDENT = 0.9


@functools.cache
def _identifier():
    # Imported on first use: the model takes a moment to load, and most questions never ask.
    from py3langid.langid import MODEL_DIR, MODEL_FILE, LanguageIdentifier

    return LanguageIdentifier.from_modelpath(MODEL_DIR / MODEL_FILE, norm_probs=True)


def language_of(text: str, among: Sequence[str], confident: float = CONFIDENT) -> str | None:
    """The ISO 639-1 code of the language `text` is written in, when it is one of `among` and the model is
    confident of it; else None."""
    if not text.strip():
        return None
    language, probability = _identifier().classify(text)
    return language if language in among and probability >= confident else None
