"""The extractive reader of the local backend: it quotes the best-matching passages, it does not compose.

Reading takes three steps, a module each: the printed lines of the retrieved pages become candidate
passages, each with its frame, running headers and footers left out (passages.py); the passages are scored
against the question and the best are chosen, each widened to its sentence (passage_scoring.py,
sentences.py); and what the chosen quotes leave unsaid becomes the answer's limitations (limitations.py).
The answer is the quotes, numbered, each with its document and page: a quoted table row is shown after its
header, and the answer within a quote (a value with its unit, a model code: answer_span.py) is printed in
bold.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ...language.fold import fold
from ...language.tokens import search_terms
from ...language.topics import TOPIC_CUES
from ...markup import literal
from ...records import Draft, DraftCitation, QueryImage, ReaderPage
from .answer_span import in_bold
from .limitations import limitations
from .passage_scoring import Asked, Similarity, choose_quotes, score_passages
from .passages import Passage, candidate_passages, pages_printed_lines

LOCAL_NOTICE = (
    "_Local mode: these are the passages of the retrieved pages that best match the question, quoted as "
    "printed. pixelrag does not compose answers without a Gemini key._"
)


class ExtractiveReader:
    """Lexical coverage shortlists passages; the local dense model, when given, reranks the shortlist,
    so "How long is the warranty?" finds "a warranty of 36 months" rather than a line that repeats words."""

    def __init__(self, similarity: Similarity | None = None):
        self.similarity = similarity

    async def read(
        self, question: str, pages: Sequence[ReaderPage], images: Sequence[QueryImage], guidance: str = ""
    ) -> Draft:
        """The answer quoting the passages of `pages` that best match `question`, with its limitations."""
        # `guidance` (a Jev task's formatting instructions) has no prompt to go into: the quotes stay as they are.
        printed = pages_printed_lines(pages)
        candidates = candidate_passages(pages, printed)
        query = search_terms(question)
        if not candidates or not query:
            return _nothing_to_quote(question)
        asked = Asked.of(question)
        scores = await score_passages(question, query, asked, candidates, pages, self.similarity)
        chosen = choose_quotes(scores, candidates, printed, asked.procedure)
        citations = tuple(DraftCitation(p.page.hit.doc_id, p.page.hit.page, p.text, p.box) for p in chosen)
        markdown = quotes_markdown(question, chosen, asked.quantity)
        return Draft(markdown, citations, limitations(question, pages, chosen, asked), topic_of(question))

    async def read_streaming(
        self,
        question: str,
        pages: Sequence[ReaderPage],
        images: Sequence[QueryImage],
        on_text: Callable[[str], None],
        guidance: str = "",
    ) -> Draft:
        """Quotes are chosen all at once: the text arrives whole when they are."""
        draft = await self.read(question, pages, images)
        on_text(draft.markdown)
        return draft


def _nothing_to_quote(question: str) -> Draft:
    """The answer when the retrieved pages hold no passage, or the question no search term."""
    return Draft(
        LOCAL_NOTICE + "\n\nThe retrieved pages hold no readable text to quote.",
        limitations=("No readable text was found on the retrieved pages.",),
        topic=topic_of(question),
    )


def quotes_markdown(question: str, chosen: Sequence[Passage], quantity: bool) -> str:
    """The answer's Markdown: the local-mode notice, then each quote numbered, with its document and page."""
    lines = [LOCAL_NOTICE, ""]
    for n, p in enumerate(chosen, 1):
        quote = in_bold([w.text for w in p.words], question, quantity)
        lines.append(f"{n}. {_column_names(p)}“{quote}” — **{literal(p.page.hit.title)}**, p. {p.page.hit.page}")
    if not chosen:
        lines.append("Nothing on the retrieved pages matches the question.")
    return "\n".join(lines)


def _column_names(p: Passage) -> str:
    """A quoted table row's header, in italics before it: which value is whose; "" for any other passage."""
    return "_" + literal(p.header.replace("_", " ")) + ":_ " if p.header else ""


def topic_of(question: str) -> str:
    """The topic the question is about (topics.TOPIC_CUES), "other" when it names none."""
    q = fold(question)
    for topic, keys in TOPIC_CUES:
        if any(fold(k) in q for k in keys):
            return topic
    return "other"
