"""A thin typed layer over pyroute2's AsyncIPRoute for one namespace.

The netlink socket is made by the agent itself, inside the namespace on a thread of its
own (agent.linux.netns.call_in_netns), and handed to AsyncIPRoute; pyroute2's ``netns=``
is never used, because pyroute2 makes that socket in a forked helper process, and the
agent never forks (see agent.linux.netns). For the same reason pyroute2's request proxy
is switched off: it runs some requests (TUN/TAP creation, probes) in Python instead of
the kernel, and for another namespace in a forked child; every request goes to the kernel.

pyroute2 exceptions become agent.errors.NetlinkError (temporary: a retry may succeed);
"no such object" on deletion is success, since the goal is absence.
"""

from __future__ import annotations

import errno
import socket
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

from pyroute2 import AsyncIPRoute
from pyroute2.netlink.exceptions import NetlinkError as PyrouteNetlinkError

from agent.errors import NetlinkError
from agent.linux.netns import async_call_in_netns

_T = TypeVar("_T")
_GONE = {errno.ENOENT, errno.ESRCH, errno.ENODEV, errno.EADDRNOTAVAIL}
_NETLINK_ROUTE = 0
_BUFFER_BYTES = 1 << 20  # pyroute2's own default for both directions: dumps of many routes


def _rtnetlink_socket() -> socket.socket:
    """A NETLINK_ROUTE socket of the calling thread's namespace (it stays bound to it)."""
    sock = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, _NETLINK_ROUTE)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, _BUFFER_BYTES)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, _BUFFER_BYTES)
    except OSError:
        sock.close()
        raise
    return sock


@asynccontextmanager
async def open_netlink(netns: str | None) -> AsyncIterator[Any]:
    """An AsyncIPRoute bound to ``netns`` (None: the current one); a missing namespace is
    an error, never created."""
    try:
        sock = await async_call_in_netns(netns, _rtnetlink_socket)
    except OSError as err:
        raise NetlinkError(f"cannot open netlink in netns {netns or '<own>'}: {err}") from err
    try:
        try:
            ipr = AsyncIPRoute(use_socket=sock)
            ipr.request_proxy = None
            await ipr.setup_endpoint()
        except (OSError, PyrouteNetlinkError) as err:
            raise NetlinkError(f"cannot open netlink in netns {netns or '<own>'}: {err}") from err
        try:
            yield ipr
        finally:
            ipr.close()
    finally:
        sock.close()  # ipr.close() closes it too, through its transport; twice is harmless


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
