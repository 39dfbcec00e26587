"""The TypeSafe Jev page selector (issue 13) through the real typesafe-sdk client against the loopback
fake (tests/fakes/typesafe.py): off by default, one bounded request, stable selection, every fallback,
the topic label in Slack and Discord, reader instructions, and `pixelrag eval --compare-jev`."""

from __future__ import annotations

import asyncio
import io
import json
import shutil
from pathlib import Path

import httpx
import pytest
from PIL import Image

from bot.cli import _settings, build_parser, main
from bot.discord.render import TOPIC_COLOURS
from bot.discord.render import render_answer as discord_render
from bot.slack.render import render_answer as slack_render
from core.config import Settings, load_settings
from core.errors import BadInput
from core.jev.decisions import CONFIDENT, confident_choice, guidance, select
from core.jev.thumbnails import MAX_SIDE, MIN_SIDE, thumbnail
from core.records import QueryImage, Turn
from core.service import Service
from tests.conftest import text_pdf
from tests.fakes.typesafe import API_KEY, IMAGES_HEADER, FakeTypeSafe, Hang

PAGES = [
    "HydroFlow HF-300 overview: a compact circulation pump for heating circuits.",
    "HydroFlow HF-300 warranty: the pump is covered for 36 months from the date of purchase.",
    "HydroFlow HF-300 installation: mount the pump, connect the pipes, fill the circuit, vent the air.",
    "HydroFlow HF-300 technical data: maximum system pressure 10 bar, power 45 W.",
    "HydroFlow HF-300 service: clean the impeller of the pump once a year.",
    "HydroFlow HF-300 prices: the pump costs 249 EUR including VAT.",
    "HydroFlow HF-300 complaints: report a defective pump to your dealer with the receipt.",
    "HydroFlow HF-300 compared with the HF-500: power and pressure of each pump.",
    "HydroFlow HF-300 accessories: insulation shell and union nuts for the pump.",
    "HydroFlow HF-300 disposal: recycle the electrical parts of the pump separately.",
]
QUESTION = "HydroFlow HF-300 pump"
TITLE = "catalog"


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("jev-corpus")
    text_pdf(folder / "catalog.pdf", PAGES, title=TITLE)
    return folder


@pytest.fixture(scope="module")
def built_index(tmp_path_factory, corpus) -> Path:
    index_dir = tmp_path_factory.mktemp("jev-index")
    asyncio.run(Service(Settings(index_dir=index_dir, backend="local")).index([str(corpus / "catalog.pdf")]))
    return index_dir


@pytest.fixture
def base(tmp_path, built_index) -> Settings:
    shutil.copytree(built_index, tmp_path / "index")
    return Settings(index_dir=tmp_path / "index", backend="local")


@pytest.fixture
async def fake():
    async with FakeTypeSafe() as f:
        yield f


def pages_of(answer) -> list[int]:
    return [h.page for h in answer.hits]


async def dense_top(base: Settings, question: str = QUESTION) -> list[int]:
    return pages_of(await Service(base).answer(Turn(question), retrieve_only=True))


# --- opt-in ----------------------------------------------------------------------------------------
async def test_off_by_default_no_request_even_with_a_key(base, fake, tmp_path):
    settings = load_settings({"TYPESAFE_API_KEY": API_KEY, "TYPESAFE_BASE_URL": fake.url}, dotenv=None)
    assert settings.jev == "off" and settings.typesafe_api_key == API_KEY
    answer = await Service(base.with_(typesafe_api_key=API_KEY, typesafe_base_url=fake.url)).answer(Turn(QUESTION))
    assert fake.attempts == 0 and answer.selector is None and len(answer.hits) == 4
    assert answer.topic_label is None and "selector" in answer.to_json() and answer.to_json()["selector"] is None


def test_settings_environment_dotenv_model_and_a_bad_value(tmp_path):
    assert load_settings({}, dotenv=None).typesafe_model == "jev-1.14.0"  # pinned, not jev-latest
    assert load_settings({"PIXELRAG_JEV": "rerank"}, dotenv=None).jev == "rerank"
    dotenv = tmp_path / ".env"
    dotenv.write_text("PIXELRAG_JEV=rerank\nTYPESAFE_MODEL=jev-latest\n")
    from_file = load_settings({}, dotenv=dotenv)
    assert from_file.jev == "rerank" and from_file.typesafe_model == "jev-latest"
    with pytest.raises(BadInput, match=r"^PIXELRAG_JEV='yes please' is not a mode; use rerank"):
        load_settings({"PIXELRAG_JEV": "yes please"}, dotenv=None)


