"""Slack's agent view and App Home, offline: signed events through Bolt to the real Service and out to
the loopback fake (tests/fakes/slack.py), which refuses what Slack refuses (views, thread titles,
suggested prompts, their scopes)."""

from __future__ import annotations

import json
import time

import pytest
import yaml
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.slack.agent import TITLE_LIMIT, shorten, thread_title
from core.records import Document
from tests.adapters.slack_harness import CHANNEL, SECRET_PDF, Harness, make_pdf
from tests.adapters.test_slack import feedback_values
from tests.fakes.slack import BOT_TOKEN, BOT_USER_ID, MANIFEST, FakeSlack, block_text, manifest_events

DM = "D42"


async def open_tab(harness: Harness, tab: str, *, user: str = "U1", team: str = "T1", channel: str = DM):
    """app_home_opened as Slack sends it (the user exists in the workspace)."""
    harness.fake.users.add(user)
    event = {"type": "app_home_opened", "user": user, "channel": channel, "tab": tab, "event_ts": f"{time.time():.6f}"}
    body = {
        "token": "legacy",
        "team_id": team,
        "api_app_id": "A1",
        "type": "event_callback",
        "event_id": f"EvHome{time.time_ns()}",
        "event_time": int(time.time()),
        "event": event,
        "authorizations": [{"team_id": team, "user_id": BOT_USER_ID, "is_bot": True}],
    }
    response = await harness.dispatch(json.dumps(body), "application/json")
    assert response.status == 200
    await harness.bot.drain()


def home_text(fake: FakeSlack, user: str = "U1") -> str:
    return "\n".join(block_text(fake.home_views[user]["blocks"]))


async def dm(harness: Harness, text: str, **extra) -> dict:
    event, _ = await harness.event(
        {"type": "message", "channel_type": "im", "channel": DM, "user": "U1", "text": text, **extra}
    )
    await harness.bot.drain()
    return event


# ----- the agent view ----------------------------------------------------------------------------------


async def test_agent_view_question_is_answered_in_its_thread_titled_after_it(slack: Harness):
    event = await dm(slack, "How long is the X200 warranty?")
    fake = slack.fake
    [message] = fake.streams(event["ts"])
    assert "3 years" in message["stream"]["markdown"] and message in fake.messages[DM]
    assert fake.thread_titles == {(DM, event["ts"]): "How long is the X200 warranty?"}
    assert slack.service.turns[0].scope == f"slack:T1/{DM}"  # the DM is a channel: its own, the workspace's
    [answer] = fake.replies(event["ts"])
    values = feedback_values(answer)  # the same buttons as under a mention
    assert (await slack.click(answer["ts"], values["good"])).status == 200
    [rated] = await slack.store.ratings("good")
    assert rated.question == "How long is the X200 warranty?" and rated.user == "T1:U1"

    # A follow-up in the thread keeps its memory and its title.
    await dm(slack, "and its weight?", thread_ts=event["ts"])
    assert slack.service.turns[-1].history and "14 kg" in fake.thread_text(event["ts"])
    assert len(fake.calls_to("assistant.threads.setTitle")) == 1


async def test_a_long_first_question_gives_a_short_title_cut_at_a_word(slack: Harness):
    question = (
        "Could you tell me, for the Aquaflow X200 centrifugal pump that we installed last spring in the "
        "basement of building seven, what its maximum flow rate is?"
    )
    event = await dm(slack, question)
    title = slack.fake.thread_titles[(DM, event["ts"])]
    assert len(title) <= TITLE_LIMIT and title.endswith("…")
    assert question.startswith(title[:-1]) and question[len(title) - 1] in " ,"
    assert "120" in slack.fake.thread_text(event["ts"])


def test_titles_without_text_say_what_started_the_thread():
    assert thread_title("", [{"name": "manual.pdf"}]) == "Indexing manual.pdf"
    assert thread_title("  ", [{"name": "shot.png"}]) == "Question about a screenshot"
    assert thread_title("what\n is   the head?", []) == "what is the head?"
    assert shorten("x" * 100, 20) == "x" * 19 + "…"


async def test_channel_questions_get_no_thread_title(slack: Harness):
    event, _ = await slack.mention("What is the X200 weight?")
    await slack.bot.drain()
    assert "14 kg" in slack.fake.thread_text(event["ts"]) and not slack.fake.calls_to("assistant.threads.setTitle")


