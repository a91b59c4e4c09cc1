"""Chromium in a network namespace of its own, reaching the hub through a relay on its loopback.

Chromium aborts the loads it has in flight (net::ERR_NETWORK_CHANGED) whenever it sees an
interface of its network namespace change, loopback loads included, and it has no switch to stop
watching. On the host that happens under it: the node ClusterSet starts in the background as the
session begins (tests/nodes/early.py) and makes bridges and veths then, and a CI run saw the
dashboard's first navigation dropped so. In a namespace that holds only its loopback, nothing
changes. A relay listens on that loopback at the hub's port and passes the bytes, unread, to the
hub on the host's loopback: TLS still runs from Chromium to the hub.

A named namespace needs root. Without root, Chromium runs on the host's network; then no test
of ours makes interfaces either (those that do need root).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from collections.abc import AsyncIterator
from pathlib import Path

from agent.linux.netns import async_call_in_netns
from tests.datapath.topology import sh
from tests.tcp_proxy import TcpProxy


def available() -> bool:
    return os.geteuid() == 0


@contextlib.asynccontextmanager
async def chromium_in_own_network(chromium: Path, port: int, workdir: Path) -> AsyncIterator[Path]:
    """A namespace with its loopback up and a relay on 127.0.0.1:``port`` there to the same port on the
    host; yields an executable that runs ``chromium`` inside it. Everything goes at exit."""
    name = f"mcbrowser{secrets.token_hex(3)}"
    await sh("ip", "netns", "add", name)
    proxy = TcpProxy(port)
    try:
        await sh("ip", "-n", name, "link", "set", "lo", "up")
        listener = await async_call_in_netns(name, lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        listener.bind(("127.0.0.1", port))
        listener.setblocking(False)
        await proxy.start(listener)
        launcher = workdir / "chromium-in-own-network"
        launcher.write_text(f'#!/bin/sh\nexec ip netns exec {name} {chromium} "$@"\n')
        launcher.chmod(0o755)
        try:
            yield launcher
        finally:
            await proxy.stop()
    finally:
        await sh("ip", "netns", "del", name, check=False)
