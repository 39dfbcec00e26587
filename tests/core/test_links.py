"""Link settings and tokens: a bad setting is one clear line; a token opens exactly what it was made for."""

from __future__ import annotations

import time

import pytest

from core import BadInput, LinkRefused, load_settings
from core.links import Links
from core.records import Document, Highlight

DOC = Document("d" * 16, "Pump manual", "pump.pdf", "a" * 64, 12, "discord:1:2")


@pytest.mark.parametrize(
    "value",
    [
        "ftp://example.com",
        "example.com",
        "https://example.com/?a=1",
        "https://example.com/#x",
        "https://u:p@example.com",
        "https://exa mple.com",
        "https://example.com/a|b",
        "https://example.com/<b>",
    ],
)
def test_a_public_url_that_is_not_a_base_address_is_one_line(value):
    with pytest.raises(BadInput, match="PIXELRAG_PUBLIC_URL"):
        load_settings({"PIXELRAG_PUBLIC_URL": value}, dotenv=None)


def test_link_settings_are_read_and_checked():
    settings = load_settings(
        {"PIXELRAG_PUBLIC_URL": "https://docs.example.com/pixelrag/", "PIXELRAG_LINK_DAYS": "7"}, dotenv=None
    )
    assert (settings.public_url, settings.link_days, settings.link_secret) == (
        "https://docs.example.com/pixelrag",
        7,
        None,
    )
    with pytest.raises(BadInput, match="PIXELRAG_LINK_SECRET has 6 characters"):
        load_settings({"PIXELRAG_LINK_SECRET": "secret"}, dotenv=None)
    with pytest.raises(BadInput, match="PIXELRAG_LINK_DAYS"):
        load_settings({"PIXELRAG_LINK_DAYS": "0"}, dotenv=None)


def test_a_token_opens_what_it_names_and_fits_a_discord_button():
    links = Links(b"k" * 32, "https://pixelrag.example.com", days=90)
    now = time.time()
    link = links.link(DOC, 7, Highlight("approximate", (0.123456, 0.2, 0.5, 0.75)), now)
    opened = links.opened(links.token(link), now + 89 * 86_400)
    assert opened == link and opened.box == (0.1235, 0.2, 0.5, 0.75) and opened.kind == "approximate"
    assert len(links.view_url(link)) <= 512  # Discord's limit for a link button's URL
    with pytest.raises(LinkRefused) as refused:
        links.opened(links.token(link), now + 91 * 86_400)
    assert refused.value.status == 410


def test_every_changed_character_of_a_token_is_refused():
    links = Links(b"k" * 32)
    token = links.token(links.link(DOC, 3, Highlight("exact", (0.1, 0.1, 0.2, 0.2)), time.time()))
    for i, char in enumerate(token):
        for other in {"A", "b", "-", "."} - {char}:
            changed = token[:i] + other + token[i + 1 :]
            with pytest.raises(LinkRefused) as refused:
                links.opened(changed, time.time())
            assert refused.value.status == 404, changed
    with pytest.raises(LinkRefused):
        Links(b"another secret of 32 bytes......").opened(token, time.time())
