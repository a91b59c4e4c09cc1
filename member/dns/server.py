"""The clusterset.local server's sockets: UDP and TCP on one address (asyncio).

UDP: every datagram is answered in ``datagram_received``, from memory, before the next one is
read: no task, no queue, so a flood costs CPU and nothing else. While the socket's send buffer
holds more than ``udp_backlog_bytes`` (the network, not us, is the bottleneck) queries are
dropped instead of answered, so answers never pile up in memory.

TCP (RFC 7766): two-byte length-prefixed messages, answered in order on the connection. At
most ``max_tcp_connections`` are open at once (another is closed at once), and a connection
idle for ``tcp_idle_timeout`` seconds, or whose peer does not read its answers for as long,
is closed. A message the responder drops (a response, a header cut short) closes the
connection: a peer sending those is not a resolver.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import Callable
from typing import Any, cast

from kube.waiting import cancel_and_wait
from member.dns.answer import Responder

log = logging.getLogger(__name__)

DEFAULT_MAX_TCP_CONNECTIONS = 128
DEFAULT_TCP_IDLE_TIMEOUT = 10.0
DEFAULT_UDP_BACKLOG_BYTES = 1 << 20
_BIND_ATTEMPTS = 5


def split_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` or ``[V6]:PORT`` -> (host, port); an empty host is every IPv4 address."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or not 0 <= int(port) < 65536:
        raise ValueError(f"DNS address {address!r} is not HOST:PORT")
    return host.strip("[]") or "0.0.0.0", int(port)


class _Udp(asyncio.DatagramProtocol):
    def __init__(self, responder: Responder, backlog_bytes: int) -> None:
        self._responder = responder
        self._backlog_bytes = backlog_bytes
        self.transport: asyncio.DatagramTransport | None = None
        self._buffered: Callable[[], int] = lambda: 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A datagram endpoint's transport (the selector loop's does not derive from DatagramTransport).
        self.transport = cast(asyncio.DatagramTransport, transport)
        # It has get_write_buffer_size, though DatagramTransport does not declare it.
        self._buffered = getattr(transport, "get_write_buffer_size", self._buffered)

    def datagram_received(self, data: bytes, addr: Any) -> None:
        transport = self.transport
        if transport is None:
            return
        if self._buffered() > self._backlog_bytes:
            self._responder.metrics.drop("backlog")
            return
        reply = self._responder.respond(data, udp=True)
        if reply is not None:
            transport.sendto(reply, addr)

    def error_received(self, exc: Exception) -> None:
        # ICMP port unreachable from a client that went away, and the like: nothing to do.
        log.debug("dnsUdpError", extra={"error": str(exc)})


class DnsServer:
    def __init__(
        self,
        address: str,
        responder: Responder,
        *,
        max_tcp_connections: int = DEFAULT_MAX_TCP_CONNECTIONS,
        tcp_idle_timeout: float = DEFAULT_TCP_IDLE_TIMEOUT,
        udp_backlog_bytes: int = DEFAULT_UDP_BACKLOG_BYTES,
    ) -> None:
        """``address``: HOST:PORT for both UDP and TCP (port 0: a free one, the same for both)."""
        self.host, self._wanted_port = split_address(address)
        self.responder = responder
        self.max_tcp_connections = max_tcp_connections
        self.tcp_idle_timeout = tcp_idle_timeout
        self.udp_backlog_bytes = udp_backlog_bytes
        self.port = 0
        self._udp: asyncio.DatagramTransport | None = None
        self._tcp: asyncio.Server | None = None
        self._connections: set[asyncio.StreamWriter] = set()
        self._handlers: set[asyncio.Task[None]] = set()

    @property
    def address(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{host}:{self.port}"

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        for attempt in range(_BIND_ATTEMPTS):
            udp, _ = await loop.create_datagram_endpoint(
                lambda: _Udp(self.responder, self.udp_backlog_bytes),
                local_addr=(self.host, self._wanted_port),
                family=family,
            )
            port = udp.get_extra_info("sockname")[1]
            try:
                self._tcp = await asyncio.start_server(
                    self._serve_tcp, self.host, port, family=family, reuse_address=True
                )
            except OSError:
                udp.close()
                # A free UDP port whose TCP twin is taken: only worth another try when we chose it.
                if self._wanted_port or attempt == _BIND_ATTEMPTS - 1:
                    raise
                continue
            self._udp, self.port = udp, port
            break
        log.info("dnsServing", extra={"address": self.address})

    async def stop(self) -> None:
        if self._udp is not None:
            self._udp.close()
            self._udp = None
        if self._tcp is not None:
            self._tcp.close()
            for writer in list(self._connections):
                writer.close()
            await cancel_and_wait(*self._handlers)
            await self._tcp.wait_closed()
            self._tcp = None

    async def _serve_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        metrics = self.responder.metrics
        if len(self._connections) >= self.max_tcp_connections:
            metrics.drop("tcp_limit")
            writer.close()
            return
        task = asyncio.current_task()
        if task is not None:
            self._handlers.add(task)
        self._connections.add(writer)
        metrics.tcp_connections.inc()
        try:
            await self._answer_tcp(reader, writer)
        except (asyncio.IncompleteReadError, TimeoutError, ConnectionError):
            pass  # the peer went away, sent half a message or stalled: the connection ends
        except asyncio.CancelledError:
            pass  # the server stops
        except Exception:
            log.exception("dnsTcpFailed")
        finally:
            self._connections.discard(writer)
            if task is not None:
                self._handlers.discard(task)
            metrics.tcp_connections.dec()
            writer.close()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(1.0):
                    await writer.wait_closed()

    async def _answer_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            async with asyncio.timeout(self.tcp_idle_timeout):
                try:
                    header = await reader.readexactly(2)
                except asyncio.IncompleteReadError as end:
                    if not end.partial:
                        return  # closed between messages: the normal end
                    raise
                # At most 65535 bytes: bounded whatever the peer claims.
                message = await reader.readexactly(int.from_bytes(header, "big"))
            reply = self.responder.respond(message, udp=False)
            if reply is None:
                return
            writer.write(len(reply).to_bytes(2, "big") + reply)
            async with asyncio.timeout(self.tcp_idle_timeout):
                await writer.drain()
