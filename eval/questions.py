"""Question sets: read a JSONL questions file into `Question` records.

Format (see ../shared/corpora/README.md): one JSON object per line with `id`, `question`, `answer`,
`gold` ([{file, page}], 1-based PDF pages), optional `gold_mode` ("all" by default, or "any"),
`kind`, `lang`, optional `crop` ({file, page, box} in PDF points, top-left origin) for screenshot
queries, optional `follow_up_of` (the id of the first turn of a two-turn exchange) and optional
`key_fact` (the value, code or name the answer must state; a list of accepted alternatives). Key facts
for a set that lives elsewhere (the shared dev set) come from a side file: {id: [alternatives]}.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from core import BadInput

PageRef = tuple[str, int]  # (file name, 1-based page)


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answer: str = ""
    gold: tuple[PageRef, ...] = ()
    gold_mode: str = "all"
    kind: str = "text"
    lang: str = "en"
    crop: dict | None = None
    follow_up_of: str | None = None
    note: str = ""
    key_fact: tuple[str, ...] = ()

    @property
    def negative(self) -> bool:
        return self.kind == "negative" or not self.gold


def _alternatives(value) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value or ())


def load_questions(path: Path | str, key_facts: Path | str | None = None) -> list[Question]:
    extra = json.loads(Path(key_facts).read_text(encoding="utf-8")) if key_facts else {}
    out = []
    for n, raw in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not raw.strip():
            continue
        try:
            item = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise BadInput(f"{path}:{n}: not JSON ({exc.msg}).") from exc
        gold = tuple((g["file"], int(g["page"])) for g in item.get("gold") or ())
        mode = item.get("gold_mode", "all")
        if mode not in ("all", "any"):
            raise BadInput(f"{path}:{n}: gold_mode must be 'all' or 'any', not {mode!r}.")
        out.append(
            Question(
                str(item["id"]),
                item.get("question", ""),
                item.get("answer", ""),
                gold,
                mode,
                item.get("kind", "text"),
                item.get("lang", "en"),
                item.get("crop"),
                item.get("follow_up_of"),
                item.get("note", ""),
                _alternatives(extra.get(str(item["id"]), item.get("key_fact"))),
            )
        )
    ids = {q.id for q in out}
    for q in out:
        if q.follow_up_of and q.follow_up_of not in ids:
            raise BadInput(f"{q.id}: follow_up_of {q.follow_up_of!r} is not in the file.")
    return out


def load_document_languages(path: Path | str) -> dict[str, str]:
    """Each PDF's language (ISO 639-1) by file name, from {file: lang} or from a list of {"file", "lang"}
    entries (eval/broad/corpus.json). Told by people who read the documents: py3langid calls the Polish
    Audacity manual English (its text layer is mostly the program's English menus)."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if isinstance(data, list):
        data = {entry["file"]: entry["lang"] for entry in data}
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise BadInput(f'{path}: expected {{file: language}} or a list of {{"file", "lang"}} entries.')
    return data