async def test_opening_the_messages_tab_suggests_prompts_naming_the_documents(slack: Harness):
    await slack.service.real.index_bytes(SECRET_PDF, "q9-manual.pdf", scope="shared")
    await slack.service.real.index_bytes(
        make_pdf([["Other workspace secret"]], title="Hidden Plan"), "hidden.pdf", scope="slack:T2"
    )
    await slack.service.real.index_bytes(
        make_pdf([["Another channel's secret"]], title="Hidden Channel"), "channel.pdf", scope="slack:T1/C100"
    )
    await open_tab(slack, "messages")
    [call] = slack.fake.calls_to("assistant.threads.setSuggestedPrompts")
    assert "thread_ts" not in call.params  # the agent view takes channel-level prompts only
    prompts = slack.fake.suggested_prompts[DM]["prompts"]
    assert len(prompts) == 2 and prompts[0]["title"].startswith("About ")
    assert "x200" in prompts[0]["message"].lower() and "q9" in prompts[1]["message"].lower()
    assert "Hidden" not in json.dumps(prompts)


async def test_without_documents_the_manifest_prompts_stay(make_harness):
    harness = await make_harness()
    await open_tab(harness, "messages")
    assert not harness.fake.calls_to("assistant.threads.setSuggestedPrompts")


# ----- App Home ----------------------------------------------------------------------------------------


async def test_home_tab_lists_the_workspace_and_shared_documents_and_how_to_add_more(slack: Harness):
    await slack.service.real.index_bytes(SECRET_PDF, "q9-manual.pdf", scope="shared")
    await slack.service.real.index_bytes(
        make_pdf([["Other workspace secret"]], title="Hidden Plan"), "hidden.pdf", scope="slack:T2"
    )
    await open_tab(slack, "home")
    view = slack.fake.home_views["U1"]
    assert view["type"] == "home"
    text = home_text(slack.fake)
    own, shared = text.index("This workspace"), text.index("Shared collection")
    assert own < text.index("x200") < shared < text.index("q9") and "2 pages" in text and "1 page" in text
    assert "/pixelrag index" in text and "Hidden" not in text and "Indexing now" not in text
    assert not slack.fake.calls_to("assistant.threads.setSuggestedPrompts")  # the Home tab is not the agent view


async def test_home_tab_shows_admins_what_the_documents_could_not_answer(slack: Harness):
    for question in ("What does the X200 cost? <!here>", "How much does the X200 cost?"):
        await slack.mention(question)
        await slack.bot.drain()
    await slack.mention("What does the X200 cost?", team="T2")  # another workspace's question
    await slack.bot.drain()
    await open_tab(slack, "home", user="UADMIN")
    await open_tab(slack, "home", user="U1")
    admin = home_text(slack.fake, "UADMIN")
    gaps = admin[admin.index("Questions the documents could not answer") :]
    assert gaps.count("2× How much does the X200 cost?") == 1 and "1×" not in gaps  # grouped, T2's left out
    assert "limitation" in gaps and "x200-datasheet" in gaps.lower() and "pixelrag gaps --scope slack:T1" in gaps
    assert "could not answer" not in home_text(slack.fake, "U1")  # not an admin: not shown


async def test_home_tab_shows_jobs_under_way_in_any_process_with_their_progress(slack: Harness):
    import time

    from core import job_queue, new_jobs

    queue = await job_queue(slack.service.real.settings).open()
    try:  # another process's worker halfway through an upload, another waiting; another workspace's jobs
        _, mine = new_jobs(["manual.pdf", "next.pdf"], "slack:T1", kind="upload")
        _, theirs = new_jobs(["/srv/secret-plans.pdf", "their.pdf"], "slack:T2", kind="upload")
        await queue.add(mine + theirs, {j.id: b"%PDF" for j in mine + theirs})
        job = await queue.take("host-b:77:abc", 60, batch=mine[0].batch)
        await queue.renew(
            job.id, "host-b:77:abc", 60, {"stage": "embed", "done": 10, "total": 40, "since": time.time() - 5}
        )
        await queue.beat("host-b:77:abc", time.time())
    finally:
        await queue.close()
    await open_tab(slack, "home")
    text = home_text(slack.fake)
    assert "Indexing now:* manual.pdf (embed 10/40, 2.0/s, about 15 s left)" in text, text
    assert "Jobs waiting: 1; indexing workers alive: 1." in text  # T2's jobs neither counted nor named
    assert "secret-plans" not in text and "their.pdf" not in text and "host-b" not in text


