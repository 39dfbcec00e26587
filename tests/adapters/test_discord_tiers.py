"""bot/discord in tiers: rendering, sending, behaviour, wiring. A module imports its own tier and
those before it, never one after, so records become messages without knowing who sends them and
sending code never decides what the bot does."""

from __future__ import annotations

import ast

from tests.conftest import ROOT

DISCORD = ROOT / "bot" / "discord"
TIERS = [
    {"settings"},
    {"render", "layout", "feedback"},  # core records -> Discord objects
    {"replies", "stream", "progress"},  # sending them
    {"routing", "permissions", "files", "questions", "commands"},  # what the bot does
    {"cogs", "client"},  # wiring to discord.py
]


def tier(module: str) -> int:
    return next(i for i, names in enumerate(TIERS) if module in names)


def later_tier_imports() -> list[str]:
    found = []
    for path in sorted(DISCORD.glob("*.py")):
        if path.stem == "__init__":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module:
                imported = node.module.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("bot.discord."):
                imported = (node.module or "").split(".")[2]
            else:
                continue
            if tier(imported) > tier(path.stem):
                found.append(f"{path.name}:{node.lineno} imports {imported} of a later tier")
    return found


def test_every_discord_module_has_a_tier():
    modules = {p.stem for p in DISCORD.glob("*.py")} - {"__init__"}
    assert modules == set().union(*TIERS)


def test_discord_modules_import_only_their_tier_and_earlier_ones():
    assert later_tier_imports() == []


def test_the_tier_check_sees_an_import_of_a_later_tier(tmp_path, monkeypatch):
    copy = tmp_path / "discord"
    copy.mkdir()
    for path in DISCORD.glob("*.py"):
        (copy / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    layout = copy / "layout.py"
    layout.write_text(layout.read_text(encoding="utf-8") + "\nfrom .client import PixelragBot\n", encoding="utf-8")
    monkeypatch.setattr(__import__(__name__, fromlist=["DISCORD"]), "DISCORD", copy)
    assert [line.split(":")[0] for line in later_tier_imports()] == ["layout.py"]
