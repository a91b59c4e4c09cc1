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

import asyncio
import contextlib
import os
import secrets
import socket
from collections.abc import AsyncIterator
from pathlib import Path

from agent.linux.netns import async_call_in_netns
from tests.datapath.topology import sh

CHUNK = 64 * 1024


def available() -> bool:
    return os.geteuid() == 0


@contextlib.asynccontextmanager
async def chromium_in_own_network(chromium: Path, port: int, workdir: Path) -> AsyncIterator[Path]:
    """A namespace with its loopback up and a relay on 127.0.0.1:``port`` there to the same port on the
    host; yields an executable that runs ``chromium`` inside it. Everything goes at exit."""
    name = f"mcbrowser{secrets.token_hex(3)}"
    await sh("ip", "netns", "add", name)
    connections: set[asyncio.Task[None]] = set()
    try:
        await sh("ip", "-n", name, "link", "set", "lo", "up")
        listener = await async_call_in_netns(name, lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
        listener.bind(("127.0.0.1", port))
        listener.setblocking(False)

        async def relay(browser_reader: asyncio.StreamReader, browser_writer: asyncio.StreamWriter) -> None:
            task = asyncio.current_task()
            assert task is not None
            connections.add(task)
            try:
                hub_reader, hub_writer = await asyncio.open_connection("127.0.0.1", port)
            except OSError:
                browser_writer.close()
                connections.discard(task)
                return
            try:
                await asyncio.gather(_pump(browser_reader, hub_writer), _pump(hub_reader, browser_writer))
            finally:
                for writer in (browser_writer, hub_writer):
                    writer.close()
                connections.discard(task)

        server = await asyncio.start_server(relay, sock=listener)
        launcher = workdir / "chromium-in-own-network"
        launcher.write_text(f'#!/bin/sh\nexec ip netns exec {name} {chromium} "$@"\n')
        launcher.chmod(0o755)
        try:
            yield launcher
        finally:
            server.close()
            for task in list(connections):
                task.cancel()
            await asyncio.gather(*connections, return_exceptions=True)
            await server.wait_closed()
    finally:
        await sh("ip", "netns", "del", name, check=False)


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy until either side ends; then end the other direction too."""
    try:
        while data := await reader.read(CHUNK):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()
