"""Tiny TCP tools run in Pod namespaces: an echo server that reports the peer address.

Sockets are created inside the namespace and then driven by the test's event loop,
so no helper process is needed and every socket closes with its fixture.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator

from agent.linux.netns import async_call_in_netns

ECHO_PORT = 7070


async def _socket_in(netns: str) -> socket.socket:
    sock = await async_call_in_netns(netns, lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM))
    sock.setblocking(False)
    return sock


@contextlib.asynccontextmanager
async def peer_reporting_server(netns: str, port: int = ECHO_PORT) -> AsyncIterator[None]:
    """A TCP server in ``netns`` that answers each connection with the peer's IP."""
    sock = await _socket_in(netns)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("0.0.0.0", port))

    async def report(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(str(writer.get_extra_info("peername")[0]).encode())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(report, sock=sock)
    try:
        yield
    finally:
        server.close()
        await server.wait_closed()


async def seen_source(netns: str, ip: str, port: int = ECHO_PORT, deadline: float = 3.0) -> str:
    """Connect from ``netns`` to ip:port; return the source address the server saw."""
    sock = await _socket_in(netns)
    try:
        async with asyncio.timeout(deadline):
            await asyncio.get_running_loop().sock_connect(sock, (ip, port))
            reader, writer = await asyncio.open_connection(sock=sock)
            try:
                data = await reader.read(100)
            finally:
                writer.close()
        return data.decode()
    finally:
        sock.close()


async def unreachable(netns: str, ip: str, port: int = ECHO_PORT, deadline: float = 1.0) -> bool:
    """True if a connection from ``netns`` to ip:port fails (refused, unreachable, timeout)."""
    try:
        await seen_source(netns, ip, port, deadline)
    except (OSError, TimeoutError):
        return True
    return False


async def eventually_seen_source(netns: str, ip: str, port: int = ECHO_PORT, deadline: float = 10.0) -> str:
    """seen_source, retried until ``deadline`` (for paths that need a handshake first)."""
    loop = asyncio.get_running_loop()
    end = loop.time() + deadline
    while True:
        try:
            return await seen_source(netns, ip, port, deadline=min(2.0, max(0.1, end - loop.time())))
        except (OSError, TimeoutError):
            if loop.time() >= end:
                raise
            await asyncio.sleep(0.1)
