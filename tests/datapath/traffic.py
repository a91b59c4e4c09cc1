"""Tiny TCP and UDP tools run in Pod namespaces: an echo server that reports the peer address,
and a UDP echo with a client that counts the datagrams whose echo did not come back.

Sockets are created inside the namespace and then driven by the test's event loop,
so no helper process is needed and every socket closes with its fixture.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from agent.linux.netns import async_call_in_netns

ECHO_PORT = 7070


async def _socket_in(netns: str, kind: int = socket.SOCK_STREAM) -> socket.socket:
    sock = await async_call_in_netns(netns, lambda: socket.socket(socket.AF_INET, kind))
    sock.setblocking(False)
    return sock


@contextlib.asynccontextmanager
async def peer_reporting_server(netns: str, port: int = ECHO_PORT, *, echo: bool = False) -> AsyncIterator[None]:
    """A TCP server in ``netns`` that answers each connection with the peer's IP; with ``echo``,
    that IP and a newline, then every line the connection sends back (open_reported, echoes)."""
    sock = await _socket_in(netns)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("0.0.0.0", port))

    async def report(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(str(writer.get_extra_info("peername")[0]).encode() + (b"\n" if echo else b""))
        with contextlib.suppress(OSError):
            await writer.drain()
            while echo and (line := await reader.readline()):
                writer.write(line)
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


async def open_reported(
    netns: str, ip: str, port: int = ECHO_PORT
) -> tuple[str, asyncio.StreamReader, asyncio.StreamWriter]:
    """A connection from ``netns`` to an echoing peer_reporting_server, kept open, and the source
    address the server saw."""
    sock = await _socket_in(netns)
    async with asyncio.timeout(3):
        await asyncio.get_running_loop().sock_connect(sock, (ip, port))
        reader, writer = await asyncio.open_connection(sock=sock)
        source = (await reader.readline()).decode().strip()
    return source, reader, writer


async def echoes(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bool:
    """Whether a connection from open_reported still carries a line there and back."""
    try:
        async with asyncio.timeout(2):
            writer.write(b"ping\n")
            await writer.drain()
            return await reader.readline() == b"ping\n"
    except (OSError, TimeoutError):
        return False


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


@contextlib.asynccontextmanager
async def udp_echo_server(netns: str, port: int = ECHO_PORT) -> AsyncIterator[None]:
    """A UDP server in ``netns`` that sends every datagram back to where it came from."""
    sock = await _socket_in(netns, socket.SOCK_DGRAM)
    sock.bind(("0.0.0.0", port))
    loop = asyncio.get_running_loop()

    async def echo() -> None:
        while True:
            data, peer = await loop.sock_recvfrom(sock, 64)
            await loop.sock_sendto(sock, data, peer)

    task = asyncio.create_task(echo(), name=f"udp-echo-{netns}")
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        sock.close()


@dataclass
class Pings:
    """What ``udp_pings`` counted: datagrams answered, and the sequence numbers of those lost."""

    answered: int = 0
    lost: list[int] = field(default_factory=list)


@contextlib.asynccontextmanager
async def udp_pings(
    netns: str, ip: str, port: int = ECHO_PORT, *, interval: float = 0.02, wait: float = 1.0
) -> AsyncIterator[Pings]:
    """From ``netns``, one numbered datagram at a time to ip:port, every ``interval`` until the
    context ends; one whose echo is not back within ``wait`` seconds is lost (the one in flight at
    the end is not counted)."""
    sock = await _socket_in(netns, socket.SOCK_DGRAM)
    loop = asyncio.get_running_loop()
    pings = Pings()

    async def echoed(seq: bytes) -> None:
        while (await loop.sock_recv(sock, 64)) != seq:
            pass  # a late echo of a datagram already counted lost

    async def send() -> None:
        for number in itertools.count():
            seq = str(number).encode()
            await loop.sock_sendto(sock, seq, (ip, port))
            try:
                async with asyncio.timeout(wait):
                    await echoed(seq)
                pings.answered += 1
            except TimeoutError:
                pings.lost.append(number)
            await asyncio.sleep(interval)

    task = asyncio.create_task(send(), name=f"udp-pings-{netns}")
    try:
        yield pings
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        sock.close()