def test_cli_flags_turn_it_on_and_off_over_the_setting(monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)  # no stray .env
    parser = build_parser()
    monkeypatch.delenv("PIXELRAG_JEV", raising=False)
    assert _settings(parser.parse_args(["ask", "q"])).jev == "off"
    for command in (["ask", "q"], ["slack"], ["discord"], ["eval", "q.jsonl", "--corpus", "."]):
        assert _settings(parser.parse_args(command + ["--jev"])).jev == "rerank"
    monkeypatch.setenv("PIXELRAG_JEV", "rerank")
    assert _settings(parser.parse_args(["discord"])).jev == "rerank"
    assert _settings(parser.parse_args(["slack", "--no-jev"])).jev == "off"


# --- the request -----------------------------------------------------------------------------------
async def test_one_request_eight_image_questions_and_the_two_choices(base, fake):
    dense = await dense_top(base)
    answer = await Service(fake.settings(base)).answer(Turn(QUESTION))
    assert fake.attempts == 1 and len(fake.received) == 1
    got = fake.received[0]
    assert got.headers[IMAGES_HEADER] == "true" and got.headers["Authorization"] == f"Bearer {API_KEY}"
    assert got.body["model"] == "jev-1.14.0" and answer.selector.model == "jev-1.14.0"
    assert got.body["state"] == {"question": QUESTION} and got.state_images == []  # shared: the text only
    questions = got.body["questions"]
    nouls = [f"page_{n}" for n in range(1, 9)]
    assert list(questions) == nouls + ["topic", "task"]
    assert all(questions[n]["type"] == "noul" and len(got.question_images[n]) == 1 for n in nouls)
    assert questions["topic"]["type"] == "choice" and questions["task"]["type"] == "choice"
    assert list(questions["topic"]["criteria"]) == [
        "warranty",
        "complaint",
        "service",
        "instructions",
        "price",
        "other",
    ]
    assert list(questions["task"]["criteria"]) == ["explain", "find_document", "procedure", "compare", "other"]
    assert got.question_images["topic"] == got.question_images["task"] == []
    # each candidate's own page, in the dense order, as a baseline JPEG within 1024 px
    candidates = answer.selector.candidates
    assert [c.dense_rank for c in candidates] == list(range(1, 9)) and [c.page for c in candidates][:4] == dense
    assert [questions[n]["instructions"]["page_number"] for n in nouls] == [c.page for c in candidates]
    assert len({bytes(got.question_images[n][0]) for n in nouls}) == 8
    for n in nouls:
        img = Image.open(io.BytesIO(got.question_images[n][0]))
        assert img.format == "JPEG" and not img.info.get("progressive") and max(img.size) <= MAX_SIDE
    # equal probabilities: the dense order stands
    assert answer.selector.selected and pages_of(answer) == dense


async def test_a_screenshot_is_shared_state_not_a_page_question(base, fake):
    shot = io.BytesIO()
    Image.new("RGB", (40, 30), "white").save(shot, "PNG")  # smaller than Jev's minimum: padded
    await Service(fake.settings(base)).answer(
        Turn(QUESTION, (QueryImage(shot.getvalue(), "image/png"),)), retrieve_only=True
    )
    got = fake.received[0]
    assert len(got.state_images) == 1 and all(len(got.question_images[f"page_{n}"]) == 1 for n in range(1, 9))
    assert min(Image.open(io.BytesIO(got.state_images[0])).size) >= MIN_SIDE


def test_thumbnails_are_capped_and_padded():
    big, small = io.BytesIO(), io.BytesIO()
    Image.new("RGB", (3000, 1500)).save(big, "PNG")
    Image.new("RGB", (500, 10)).save(small, "PNG")
    assert Image.open(io.BytesIO(thumbnail(big.getvalue()))).size == (1024, 512)
    assert Image.open(io.BytesIO(thumbnail(small.getvalue()))).size == (500, MIN_SIDE)


# --- selection -------------------------------------------------------------------------------------
def test_selection_is_stable_probability_then_dense_rank():
    assert select([0.2, 0.9, 0.5, 0.9, 0.1, 0.5, 0.5, 0.0], 4) == [1, 3, 2, 5]
    assert select([0.5] * 8, 4) == [0, 1, 2, 3]
    assert all(select([0.3, 0.7, 0.7, 0.3], 2) == [1, 2] for _ in range(20))


