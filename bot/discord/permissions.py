"""Who may add, re-index and remove a server's documents: members with Manage Server (or
Administrator), plus the role and user ids the operator configured."""

from __future__ import annotations

from dataclasses import dataclass

import discord

from .settings import DiscordSettings


@dataclass(frozen=True)
class Permissions:
    role: str = ""  # role id or name
    users: frozenset[int] = frozenset()

    @classmethod
    def of(cls, options: DiscordSettings) -> Permissions:
        return cls(options.index_role, options.index_users)

    @property
    def customised(self) -> bool:
        """With a custom role or user list, Discord can't hide the commands by permission alone."""
        return bool(self.role or self.users)

    def allows(self, user: discord.abc.User, permissions: discord.Permissions | None) -> bool:
        if user.id in self.users:
            return True
        if self.role and isinstance(user, discord.Member):
            if any(str(r.id) == self.role or r.name == self.role for r in user.roles):
                return True
        return permissions is not None and (permissions.manage_guild or permissions.administrator)

    def refusal(self) -> str:
        who = "Manage Server permission"
        if self.role:
            who += f" or the “{self.role}” role"
        return f"🔒 Only members with {who} can add or remove documents here."