async def test_home_tab_lists_the_workspaces_watched_addresses(slack: Harness):
    from core import job_queue, watch_address

    queue = await job_queue(slack.service.real.settings).open()
    try:
        await watch_address(queue, "https://vendor.example/x9.pdf", "slack:T1")
        await watch_address(queue, "https://other.example/secret.pdf", "slack:T2")
    finally:
        await queue.close()
    await open_tab(slack, "home")
    text = home_text(slack.fake)
    assert "Kept current" in text and "vendor.example/x9.pdf" in text and "not yet checked" in text
    assert "other.example" not in text  # another workspace's


async def test_home_tab_is_refreshed_when_an_indexing_job_in_its_workspace_ends(slack: Harness):
    await open_tab(slack, "home", user="U1")
    await open_tab(slack, "home", user="U9", team="T2")
    assert "q9" not in home_text(slack.fake, "U1")
    url = slack.fake.add_public_file("q9-manual.pdf", SECRET_PDF)
    await slack.command(f"index {url}")
    await slack.bot.drain()
    assert "q9" in home_text(slack.fake, "U1").lower()
    published = [c.params["user_id"] for c in slack.fake.calls_to("views.publish")]
    assert published == ["U1", "U9", "U1"]  # T2's viewer is not told about T1's documents

    await slack.command("remove q9-manual.pdf")
    await slack.bot.drain()
    assert "q9" not in home_text(slack.fake, "U1").lower()


async def test_a_pdf_sent_in_the_agent_view_is_indexed_in_a_titled_thread_and_the_home_tab_follows(slack: Harness):
    await open_tab(slack, "home", user="UADMIN")
    pdf = slack.image_file("q9.pdf", SECRET_PDF, mimetype="application/pdf")
    event, _ = await slack.event(
        {"type": "message", "channel_type": "im", "channel": DM, "user": "UADMIN", "text": "", "files": [pdf]}
    )
    await slack.bot.drain()
    assert slack.fake.thread_titles[(DM, event["ts"])] == "Indexing q9.pdf"
    assert "Indexed q9.pdf" in slack.fake.calls_to("chat.update")[-1].params["text"]
    assert "q9.pdf" in home_text(slack.fake, "UADMIN")


async def test_home_tab_shows_this_workspaces_indexing_in_progress(slack: Harness, monkeypatch):
    building = {"slack:T1": ["big-manual.pdf"], "slack:T2": ["their-secret.pdf"], "shared": ["catalogue.pdf"]}
    # as Service.indexing_now answers for a workspace: its own builds and the shared collection's
    monkeypatch.setattr(
        slack.service, "indexing_now", lambda scope=None: building[scope] + building["shared"], raising=False
    )
    await open_tab(slack, "home")
    text = home_text(slack.fake)
    assert "Indexing now" in text and "big-manual.pdf" in text and "catalogue.pdf" in text
    assert "their-secret" not in text


async def test_home_tab_with_many_documents_stays_within_block_kit_limits(slack: Harness, monkeypatch):
    many = [
        Document(
            f"{i:016x}",
            f"Manual number {i} " + "with a long title " * 8,
            f"m{i}.pdf",
            "0" * 64,
            i % 90 + 1,
            "slack:T1" if i % 2 else "shared",
        )
        for i in range(600)
    ]

    async def documents(scope):
        return many

    monkeypatch.setattr(slack.service, "documents", documents, raising=False)
    await open_tab(slack, "home")  # the fake refuses more than 100 blocks or 250 kB
    view = slack.fake.home_views["U1"]
    assert len(view["blocks"]) <= 100
    text = home_text(slack.fake)
    assert text.count("…and 260 more") == 2 and "300 documents" in text


# ----- the fake is as strict as Slack --------------------------------------------------------------------


@pytest.fixture
async def client(fake):
    fake.users.add("U1")
    fake.add_message(DM, {"ts": "1800000000.000900", "user": "U1", "text": "hello"})
    web = AsyncWebClient(token=BOT_TOKEN, base_url=fake.api_url)
    yield web


async def refused(fake: FakeSlack, call, method: str, error: str) -> None:
    with pytest.raises(SlackApiError) as caught:
        await call
    assert caught.value.response["error"] == error
    fake.expected_refusals.append((method, error))


