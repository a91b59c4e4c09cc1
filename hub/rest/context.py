"""What a REST handler knows of its request: the hub it serves and the caller's identity."""

from __future__ import annotations

from typing import TYPE_CHECKING

from aiohttp import web

from hub.auth.identity import ADMIN, Identity
from hub.errors import Forbidden, NotLeader

if TYPE_CHECKING:
    from hub.rest import RestHub

HUB_KEY: web.AppKey[RestHub] = web.AppKey("hub")
IDENTITY_KEY: web.RequestKey[Identity] = web.RequestKey("identity", Identity)


def hub_of(request: web.Request) -> RestHub:
    return request.app[HUB_KEY]


def identity_of(request: web.Request) -> Identity:
    identity: Identity = request[IDENTITY_KEY]
    return identity


def require_admin(request: web.Request) -> None:
    """Writes need the admin token, on the replica that serves (the leader)."""
    if identity_of(request) != ADMIN:
        raise Forbidden("this call needs the admin token")
    if not hub_of(request).is_leader():
        raise NotLeader("this hub replica is not the leader; send writes to the leader (the ready replica)")


def is_dry_run(request: web.Request) -> bool:
    """Kubernetes' `?dryRun=All`: answer what the call would do, change nothing."""
    return request.query.get("dryRun", "") == "All"
