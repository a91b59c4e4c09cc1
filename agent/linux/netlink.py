"""A thin typed layer over pyroute2's AsyncIPRoute for one namespace.

pyroute2 exceptions become agent.errors.NetlinkError (temporary: a retry may succeed);
"no such object" on deletion is success, since the goal is absence.
"""

from __future__ import annotations

import errno
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from pyroute2 import AsyncIPRoute
from pyroute2.netlink.exceptions import NetlinkError as PyrouteNetlinkError

from agent.errors import NetlinkError

_T = TypeVar("_T")
_GONE = {errno.ENOENT, errno.ESRCH, errno.ENODEV, errno.EADDRNOTAVAIL}


@asynccontextmanager
async def open_netlink(netns: str | None) -> AsyncIterator[Any]:
    """An AsyncIPRoute bound to ``netns`` (None: the current one)."""
    try:
        # flags=0: never create a missing namespace (pyroute2's default is O_CREAT).
        ipr = AsyncIPRoute(netns=netns, flags=0) if netns else AsyncIPRoute()
        await ipr.setup_endpoint()
    except (OSError, PyrouteNetlinkError) as err:
        raise NetlinkError(f"cannot open netlink in netns {netns or '<own>'}: {err}") from err
    try:
        yield ipr
    finally:
        ipr.close()


async def call(what: str, request: Awaitable[_T]) -> _T:
    """Await one netlink request, translating its errors."""
    try:
        return await request
    except PyrouteNetlinkError as err:
        raise NetlinkError(f"{what}: {err}") from err


async def delete(what: str, request: Awaitable[Any]) -> bool:
    """Await a deletion; False if the object was already gone."""
    try:
        await request
    except PyrouteNetlinkError as err:
        if err.code in _GONE:
            return False
        raise NetlinkError(f"{what}: {err}") from err
    return True


async def collect(what: str, request: Awaitable[Any]) -> list[Any]:
    """Await a dump request and gather its messages."""
    try:
        result = await request
        return [msg async for msg in result]
    except PyrouteNetlinkError as err:
        raise NetlinkError(f"{what}: {err}") from err


async def link_index(ipr: Any, name: str) -> int | None:
    found = await call(f"lookup link {name}", ipr.link_lookup(ifname=name))
    return int(found[0]) if found else None


def link_kind(msg: Any) -> str | None:
    info = msg.get("linkinfo")
    return None if info is None else info.get("kind")