async def test_the_fake_refuses_views_slack_refuses(fake, client):
    ok = {"type": "home", "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "hi"}}]}
    await client.views_publish(user_id="U1", view=ok)
    cases = [
        ({"user_id": "UNOBODY", "view": ok}, "invalid_arguments"),
        ({"user_id": "U1", "view": {**ok, "type": "modal"}}, "invalid_arguments"),
        ({"user_id": "U1", "view": {"type": "home", "blocks": ok["blocks"] * 101}}, "invalid_blocks"),
        (
            {"user_id": "U1", "view": {"type": "home", "blocks": [{"type": "markdown", "text": "**hi**"}]}},
            "invalid_blocks",
        ),
        (
            {
                "user_id": "U1",
                "view": {
                    "type": "home",
                    "blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "x" * 2900}}] * 90,
                },
            },
            "view_too_large",
        ),
    ]
    for kwargs, error in cases:
        await refused(fake, client.views_publish(**kwargs), "views.publish", error)
    fake.home_tab_enabled = False
    await refused(fake, client.views_publish(user_id="U1", view=ok), "views.publish", "not_enabled")


async def test_the_fake_refuses_assistant_thread_calls_slack_refuses(fake, client):
    ts = "1800000000.000900"
    await client.assistant_threads_setTitle(channel_id=DM, thread_ts=ts, title="A title")
    await client.assistant_threads_setStatus(channel_id=DM, thread_ts=ts, status="is reading…")
    prompt = {"title": "About X", "message": "What is X?"}
    await client.assistant_threads_setSuggestedPrompts(channel_id=DM, prompts=[prompt])
    await refused(
        fake,
        client.assistant_threads_setTitle(channel_id=DM, thread_ts="", title="t"),
        "assistant.threads.setTitle",
        "invalid_arguments",
    )
    await refused(
        fake,
        client.assistant_threads_setTitle(channel_id=DM, thread_ts="1.2", title="t"),
        "assistant.threads.setTitle",
        "invalid_thread_ts",
    )
    await refused(
        fake,
        client.assistant_threads_setTitle(channel_id=CHANNEL, thread_ts=ts, title="t"),
        "assistant.threads.setTitle",
        "channel_not_found",
    )
    await refused(
        fake,
        client.assistant_threads_setTitle(channel_id=DM, thread_ts=ts, title=" "),
        "assistant.threads.setTitle",
        "invalid_arguments",
    )
    await refused(
        fake,
        client.assistant_threads_setSuggestedPrompts(channel_id=DM, prompts=[prompt] * 5),
        "assistant.threads.setSuggestedPrompts",
        "invalid_arguments",
    )
    await refused(
        fake,
        client.assistant_threads_setSuggestedPrompts(channel_id=DM, prompts=[{"title": "t"}]),
        "assistant.threads.setSuggestedPrompts",
        "invalid_arguments",
    )
    # Under agent_view a thread_ts makes Slack drop the prompts silently; the fake says so.
    await refused(
        fake,
        client.assistant_threads_setSuggestedPrompts(channel_id=DM, thread_ts=ts, prompts=[prompt]),
        "assistant.threads.setSuggestedPrompts",
        "invalid_arguments",
    )
    await refused(
        fake,
        client.assistant_threads_setStatus(channel_id=DM, thread_ts=ts, status="x", loading_messages=["…"] * 11),
        "assistant.threads.setStatus",
        "invalid_arguments",
    )


async def test_the_fake_grants_only_the_manifests_scopes_to_assistant_calls():
    server = FakeSlack(scopes={"chat:write"}).start()
    try:
        server.add_message(DM, {"ts": "1800000000.000900", "user": "U1", "text": "hello"})
        web = AsyncWebClient(token=BOT_TOKEN, base_url=server.api_url)
        await web.assistant_threads_setStatus(channel_id=DM, thread_ts="1800000000.000900", status="…")
        with pytest.raises(SlackApiError) as caught:
            await web.assistant_threads_setTitle(channel_id=DM, thread_ts="1800000000.000900", title="t")
        assert caught.value.response["error"] == "missing_scope"
        assert server.refused == [("assistant.threads.setTitle", "missing_scope")]
    finally:
        server.stop()


def test_the_manifest_declares_the_agent_view_and_the_home_tab():
    manifest = yaml.safe_load(MANIFEST.read_text(encoding="utf-8"))
    features = manifest["features"]
    agent = features["agent_view"]
    assert agent["agent_description"].strip() and "assistant_view" not in features
    assert 0 < len(agent["suggested_prompts"]) <= 4
    assert all(p["title"].strip() and p["message"].strip() for p in agent["suggested_prompts"])
    assert features["app_home"]["home_tab_enabled"] and features["app_home"]["messages_tab_enabled"]
    assert {"app_home_opened", "message.im", "app_mention"} <= manifest_events()
    assert set(manifest_events()) == set(manifest["settings"]["event_subscriptions"]["bot_events"])
    assert {"assistant:write", "im:history", "chat:write"} <= set(manifest["oauth_config"]["scopes"]["bot"])
