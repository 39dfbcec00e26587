"""The terminal's view of core's records, shared by `pixelrag` commands and `pixelrag chat`:
answers, index reports and progress printed for a person, citation images written to files."""

from __future__ import annotations

import json
import re
import sys
from dataclasses import asdict, replace
from pathlib import Path

from core import Answer, IndexReport, PixelragError, Progress, QueryImage

from .progress import pace


class ProgressBar:
    """One line on the terminal, redrawn in place; quiet when stderr is not a terminal."""

    def __init__(self, stream=sys.stderr):
        self.stream = stream
        self.tty = stream.isatty()
        self.last = ""

    def __call__(self, p: Progress) -> None:
        if p.stage == "wait":
            line = f"waiting for another build of this index to finish ({p.document})…"
        elif p.stage == "publish":
            line = "publishing snapshot…" if p.done == 0 else "published"
        else:
            width = 30
            filled = int(width * p.done / max(p.total, 1))
            verb = {"read": "reading", "embed": "embedded"}.get(p.stage, p.stage)
            bar = f"[{'#' * filled}{'.' * (width - filled)}]"
            line = f"{p.document[:40]:40} {bar} {verb} {p.done}/{p.total} pages{pace(p)}"
        if line == self.last:
            return
        self.last = line
        if self.tty:
            self.stream.write("\r\033[K" + line)
            if p.stage == "publish" and p.done:
                self.stream.write("\n")
        elif p.done in (0, p.total) or p.stage in ("publish", "wait"):
            self.stream.write(line + "\n")
        self.stream.flush()


def print_report(report: IndexReport, as_json: bool) -> None:
    if as_json:
        print(json.dumps(asdict(report), indent=2, ensure_ascii=False))
        return
    lines = [f"indexed: {doc.title} ({doc.page_count} pages, id {doc.doc_id})" for doc in report.documents]
    lines += [f"up to date: {doc.title} (unchanged since it was indexed)" for doc in report.unchanged]
    lines += [f"skipped: {message}" for message in report.skipped]
    lines += [f"warning: {message}" for message in report.warnings]
    if report.documents or report.warnings:
        lines.append(
            f"snapshot {report.snapshot}: {report.pages_total} pages in the index; "
            f"{report.pages_embedded} embedded now, {report.pages_reused} reused unchanged"
        )
    else:
        lines.append(f"nothing to do: the index ({report.pages_total} pages) is up to date")
    print(printable("\n".join(lines)))


def exit_code(report: IndexReport) -> int:
    """0 when everything asked for is indexed or up to date; 1 when some inputs were refused."""
    return 1 if report.skipped else 0


def print_answer(answer: Answer) -> None:
    lines = []
    if answer.topic_label:
        lines.append(f"Topic: {answer.topic_label}\n")
    if answer.changed_question:
        lines.append(f"Interpreted as: {answer.interpreted_question}\n")
    lines.append(answer.markdown or "(retrieval only)")
    if answer.hits:
        lines.append("\nRetrieved pages:")
        lines += [f"  {n}. {hit.title}, p. {hit.page}  (score {hit.score:.4f})" for n, hit in enumerate(answer.hits, 1)]
    if answer.citations:
        lines.append("\nCitations:")
        for c in answer.citations:
            kind = c.highlight.kind if c.highlight else "page only"
            lines.append(f"  - {c.label} [{kind}]: “{c.quote[:160]}”")
            if c.preview_path:
                lines.append(f"      preview:   {c.preview_path}")
            if c.crop_path:
                lines.append(f"      highlight: {c.crop_path}")
            if c.url:
                lines.append(f"      open:      {c.url}")
    lines += [f"\nLimitation: {text}" for text in answer.limitations]
    lines += [f"\nNote: {text}" for text in answer.notes]
    print(printable("\n".join(lines)))


def save_images(answer: Answer, out_dir: Path) -> Answer:
    """Write each citation's images to `out_dir`; the answer with their paths (printed, and in --json). A
    folder that cannot be written is said on stderr, and the answer is shown without them."""
    try:
        return _save_images(answer, out_dir)
    except OSError as exc:
        print(
            f"pixelrag: the page images were not written to {out_dir} ({exc.strerror or exc}); "
            "give --out a folder that can be written.",
            file=sys.stderr,
        )
        return answer


def _save_images(answer: Answer, out_dir: Path) -> Answer:
    out_dir.mkdir(parents=True, exist_ok=True)
    saved = []
    for n, c in enumerate(answer.citations, 1):
        stem = f"{n:02d}-{slug(c.title)}-p{c.page}"
        preview_path = crop_path = None
        if c.preview is not None:
            preview_path = out_dir / f"{stem}-page.jpg"
            preview_path.write_bytes(c.preview)
        if c.crop is not None:
            crop_path = out_dir / f"{stem}-highlight.png"
            crop_path.write_bytes(c.crop)
        saved.append(
            replace(
                c,
                preview_path=str(preview_path) if preview_path else None,
                crop_path=str(crop_path) if crop_path else None,
            )
        )
    return replace(answer, citations=tuple(saved))


def slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")[:40] or "document"


def read_image(path: str | Path) -> QueryImage:
    p = Path(path).expanduser()
    try:
        if p.is_dir():
            raise PixelragError(f"{path}: a folder, not an image file.")
        if not p.is_file():
            raise PixelragError(f"{path}: no such image file.")
        return QueryImage(p.read_bytes(), "", p.name)
    except OSError as exc:
        raise PixelragError(f"{path}: {exc.strerror or exc}.") from None


def printable(text: str) -> str:
    """Text for the terminal: a control character (a title's escape sequence, say) is shown as its
    escape, never acted on by the terminal; lines and tabs stay."""
    return "".join(c if c.isprintable() or c in "\n\t" else c.encode("unicode_escape").decode() for c in text)
