"""The hub's REST facade and dashboard (aiohttp, same process as gRPC).

`RestHub` is what the facade reads of the hub process: a narrow view, so the
REST layer need not know HubApp (which builds it). HubApp serves it over TLS
with the certificate gRPC serves (hub/app.py).
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from hub.auth.identity import Authenticator
    from hub.auth.tokens import TokenStore
    from hub.config import HubConfig
    from hub.engine import ClusterSetEnd, Engine
    from hub.metrics import HubMetrics


class RestHub(Protocol):
    """The hub as the REST facade and the dashboard see it."""

    @property
    def config(self) -> HubConfig: ...

    @property
    def engine(self) -> Engine:
        """The engine serving now (replaced when this replica takes over the Lease)."""
        ...

    @property
    def authenticator(self) -> Authenticator: ...

    @property
    def metrics(self) -> HubMetrics: ...

    @property
    def tokens(self) -> TokenStore:
        """The hub's own member tokens (removing a member may revoke them)."""
        ...

    def now(self) -> datetime: ...

    def is_ready(self) -> bool:
        """Takes writes (the leader)."""
        ...

    def is_ready_for_watches(self) -> bool:
        """Serves watches and the read views (the leader, or a follower that holds its history)."""
        ...

    def is_leader(self) -> bool: ...

    def refresh_metrics(self) -> None: ...

    async def end_clusterset(self) -> ClusterSetEnd:
        """Delete the ClusterSet (SQLite store); raises hub.errors.Conflict where a CR holds it."""
        ...
