"""The identity a bearer token grants."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from hub.errors import quote


@dataclass(frozen=True)
class Identity:
    """A member cluster (cluster_id set) or the ClusterSet admin (admin=True).

    `any_cluster` marks a credential shared by several members (Antrea's default
    member token): it must name its cluster on each call (metadata
    `mchub-cluster-id`), and the hub then treats it as that member.
    """

    cluster_id: str = ""
    admin: bool = False
    any_cluster: bool = False

    def describe(self) -> str:
        if self.admin:
            return "admin"
        return "a shared member credential" if self.any_cluster else f"member {quote(self.cluster_id)}"


ADMIN = Identity(admin=True)
# The refusal of a token no authenticator knows. The hub cannot tell a revoked token from a
# made-up one (it keeps no trace of either), so the message names both.
INVALID_TOKEN = "the bearer token is not valid (unknown, expired or revoked)"


class Authenticator(Protocol):
    """Maps a bearer token to an identity; None means the token is not valid.

    Raises hub.errors.Unavailable when it cannot tell now (the caller should retry).
    """

    async def authenticate(self, token: str) -> Identity | None: ...
