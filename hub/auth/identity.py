"""The identity a bearer token grants."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class Identity:
    """A member cluster (cluster_id set) or the ClusterSet admin (admin=True)."""

    cluster_id: str = ""
    admin: bool = False

    def describe(self) -> str:
        return "admin" if self.admin else f"member {self.cluster_id!r}"


ADMIN = Identity(admin=True)


class Authenticator(Protocol):
    """Maps a bearer token to an identity; None means the token is not valid."""

    async def authenticate(self, token: str) -> Identity | None: ...
