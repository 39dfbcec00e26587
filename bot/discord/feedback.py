"""👍 / 👎 buttons under an answer, recorded as Slack's feedback is (the latest click per person and
turn) and exported by the same `pixelrag feedback export`.

The buttons are dynamic items: the rating and the turn live in their custom_id, so a click is
understood by any process, after a restart too, without keeping the view in memory.
"""

from __future__ import annotations

import logging
import re
from typing import Any, Protocol, cast

import discord

from core import RATINGS, ThreadMemory, rate_answer

log = logging.getLogger("pixelrag.discord")

TEMPLATE = r"pixelrag-feedback:(?P<rating>good|bad):(?P<turn>[0-9]+)"


class KeepsRatings(Protocol):
    """The client a button is registered on: where its clicks are stored."""

    ratings: ThreadMemory


LOOKS = {
    "good": ("👍", discord.ButtonStyle.secondary, "Good answer"),
    "bad": ("👎", discord.ButtonStyle.secondary, "Wrong or unhelpful"),
}


class FeedbackButton(discord.ui.DynamicItem[discord.ui.Button], template=TEMPLATE):
    def __init__(self, rating: str, turn_id: int):
        emoji, style, label = LOOKS[rating]
        super().__init__(
            discord.ui.Button(emoji=emoji, label=label, style=style, custom_id=f"pixelrag-feedback:{rating}:{turn_id}")
        )
        self.rating, self.turn_id = rating, turn_id

    @classmethod
    async def from_custom_id(
        cls, interaction: discord.Interaction, item: discord.ui.Item[Any], match: re.Match[str]
    ) -> FeedbackButton:
        return cls(match["rating"], int(match["turn"]))

    async def callback(self, interaction: discord.Interaction) -> None:
        # discord.py types the client as any Client; the buttons are registered on one that keeps ratings.
        client = cast(KeepsRatings, interaction.client)
        await record(client.ratings, interaction, self.turn_id, self.rating)


def feedback_row(turn_id: int) -> discord.ui.ActionRow:
    """The same buttons as an action row of a Components V2 layout."""
    return discord.ui.ActionRow(*(FeedbackButton(rating, turn_id) for rating in RATINGS))


def feedback_view(turn_id: int) -> discord.ui.View:
    view = discord.ui.View(timeout=None)
    for rating in RATINGS:
        view.add_item(FeedbackButton(rating, turn_id))
    return view


async def record(threads: ThreadMemory, interaction: discord.Interaction, turn_id: int, rating: str) -> None:
    """Store the click and answer it privately (Discord shows "interaction failed" to an unanswered click)."""
    who = f"{interaction.guild_id or 'dm'}:{interaction.user.id}"
    stored = await rate_answer(threads, turn_id, who, rating)
    if not stored:
        log.warning("feedback for turn %s, which is not stored (any more), ignored", turn_id)
    text = (
        ("Thanks, noted." if rating == "good" else "Thanks, noted: this answer will be looked at.")
        if stored
        else "This answer is no longer on record, so the rating was not kept."
    )
    await interaction.response.send_message(text, ephemeral=True)
