"""`pixelrag doctor` against the strict fakes and a real PostgreSQL: a line per check, each misconfiguration
a failing line that says what to change, exit code 0 only when every line passed."""

from __future__ import annotations

import shutil

import psycopg
import pytest

from bot.cli import main
from bot.doctor import FAIL, OK, SKIP, diagnose, report
from core import Settings
from core.postgres.database import MIGRATIONS, open_pool
from tests.conftest import closed_port
from tests.fakes.discord import FakeDiscord
from tests.fakes.gemini import FakeGemini
from tests.fakes.slack import BOT_TOKEN, FakeSlack, manifest_scopes
from tests.fakes.slack_socket import APP_TOKEN
from tests.fakes.typesafe import FakeTypeSafe


@pytest.fixture
def slack():
    server = FakeSlack().start()
    yield server
    server.stop()


def slack_env(fake: FakeSlack, **changes: str) -> dict[str, str]:
    return {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_APP_TOKEN": APP_TOKEN, "SLACK_API_URL": fake.api_url, **changes}


def lines(findings, status: str) -> dict[str, str]:
    return {f.what: f.detail for f in findings if f.status == status}


async def test_a_good_install_passes_every_check_and_exits_0(tmp_path, slack, brochure_index):
    index = tmp_path / "index"
    shutil.copytree(brochure_index, index)
    async with FakeGemini() as gemini, FakeTypeSafe() as typesafe, FakeDiscord():
        settings = typesafe.settings(
            Settings(index_dir=index, backend="local", gemini_api_key="fake-test-key", gemini_base_url=gemini.url),
            extra={**slack_env(slack), "DISCORD_TOKEN": "fake-bot-token"},
        )
        findings = await diagnose(settings)
    text, code = report(findings)
    assert code == 0, text
    assert not lines(findings, FAIL) and not lines(findings, SKIP)
    passed = lines(findings, OK)
    assert {
        "index",
        "index backend",
        "slack bot token",
        "slack scopes",
        "slack app token",
        "discord token",
        "discord intent",
        "gemini",
        "typesafe",
    } <= passed.keys()
    assert "1 document, 4 pages" in passed["index"] and "as @pixelrag" in passed["slack bot token"]
    assert f"all {len(manifest_scopes())} scopes" in passed["slack scopes"]
    assert text.endswith("All checks passed.")


async def test_what_is_not_configured_is_skipped_not_failed(tmp_path):
    findings = await diagnose(Settings(index_dir=tmp_path / "none", backend="local"))
    assert report(findings)[1] == 0
    assert set(lines(findings, SKIP)) == {"slack", "discord", "gemini", "typesafe"}
    assert "nothing indexed yet" in lines(findings, OK)["index"]


async def test_a_slack_token_without_a_scope_the_manifest_asks_for_fails(tmp_path):
    fake = FakeSlack(scopes=manifest_scopes() - {"files:write", "reactions:write"}).start()
    try:
        findings = await diagnose(Settings(index_dir=tmp_path / "none", extra=slack_env(fake)))
    finally:
        fake.stop()
    failed = lines(findings, FAIL)
    assert set(failed) == {"slack scopes"}
    assert "files:write, reactions:write" in failed["slack scopes"] and "reinstall" in failed["slack scopes"]
    assert report(findings)[1] == 1


async def test_refused_slack_tokens_fail_each_on_its_line(tmp_path, slack):
    wrong = slack_env(slack, SLACK_BOT_TOKEN="xoxb-revoked", SLACK_APP_TOKEN=BOT_TOKEN)
    failed = lines(await diagnose(Settings(index_dir=tmp_path / "none", extra=wrong)), FAIL)
    assert "invalid_auth" in failed["slack bot token"]
    assert "xapp-" in failed["slack app token"]  # a bot token where the app-level one belongs
    unknown_app = slack_env(slack, SLACK_APP_TOKEN="xapp-1-old")
    failed = lines(await diagnose(Settings(index_dir=tmp_path / "none", extra=unknown_app)), FAIL)
    assert set(failed) == {"slack app token"} and "invalid_auth" in failed["slack app token"]
    neither = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_API_URL": slack.api_url}
    failed = lines(await diagnose(Settings(index_dir=tmp_path / "none", extra=neither)), FAIL)
    assert "SLACK_SIGNING_SECRET" in failed["slack connection"]
    unreachable = slack_env(slack, SLACK_API_URL=f"http://127.0.0.1:{closed_port()}/api/")
    failed = lines(await diagnose(Settings(index_dir=tmp_path / "none", extra=unreachable)), FAIL)
    assert "cannot reach Slack" in failed["slack bot token"]


async def test_discord_without_the_message_content_intent_fails_unless_told_to_do_without(tmp_path):
    async with FakeDiscord() as discord:
        discord.message_content_intent = False
        base = Settings(index_dir=tmp_path / "none", extra={"DISCORD_TOKEN": "fake-bot-token"})
        failed = lines(await diagnose(base), FAIL)
        assert set(failed) == {"discord intent"} and "DISCORD_MESSAGE_CONTENT=0" in failed["discord intent"]
        without = base.with_(extra={**base.extra, "DISCORD_MESSAGE_CONTENT": "0"})
        findings = await diagnose(without)
        assert report(findings)[1] == 0 and "off" in lines(findings, OK)["discord intent"]
        refused = base.with_(extra={"DISCORD_TOKEN": "an-old-token"})
        assert "refused DISCORD_TOKEN" in lines(await diagnose(refused), FAIL)["discord token"]


async def test_a_refused_gemini_key_and_an_unknown_model_fail(tmp_path):
    async with FakeGemini() as gemini:
        base = gemini.settings(Settings(index_dir=tmp_path / "none"))
        bad_key = [f for f in await diagnose(base.with_(gemini_api_key="AIza-wrong")) if f.what == "gemini"]
        assert bad_key and all(f.status == FAIL and "API key not valid" in f.detail for f in bad_key)
        del gemini.models["gemini-3.5-flash"]
        findings = [f for f in await diagnose(base) if f.what == "gemini"]
        assert [f.detail.split(":")[0] for f in findings if f.status == FAIL] == ["gemini-3.5-flash"]
        assert "404" in next(f.detail for f in findings if f.status == FAIL)


async def test_jev_on_with_a_refused_key_or_a_model_not_offered_fails(tmp_path):
    async with FakeTypeSafe() as typesafe:
        base = typesafe.settings(Settings(index_dir=tmp_path / "none"))
        assert "TypeSafe refused" in lines(await diagnose(base.with_(typesafe_api_key="ts-wrong")), FAIL)["typesafe"]
        assert "not offered" in lines(await diagnose(base.with_(typesafe_model="jev-0.1")), FAIL)["typesafe"]
    assert "TYPESAFE_API_KEY" in lines(await diagnose(Settings(jev="rerank", index_dir=tmp_path)), FAIL)["typesafe"]


async def test_an_index_built_by_another_backend_fails(tmp_path, brochure_index):
    index = tmp_path / "index"
    shutil.copytree(brochure_index, index)
    async with FakeGemini() as gemini:
        failed = lines(await diagnose(gemini.settings(Settings(index_dir=index))), FAIL)
    assert "built with" in failed["index backend"] and "local" in failed["index backend"]


async def test_a_damaged_index_fails(tmp_path, brochure_index):
    index = tmp_path / "index"
    shutil.copytree(brochure_index, index)
    (index / "ACTIVE").write_text("no-such-snapshot\n")
    assert "index" in lines(await diagnose(Settings(index_dir=index, backend="local")), FAIL)


async def test_the_database_is_read_not_migrated(database_url, tmp_path):
    settings = Settings(index_dir=tmp_path / "none", database_url=database_url)
    passed = lines(await diagnose(settings), OK)
    assert "empty database" in passed["schema"] and "version" in passed["pgvector"]
    with psycopg.connect(database_url) as conn:  # doctor created nothing
        assert conn.execute("SELECT to_regclass('pixelrag_schema')").fetchone()[0] is None
    pool = await open_pool(database_url)
    await pool.close()
    assert lines(await diagnose(settings), OK)["schema"] == f"schema {len(MIGRATIONS)}"
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("INSERT INTO pixelrag_schema (version) VALUES (%s)", (len(MIGRATIONS) + 1,))
    assert "upgrade" in lines(await diagnose(settings), FAIL)["schema"]
    away = settings.with_(database_url=f"postgresql://nobody@127.0.0.1:{closed_port()}/none")
    assert "cannot reach" in lines(await diagnose(away), FAIL)["database"]


def test_the_command_prints_a_line_per_check_and_exits_1_on_a_failure(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for name in ("SLACK_BOT_TOKEN", "SLACK_APP_TOKEN", "DISCORD_TOKEN", "GEMINI_API_KEY", "GOOGLE_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SLACK_BOT_TOKEN", "not-a-bot-token")
    monkeypatch.setenv("SLACK_SIGNING_SECRET", "s3cret")
    assert main(["doctor", "--index", str(tmp_path / "index")]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1] == "1 check(s) failed."
    assert any(line.startswith("FAIL") and "xoxb-" in line for line in out)
    assert any(line.startswith("skip") and "discord" in line for line in out)
    assert "s3cret" not in "\n".join(out)