def test_choices_count_only_when_confident_and_well_formed():
    labels = ("warranty", "other")
    assert confident_choice({"type": "choice", "choice": "warranty", "confidence": CONFIDENT}, labels) == (
        "warranty",
        0.65,
    )
    assert confident_choice({"type": "choice", "choice": "warranty", "confidence": 0.64}, labels) == (None, 0.64)
    assert confident_choice({"type": "choice", "choice": "recipes", "confidence": 0.9}, labels) == (None, None)
    assert confident_choice({"type": "choice", "choice": "warranty", "confidence": "high"}, labels) == (None, None)
    assert confident_choice(None, labels) == (None, None)
    assert "numbered steps" in guidance("procedure") and guidance("explain") == guidance(None) == ""


async def test_jev_picks_the_four_most_relevant_candidates(base, fake):
    dense = await dense_top(base)
    fake.default_score = 0.1
    answer = await Service(fake.settings(base)).answer(Turn(QUESTION), retrieve_only=True)
    candidates = [c.page for c in answer.selector.candidates]
    wanted = [candidates[7], candidates[5], candidates[6], candidates[0]]
    fake.scores = {(TITLE, wanted[0]): 0.95, (TITLE, wanted[1]): 0.8, (TITLE, wanted[2]): 0.8}
    again = await Service(fake.settings(base)).answer(Turn(QUESTION), retrieve_only=True)
    assert [c.page for c in again.selector.candidates] == candidates  # the same 8 candidates
    assert pages_of(again) == wanted and pages_of(again) != dense  # ties (0.8, 0.1) in the dense order
    assert again.selector.candidates[7].probability == 0.95


# --- never worse than off --------------------------------------------------------------------------
async def fell_back(settings: Settings, expected: list[int], reason: str):
    answer = await Service(settings).answer(Turn(QUESTION))
    assert not answer.selector.selected and reason in answer.selector.fallback
    assert pages_of(answer) == expected and answer.markdown  # the dense ranking, answered as usual
    assert any("fell back to the dense ranking" in n and reason in n for n in answer.notes)
    assert answer.to_json()["selector"]["fallback"] == answer.selector.fallback
    return answer


async def test_timeout_falls_back(base, fake):
    fake.script(Hang())
    await fell_back(fake.settings(base, jev_timeout_s=0.5), await dense_top(base), "did not answer")


async def test_persisting_429_is_retried_then_falls_back(base, fake):
    fake.fail_always = 429
    await fell_back(fake.settings(base), await dense_top(base), "429")
    assert fake.attempts == 3  # the first try and two retries, honouring retry-after-ms


async def test_5xx_is_retried_and_a_recovery_is_used(base, fake):
    fake.script(503)
    answer = await Service(fake.settings(base)).answer(Turn(QUESTION), retrieve_only=True)
    assert answer.selector.selected and fake.attempts == 2
    fake.fail_always, fake.attempts = 500, 0
    await fell_back(fake.settings(base), await dense_top(base), "500")
    assert fake.attempts == 3


async def test_missing_key_falls_back_without_a_request(base, fake):
    await fell_back(fake.settings(base, typesafe_api_key=None), await dense_top(base), "TYPESAFE_API_KEY is not set")
    assert fake.attempts == 0


async def test_a_wrong_key_falls_back(base, fake):
    await fell_back(fake.settings(base, typesafe_api_key="nope"), await dense_top(base), "401")


async def test_a_malformed_page_decision_falls_back_but_keeps_a_valid_topic(base, fake):
    fake.choices["topic"] = ("price", 0.9)

    def mangle(answers):
        answers["page_3"] = {"type": "noul", "noul": 1.7}
        del answers["page_5"]
        return answers

    fake.mangle = mangle
    answer = await fell_back(fake.settings(base), await dense_top(base), "candidate(s) 3, 5")
    assert answer.topic_label == "price"


async def test_a_malformed_response_falls_back(base, fake):
    fake.mangle = lambda answers: ["not", "an", "object"]
    await fell_back(fake.settings(base), await dense_top(base), "malformed response")


