"""The evaluation harness: metrics on hand-made rankings, the answer normalizer, screenshot variants,
and a small end-to-end `pixelrag eval` over generated text PDFs (no OCR-heavy pages)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from PIL import Image

from bot.cli import main
from core import BadInput
from eval.metrics import (
    MISS,
    Result,
    answer_lead,
    citation_precision,
    containment,
    key_tokens,
    mean_scores,
    normalize_answer,
    score_ranking,
    states_fact,
)
from eval.questions import load_document_languages, load_questions
from eval.report import sets_markdown, summarize
from eval.results import BENCHMARKS, BY_HAND, kept_parts
from eval.screenshots import image_variant, render_crop
from tests.conftest import text_pdf

A, B, C, D, E = [("doc.pdf", n) for n in range(1, 6)]


# --- metrics -------------------------------------------------------------------------------------
def test_single_gold_page_first_within_and_reciprocal_rank():
    s = score_ranking([B, A, C, D], [A])
    assert (s.first, s.within_k, s.recall, s.rr) == (0.0, 1.0, 1.0, 0.5)
    s = score_ranking([A, B], [A])
    assert (s.first, s.within_k, s.rr) == (1.0, 1.0, 1.0)


def test_gold_page_beyond_k_is_not_within_but_still_ranks():
    s = score_ranking([B, C, D, E, A], [A], k=4)
    assert s.within_k == 0.0 and s.recall == 0.0 and s.rr == pytest.approx(0.2)


def test_gold_mode_all_needs_every_page_and_recall_is_partial():
    s = score_ranking([A, C, D, E], [A, B], mode="all")
    assert s.first == 1.0 and s.within_k == 0.0 and s.recall == 0.5
    assert score_ranking([B, C, A, E], [A, B], mode="all").within_k == 1.0


def test_gold_mode_any_is_satisfied_by_one_page():
    s = score_ranking([C, B, D, E], [A, B], mode="any")
    assert s.first == 0.0 and s.within_k == 1.0 and s.recall == 1.0 and s.rr == 0.5


def test_errors_and_negatives_score_as_misses():
    assert score_ranking(None, [A]) == MISS
    assert score_ranking([A, B], []) == MISS
    assert score_ranking([], [A]) == MISS


def test_duplicate_pages_in_a_ranking_count_once():
    s = score_ranking([B, B, B, B, A], [A], k=4)
    assert s.within_k == 1.0 and s.rr == 0.5


def test_mean_scores_and_summary_keep_errors_negatives_and_variants_apart():
    rs = [
        Result("q1", "text", "en", "", "?", gold=[list(A)], score=score_ranking([A], [A]).__dict__),
        Result("q2", "table", "de", "", "?", gold=[list(B)], score=MISS.__dict__, error="RemoteError: boom"),
        Result("q3", "negative", "en", "", "?", gold=[], score=MISS.__dict__, states_limitation=True),
        Result("q4", "negative", "pl", "", "?", gold=[], score=MISS.__dict__, states_limitation=False),
        Result("q5", "image", "en", "crop", "?", gold=[list(C)], score=score_ranking([C], [C]).__dict__),
        Result("q5", "image", "en", "half", "?", gold=[list(C)], score=score_ranking([D], [C]).__dict__),
    ]
    summary = summarize(rs, 4, reader=True)
    overall = summary["groups"]["overall"]
    assert overall["n"] == 3 and overall["errors"] == 1
    assert overall["evidence_first"] == pytest.approx(2 / 3)
    assert summary["groups"]["kind:table"]["evidence_within_k"] == 0.0
    assert summary["groups"]["image:crop"]["evidence_first"] == 1.0
    assert summary["groups"]["image:half"]["evidence_first"] == 0.0
    assert summary["negatives"] == {"n": 2, "errors": 0, "limitation_rate": 0.5}
    assert mean_scores([]) == {"n": 0}


def test_questions_in_another_language_than_their_page_are_a_group_of_their_own(tmp_path):
    languages = tmp_path / "corpus.json"
    languages.write_text(json.dumps([{"file": "doc.pdf", "lang": "de"}, {"file": "other.pdf", "lang": "en"}]))
    lang = load_document_languages(languages)
    assert lang == {"doc.pdf": "de", "other.pdf": "en"}
    hit, miss = score_ranking([A], [A]).__dict__, MISS.__dict__
    rs = [
        Result("q1", "text", "de", "", "?", gold=[list(A)], score=hit, page_lang=lang[A[0]]),
        Result("q2", "text", "en", "", "?", gold=[list(A)], score=miss, page_lang=lang[A[0]]),
        Result("q3", "text", "pl", "", "?", gold=[list(A)], score=hit, page_lang=lang[A[0]]),
        Result("q4", "text", "en", "", "?", gold=[list(B)], score=hit),  # its document's language untold
    ]
    groups = summarize(rs, 4, reader=False)["groups"]
    assert groups["page language"]["n"] == 1 and groups["another language"]["n"] == 2
    assert groups["another language"]["evidence_within_k"] == 0.5
    report = {"k": 4, "summary": {"groups": groups, "negatives": {"n": 0, "errors": 0}}}
    assert "0.500 / 0.500 (2) |" in sets_markdown({"s": report})
    (tmp_path / "bad.json").write_text(json.dumps({"doc.pdf": 3}))
    with pytest.raises(BadInput):
        load_document_languages(tmp_path / "bad.json")


# --- answer grading ------------------------------------------------------------------------------
def test_normalizer_lowercases_and_drops_punctuation_and_articles():
    assert normalize_answer("The LCD12864 screen.") == "lcd12864 screen"
    assert normalize_answer("An ECS-160-20-4X-DU oscillator!") == "ecs160204xdu oscillator"
    assert normalize_answer("  „Profil   szumu” – a  the ") == "profil szumu"
    assert key_tokens("The third brake light (3. Bremsleuchte).") == ["third", "brake", "light", "3", "bremsleuchte"]


def test_containment_fraction_and_exact_flag():
    frac, exact = containment("It uses an LCD12864 screen, as printed.", "The LCD12864 screen.")
    assert frac == 1.0 and exact
    frac, exact = containment("6 V minimum", "6 V minimum to 20 V maximum")
    assert 0 < frac < 1 and not exact
    assert containment("anything", "") == (0.0, False)


def test_key_fact_ignores_spacing_and_punctuation_but_not_token_edges():
    assert states_fact("The ATmega328P has **32 KB flash**.", ["32KB Flash"])
    assert states_fact("mindestens 0,8 V", ["0.8V"]) and states_fact("wait for about 10S.", ["10 s"])
    assert states_fact("29 × 18 × 2.5mm", ["29 x 18 x 2.5"]) and states_fact("**1x** 16-bit timer", ["1x 16-bit"])
    assert not states_fact("OUT10 Rückfahrlicht", ["OUT1"]) and not states_fact("PB130", ["PB13"])
    assert states_fact("OUT1 … Standlicht", ["nope", "OUT1"]) and not states_fact("anything", [])


def test_the_lead_is_the_first_lines_after_an_italic_notice():
    answer = "_Local mode: quoted as printed._\n\n1. “32KB Flash” — **UNO**, p. 2\n2. “2KB SRAM”\n3. “1KB EEPROM”"
    assert answer_lead(answer) == "1. “32KB Flash” — **UNO**, p. 2\n2. “2KB SRAM”"
    assert states_fact(answer_lead(answer), ["32KB"]) and not states_fact(answer_lead(answer), ["1KB EEPROM"])


def test_citation_precision_counts_cited_pages_that_are_gold():
    assert citation_precision([A, B], [A]) == 0.5
    assert citation_precision([A, A], [A]) == 1.0
    assert citation_precision([], [A]) is None and citation_precision([A], []) is None


# --- screenshot variants -------------------------------------------------------------------------
@pytest.fixture
def crop_png(tmp_path) -> bytes:
    pdf = text_pdf(tmp_path / "c.pdf", ["Maximum flow rate 42 litres per minute at 3 bar."])
    return render_crop(pdf, 1, [40.0, 40.0, 400.0, 120.0])


def test_crop_is_rendered_at_150_dpi_from_pdf_points(crop_png):
    img = Image.open(io.BytesIO(crop_png))
    assert img.format == "PNG" and abs(img.width - 750) <= 1 and abs(img.height - 167) <= 1  # 360 x 80 pt at 150/72


def test_image_variants_sizes_and_formats(crop_png):
    w, h = Image.open(io.BytesIO(crop_png)).size
    data, mime = image_variant(crop_png, "crop")
    assert data == crop_png and mime == "image/png"
    half = Image.open(io.BytesIO(image_variant(crop_png, "half")[0]))
    assert half.format == "PNG" and half.size == (w // 2, h // 2)
    data, mime = image_variant(crop_png, "jpeg40")
    assert mime == "image/jpeg" and Image.open(io.BytesIO(data)).format == "JPEG"
    rot = Image.open(io.BytesIO(image_variant(crop_png, "rot2")[0]))
    assert rot.width > w and rot.height > h and rot.getpixel((0, 0)) == (255, 255, 255)  # expanded, white corners
    shot = Image.open(io.BytesIO(image_variant(crop_png, "screenshot")[0]))
    assert shot.width >= w + 80 and shot.height >= h + 80 + 28
    assert shot.getpixel((0, 0)) != (255, 255, 255)  # a window border, not page white
    with pytest.raises(ValueError):
        image_variant(crop_png, "sepia")


# --- questions file and end to end ---------------------------------------------------------------
CORPUS = {
    "pump-manual.pdf": [
        "AquaMax P7 pump overview. The AquaMax P7 is a quiet circulation pump for heating systems.",
        "AquaMax P7 technical data. Maximum flow rate 42 litres per minute. Nominal voltage 230 V. "
        "Weight 3.1 kg. Noise level 28 dB.",
        "Installation. Mount the pump with the shaft horizontal. Connect the earth wire first, then the mains.",
    ],
    "valve-datasheet.pdf": [
        "ThermoValve TV9 datasheet. Opening temperature 65 degrees Celsius. Thread size G 3/4.",
        "ThermoValve TV9 maintenance. Descale the valve seat every 12 months with citric acid.",
    ],
}


def write_questions(path: Path) -> Path:
    items = [
        {
            "id": "q1",
            "question": "What is the maximum flow rate of the AquaMax P7 pump?",
            "answer": "42 litres per minute",
            "gold": [{"file": "pump-manual.pdf", "page": 2}],
            "kind": "table",
            "lang": "en",
        },
        {
            "id": "q2",
            "question": "And its weight?",
            "answer": "3.1 kg",
            "gold": [{"file": "pump-manual.pdf", "page": 2}],
            "kind": "table",
            "lang": "en",
            "follow_up_of": "q1",
        },
        {
            "id": "q3",
            "question": "At what temperature does the ThermoValve TV9 open?",
            "answer": "65 degrees Celsius",
            "gold": [{"file": "valve-datasheet.pdf", "page": 1}, {"file": "pump-manual.pdf", "page": 1}],
            "gold_mode": "any",
            "kind": "text",
            "lang": "en",
        },
        {
            "id": "q4",
            "question": "How often must the TV9 valve seat be descaled, and how is the pump mounted?",
            "answer": "every 12 months",
            "gold": [{"file": "valve-datasheet.pdf", "page": 2}, {"file": "pump-manual.pdf", "page": 3}],
            "kind": "procedure",
            "lang": "en",
        },
        {
            "id": "q5",
            "question": "What does the ThermoValve TV9 cost?",
            "answer": "not in documents",
            "gold": [],
            "kind": "negative",
            "lang": "en",
        },
        {
            "id": "q6",
            "question": "  ",
            "answer": "x",
            "gold": [{"file": "pump-manual.pdf", "page": 1}],
            "kind": "text",
            "lang": "de",
        },  # an empty question: the service refuses it, and the error counts as a miss
        {
            "id": "q7",
            "question": "Which product is this?",
            "answer": "ThermoValve TV9",
            "gold": [{"file": "valve-datasheet.pdf", "page": 2}],
            "kind": "image",
            "lang": "en",
            "crop": {"file": "valve-datasheet.pdf", "page": 2, "box": [45, 45, 560, 110]},
        },
    ]
    path.write_text("\n".join(json.dumps(i) for i in items) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def corpus(tmp_path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for name, pages in CORPUS.items():
        text_pdf(folder / name, pages)
    return folder


def test_load_questions_reads_gold_modes_crops_and_follow_ups(tmp_path):
    qs = {q.id: q for q in load_questions(write_questions(tmp_path / "q.jsonl"))}
    assert qs["q1"].gold == (("pump-manual.pdf", 2),) and qs["q1"].gold_mode == "all"
    assert qs["q3"].gold_mode == "any" and qs["q2"].follow_up_of == "q1"
    assert qs["q5"].negative and qs["q7"].crop["page"] == 2
    facts = tmp_path / "facts.json"
    facts.write_text('{"q1": ["2 bar"], "q3": "OUT1"}')
    keyed = {q.id: q for q in load_questions(write_questions(tmp_path / "q.jsonl"), facts)}
    assert keyed["q1"].key_fact == ("2 bar",) and keyed["q3"].key_fact == ("OUT1",) and keyed["q2"].key_fact == ()
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x", "question": "?", "follow_up_of": "nope"}\n')
    with pytest.raises(Exception, match="nope"):
        load_questions(bad)


def test_eval_end_to_end_on_a_tiny_corpus(corpus, tmp_path, capsys):
    questions = write_questions(tmp_path / "q.jsonl")
    out = tmp_path / "report.json"
    index = tmp_path / "index"
    args = [
        "eval",
        str(questions),
        "--corpus",
        str(corpus),
        "--index",
        str(index),
        "--backend",
        "local",
        "--json",
        str(out),
        "--variants",
        "crop,half",
    ]  # two screenshot variants keep the OCR short
    assert main(args) == 0
    table = capsys.readouterr().out
    assert "| overall |" in table and "text-only" in table and "Negatives: 1" in table
    report = json.loads(out.read_text())
    rows = {(r["id"], r["variant"]): r for r in report["questions"]}

    q1 = rows[("q1", "")]
    assert q1["ranked"][0] == {"file": "pump-manual.pdf", "page": 2, "score": q1["ranked"][0]["score"]}
    assert q1["score"]["first"] == 1.0 and q1["contains"] and q1["citation_precision"] == 1.0
    # the follow-up ran as a second turn: its question was resolved with the first turn's subject
    q2 = rows[("q2", "")]
    assert "AquaMax P7" in q2["interpreted"] and q2["score"]["first"] == 1.0
    assert rows[("q3", "")]["score"]["within_k"] == 1.0  # either gold page will do
    assert rows[("q4", "")]["score"]["recall"] in (0.5, 1.0)
    assert rows[("q5", "")]["states_limitation"] is True  # the negative: "no price is stated"
    assert rows[("q6", "")]["error"] and rows[("q6", "")]["score"]["within_k"] == 0.0
    assert {v for (i, v) in rows if i == "q7"} == {"crop", "half"}
    assert rows[("q7", "crop")]["score"]["first"] == 1.0
    # the text-only baseline ran on the same questions
    assert rows[("q1", "")]["baseline_ranked"][0] == ["pump-manual.pdf", 2]

    groups = report["summary"]["groups"]
    assert groups["overall"]["n"] == 6 and groups["overall"]["errors"] == 1
    assert {"kind:table", "kind:image", "lang:en", "lang:de", "image:crop", "image:half"} <= set(groups)
    assert report["summary"]["negatives"]["limitation_rate"] == 1.0
    # RESULTS.md's side-by-side row of this set: the overall figures, the negatives counted, the worst variant
    row = sets_markdown({"tiny": report}).splitlines()[2].split(" | ")
    overall = groups["overall"]
    assert row[1:4] == ["6", f"{overall['evidence_first']:.3f}", f"{overall['evidence_within_k']:.3f}"]
    assert (
        row[8] == "1/1"
        and row[9].rstrip(" |") == f"{min(groups[v]['evidence_first'] for v in ('image:crop', 'image:half')):.3f}"
    )

    # a second run reuses the index instead of rebuilding it
    assert main(args) == 0
    capsys.readouterr()
    assert json.loads(out.read_text())["build"]["indexed"] == 0


async def test_eval_runs_the_gemini_backend_against_the_fake_api(corpus, tmp_path):
    # The harness with --backend gemini: the real google-genai client embeds pages and queries (the
    # screenshot as an image part, not OCR text) and reads through a loopback fake of the API.
    from core.config import Settings
    from eval.harness import evaluate
    from tests.fakes.gemini import EMBED, GENERATE, FakeGemini

    questions = load_questions(write_questions(tmp_path / "q.jsonl"))
    async with FakeGemini() as fake:
        settings = fake.settings(Settings(index_dir=tmp_path / "index"), embedding_dim=128, retry_initial_delay_s=0.01)
        report = await evaluate(questions, corpus, settings, k=4, variants=("crop",))
        assert fake.requests[EMBED] >= 2 and fake.requests[GENERATE] >= 5  # pages, queries, reader calls
        queries = [json.dumps(b.body) for b in fake.bodies if b.endpoint == EMBED and "query:" in json.dumps(b.body)]
        assert any("Which product is this?" in q and "inline_data" in q for q in queries)  # screenshot as image
    rows = {(r["id"], r["variant"]): r for r in report["questions"]}
    assert len(rows[("q1", "")]["ranked"]) == 4 and rows[("q1", "")]["answer"]
    assert rows[("q6", "")]["error"] and report["summary"]["groups"]["overall"]["errors"] == 1
    assert report["summary"]["groups"]["overall"]["n"] == 6 and "image:crop" in report["summary"]["groups"]
    assert rows[("q1", "")]["baseline_ranked"][0] == ["pump-manual.pdf", 2]  # the baseline is backend-free


@pytest.mark.parametrize("name,count", [("holdout", 40), ("unseen", 66), ("fresh", 53)])
def test_the_held_out_question_sets_point_at_real_pages(name, count):
    import pymupdf

    from tests.conftest import corpus_pdf

    questions = load_questions(Path(__file__).resolve().parents[2] / "eval" / f"{name}-questions.jsonl")
    assert len({q.id for q in questions}) == len(questions) == count
    assert all(q.key_fact for q in questions if not q.negative)
    for q in questions:
        pages = list(q.gold) + ([(q.crop["file"], q.crop["page"])] if q.crop else [])
        for name, page in pages:
            with pymupdf.open(corpus_pdf(name)) as doc:
                assert 1 <= page <= doc.page_count, (q.id, name, page)


def test_results_md_keeps_the_benchmarks_and_the_hand_written_part():
    # make results rewrites the generated sections; --evaluations-only keeps the benchmarks as they were, and
    # what was written by hand below its marker survives either way
    text = (
        f"# pixelrag results\n\n## dev\n\n| old |\n\n{BENCHMARKS}\n\n## Indexing\n\n| 3.6 |\n\n{BY_HAND}\n\n"
        "## Tried\n\nnotes\n"
    )
    assert kept_parts(text) == ("## Indexing\n\n| 3.6 |", "## Tried\n\nnotes")
    assert kept_parts("# pixelrag results\n\n## dev\n") == ("", "")