async def test_bad_topic_or_task_leaves_the_answer_unlabelled_and_keeps_the_page_scores(base, fake):
    fake.default_score = 0.2
    fake.scores = {(TITLE, 10): 0.9}
    fake.mangle = lambda a: {
        **a,
        "topic": {"type": "choice", "choice": "recipes", "confidence": 0.99},
        "task": {"type": "choice", "choice": "procedure", "confidence": 0.5},
    }
    answer = await Service(fake.settings(base)).answer(Turn(QUESTION))
    assert answer.selector.selected and answer.hits[0].page == 10
    assert answer.topic_label is None and answer.selector.task is None and answer.selector.task_confidence == 0.5
    assert not any(
        "Topic" in b.get("elements", [{}])[0].get("text", "")
        for b in slack_render(answer)[0]["blocks"]
        if b["type"] == "context"
    )


# --- topic and task --------------------------------------------------------------------------------
async def test_a_confident_topic_labels_and_tints_even_an_unanswered_question(base, fake):
    fake.choices["topic"] = ("warranty", 0.9)
    answer = await Service(fake.settings(base)).answer(Turn("Does the flux capacitor carry a guarantee?"))
    assert answer.topic == answer.topic_label == "warranty" and answer.selector.topic_confidence == 0.9
    assert answer.to_json()["selector"]["topic"] == "warranty"
    slack = slack_render(answer)[0]["blocks"]
    assert slack[0] == {
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": ":large_blue_circle: Topic: *warranty*"}],
    }
    messages = discord_render(answer)
    assert messages[0].content.startswith("-# 🏷️ Topic: **warranty**")
    embeds = [e for m in messages for e in m.embeds]
    assert embeds and all(e.colour == TOPIC_COLOURS["warranty"] for e in embeds)


async def test_a_confident_task_gives_the_reader_its_instructions(base, fake):
    fake.choices["task"] = ("procedure", 0.8)
    service = Service(fake.settings(base))
    seen = []
    backend = service.backend
    original = backend.read

    async def read(question, query_text, pages, images, guidance="", on_text=None):
        seen.append((len(pages), guidance))
        return await original(question, query_text, pages, images, guidance, on_text)

    backend.read = read
    answer = await service.answer(Turn("How do I install the HF-300 pump?"))
    assert answer.selector.task == "procedure" and seen == [(4, guidance("procedure"))]
    fake.choices["task"] = ("procedure", 0.6)
    await service.answer(Turn("How do I install the HF-300 pump?"))
    assert seen[-1] == (4, "")


async def test_the_gemini_reader_puts_the_instructions_in_its_prompt():
    from core.backends.gemini.calls import GeminiCalls
    from core.backends.gemini.reader import GeminiReader
    from tests.fakes.gemini import FakeGemini

    async with FakeGemini() as gemini:
        reader = GeminiReader(GeminiCalls(gemini.settings()))
        await reader.read("Compare the HF-300 and the HF-500", [], (), guidance("compare"))
        await reader.read("What is the HF-300?", [], ())
        prompts = [json.dumps(b) for b in gemini.generate_bodies()]
    assert "dimensions the question names" in prompts[0] and "dimensions the question names" not in prompts[1]


# --- the fake is as strict as the service ----------------------------------------------------------
async def test_the_fake_refuses_what_the_service_refuses(fake):
    import typesafe_sdk as ts

    jpeg = io.BytesIO()
    Image.new("RGB", (80, 80)).save(jpeg, "JPEG")
    tiny = io.BytesIO()
    Image.new("RGB", (8, 8)).save(tiny, "JPEG")

    picture = jpeg.getvalue()

    async def ask(key=API_KEY, model="jev-1.14.0", image=picture, header=True):
        async with ts.AsyncTypeSafeClient(api_key=key, base_url=fake.url, retry=ts.RetryPolicy(max_retries=0)) as c:
            return await c.system_one(
                {"q": "x"},
                {"p": ts.Noul(instructions={"t": "?", "i": ts.Image(image)})},
                model=model,
                extra_headers={IMAGES_HEADER: "true"} if header else None,
            )

    assert (await ask()).nouls["p"].noul == 0.5
    with pytest.raises(ts.TypeSafeAuthenticationError):
        await ask(key="wrong")
    with pytest.raises(ts.TypeSafeBadRequestError, match=IMAGES_HEADER):
        await ask(header=False)
    with pytest.raises(ts.TypeSafeNotFoundError, match="Unknown model"):
        await ask(model="jev-9")
    with pytest.raises(ts.TypeSafeUnprocessableEntityError, match="at least 64 px"):
        await ask(image=tiny.getvalue())
    # shapes the SDK itself would not send, posted raw
    headers = {"Authorization": f"Bearer {API_KEY}", IMAGES_HEADER: "true"}
    async with httpx.AsyncClient(base_url=fake.url) as raw:
        ref = "<image:" + "ab" * 16 + ">"
        for body, words in (
            ({"model": "jev-1.14.0", "state": "x", "questions": {}}, "at least 1 item"),
            ({"model": "jev-1.14.0", "state": "x", "questions": {"c": {"type": "choice", "criteria": {}}}}, "criteria"),
            ({"model": "jev-1.14.0", "state": "x", "questions": {"n": {"type": "noul"}}}, "instructions"),
            ({"model": "jev-1.14.0", "questions": {"n": {"type": "noul", "instructions": "?"}}}, "Field required"),
            (
                {"model": "jev-1.14.0", "state": ref, "questions": {"n": {"type": "noul", "instructions": "?"}}},
                "referenced but not among the assets",
            ),
            (
                {
                    "model": "jev-1.14.0",
                    "state": ref,
                    "questions": {"n": {"type": "noul", "instructions": "?"}},
                    "assets": {ref: {"type": "image", "part": "asset-0"}},
                },
                "does not have",
            ),
        ):
            r = await raw.post("/v1/systemone", json=body, headers=headers)
            assert r.status_code == 422 and words in r.text, (body, r.text)
    assert fake.received == [fake.received[0]]  # only the first, valid request was answered


# --- evaluation ------------------------------------------------------------------------------------
def write_questions(path: Path) -> Path:
    rows = [
        {
            "id": "q1",
            "question": "How long is the HydroFlow HF-300 pump warranty?",
            "gold": [{"file": "catalog.pdf", "page": 2}],
        },
        {
            "id": "q2",
            "question": "What does the HydroFlow HF-300 pump cost?",
            "gold": [{"file": "catalog.pdf", "page": 6}],
        },
    ]
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


async def test_compare_jev_ranks_both_ways_and_reports_fallbacks(base, corpus, fake, tmp_path):
    from eval.harness import evaluate
    from eval.questions import load_questions
    from eval.report import markdown_report

    questions = load_questions(write_questions(tmp_path / "q.jsonl"))
    fake.default_score = 0.1
    fake.scores = {(TITLE, 2): 0.9, (TITLE, 6): 0.9}
    report = await evaluate(questions, corpus, fake.settings(base), k=4, reader=False, variants=(), compare_jev=True)
    rows = {r["id"]: r for r in report["questions"]}
    assert fake.attempts == 2 and all(r["jev"]["selected"] for r in rows.values())
    for qid, gold in (("q1", 2), ("q2", 6)):
        assert rows[qid]["jev"]["jev"][0] == ["catalog.pdf", gold] and rows[qid]["jev"]["jev_score"]["first"] == 1.0
        assert len(rows[qid]["jev"]["dense"]) == 4 and rows[qid]["ranked"][0]["page"] == gold  # hits: Jev's
    jev = report["jev"]
    assert jev["n"] == 2 and jev["jev"]["evidence_first"] == 1.0 and jev["fallbacks"] == 0 and jev["errors"] == 0
    assert jev["dense"]["evidence_first"] == sum(r["jev"]["dense_score"]["first"] for r in rows.values()) / 2
    assert "Jev comparison (2 questions" in markdown_report(report)


async def test_compare_jev_on_the_command_line_exits_1_after_a_fallback(base, corpus, fake, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for name, value in (("TYPESAFE_API_KEY", API_KEY), ("TYPESAFE_BASE_URL", fake.url), ("PIXELRAG_BACKEND", "local")):
        monkeypatch.setenv(name, value)
    fake.script(400)  # the first question's request is refused: that question keeps the dense ranking
    out = tmp_path / "report.json"
    args = [
        "eval",
        str(write_questions(tmp_path / "q.jsonl")),
        "--corpus",
        str(corpus),
        "--index",
        str(base.index_dir),
        "--retrieve-only",
        "--variants",
        "",
        "--compare-jev",
        "--json",
        str(out),
    ]
    assert await asyncio.to_thread(main, args) == 1
    jev = json.loads(out.read_text())["jev"]  # written before the non-zero exit
    assert jev["fallbacks"] == 1 and "400" in jev["fallback_reasons"]["q1"] and jev["n"] == 2
    fake.attempts = 0
    assert await asyncio.to_thread(main, args) == 0 and fake.attempts == 2
