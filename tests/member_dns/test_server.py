"""The server on real loopback sockets: dig and dnspython over UDP and TCP, bad input, floods."""

from __future__ import annotations

import asyncio
import contextlib
import shutil
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import dns.asyncquery
import dns.exception
import dns.flags
import dns.message
import dns.rcode
import pytest
from prometheus_client import CollectorRegistry

from member.dns.answer import Responder
from member.dns.metrics import DnsMetrics
from member.dns.server import DnsServer
from member.dns.zone import ClustersetZone
from tests.member_dns.objects import endpoint, endpoint_slice, service_import
from tests.needs import needs, tool_missing

NAME = "nginx.web.svc.clusterset.local."
BIG = "big.web.svc.clusterset.local."
DIG = shutil.which("dig")
needs_dig = needs(tool_missing("dig", package="dnsutils"))


class Served:
    def __init__(self, server: DnsServer, registry: CollectorRegistry) -> None:
        self.server = server
        self.registry = registry
        self.port = server.port

    def sample(self, name: str, **labels: str) -> float:
        return self.registry.get_sample_value(name, labels) or 0.0

    async def dig(self, *args: str) -> str:
        assert DIG is not None
        process = await asyncio.create_subprocess_exec(
            DIG, "@127.0.0.1", "-p", str(self.port), "+time=2", "+tries=1", *args, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await process.communicate()
        return out.decode()

    async def udp(self, name: str, rdtype: str = "A", wait: float = 2, **kw: Any) -> dns.message.Message:
        query = dns.message.make_query(name, rdtype, **kw)
        return await dns.asyncquery.udp(query, "127.0.0.1", port=self.port, timeout=wait)

    async def until(self, holds: Callable[[], bool], within: float = 2.0) -> None:
        """Poll (the metrics have no event to await) until ``holds()``."""
        for _ in range(int(within / 0.01)):
            if holds():
                return
            await asyncio.sleep(0.01)
        raise AssertionError(f"not within {within}s")

    async def tcp(self, name: str, rdtype: str = "A") -> dns.message.Message:
        return await dns.asyncquery.tcp(dns.message.make_query(name, rdtype), "127.0.0.1", port=self.port, timeout=2)


def zone() -> ClustersetZone:
    z = ClustersetZone()
    z.put_service_import(service_import("nginx", "web", ips=["10.112.0.5"], ports=[("http", 80, "TCP")]))
    z.put_service_import(service_import("big", "web", headless=True))
    many = [endpoint(f"10.1.{i // 250}.{i % 250 + 1}", f"pod-{i}") for i in range(100)]
    z.put_endpoint_slice(endpoint_slice("big", "west", many, "web"))
    return z


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    registry = CollectorRegistry()
    metrics = DnsMetrics()
    metrics.register(registry)
    server = DnsServer("127.0.0.1:0", Responder(zone(), metrics), max_tcp_connections=4, tcp_idle_timeout=0.5)
    await server.start()
    try:
        yield Served(server, registry)
    finally:
        await server.stop()


@needs_dig
async def test_dig_resolves_a_and_srv(served: Served) -> None:
    assert (await served.dig(NAME, "A", "+short")).split() == ["10.112.0.5"]
    out = await served.dig("_http._tcp." + NAME, "SRV")
    assert "status: NOERROR" in out and " aa" in out.split("flags:")[1].split(";")[0]
    assert "0 100 80 nginx.web.svc.clusterset.local." in out
    assert "ADDITIONAL SECTION" in out and "10.112.0.5" in out.split("ADDITIONAL SECTION")[1]


@needs_dig
async def test_dig_sees_nxdomain_no_data_and_refused(served: Served) -> None:
    assert "status: NXDOMAIN" in await served.dig("gone.web.svc.clusterset.local.", "A")
    no_data = await served.dig(NAME, "AAAA")
    assert "status: NOERROR" in no_data and "ANSWER: 0" in no_data
    assert "status: REFUSED" in await served.dig("kubernetes.default.svc.cluster.local.", "A")


@needs_dig
async def test_dig_gets_tc_over_udp_and_the_whole_answer_over_tcp(served: Served) -> None:
    truncated = await served.dig(BIG, "A", "+ignore", "+noedns")
    flags = truncated.split("flags:")[1].split(";")[0]
    assert " tc" in flags
    # dig itself retries over TCP on TC, as resolvers do.
    assert len((await served.dig(BIG, "A", "+short")).split()) == 100
    assert len((await served.dig(BIG, "A", "+short", "+tcp")).split()) == 100


async def test_dnspython_over_udp_and_tcp(served: Served) -> None:
    answer = await served.udp("NGINX.WEB.svc.clusterset.local.")
    assert [r.to_text() for rrset in answer.answer for r in rrset] == ["10.112.0.5"]
    truncated = await served.udp(BIG, use_edns=0, payload=1232)
    assert truncated.flags & dns.flags.TC
    whole = await served.tcp(BIG)
    assert len(whole.answer[0]) == 100
    assert served.sample("mchub_dns_queries_total", type="A", rcode="NOERROR") == 3
    assert served.sample("mchub_dns_truncated_total") == 1


async def test_several_messages_on_one_tcp_connection_are_answered_in_order(served: Served) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    queries = [dns.message.make_query(NAME, "A"), dns.message.make_query("gone.web.svc.clusterset.local.", "A")]
    writer.write(b"".join(q.to_wire(prepend_length=True) for q in queries))
    await writer.drain()
    rcodes = []
    for query in queries:
        length = int.from_bytes(await reader.readexactly(2), "big")
        answer = dns.message.from_wire(await reader.readexactly(length))
        assert answer.id == query.id
        rcodes.append(answer.rcode())
    assert rcodes == [dns.rcode.NOERROR, dns.rcode.NXDOMAIN]
    writer.close()


async def test_a_udp_flood_of_garbage_and_queries_is_answered_or_dropped_and_the_server_goes_on(
    served: Served,
) -> None:
    flood = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    flood.setblocking(False)
    try:
        valid = dns.message.make_query(NAME, "A").to_wire()
        payloads = [valid, b"\xff" * 40, b"\x00\x01", b"\x00\x01\x01\x00" + b"\x00" * 8 + b"\xc0\x0c" * 300, b""]
        sent = 0
        for i in range(5000):
            try:
                flood.sendto(payloads[i % len(payloads)], ("127.0.0.1", served.port))
                sent += 1
            except BlockingIOError:
                await asyncio.sleep(0)  # our own send buffer is full: let the server read
        assert sent > 1000
        # What the kernel could not queue was dropped before the server saw it (UDP under a
        # flood); a client that asks again, as resolvers do, is answered.
        answer = None
        for _ in range(5):
            with contextlib.suppress(dns.exception.Timeout):
                answer = await served.udp(NAME, wait=1)
                break
        assert answer is not None and answer.rcode() == dns.rcode.NOERROR
        assert served.sample("mchub_dns_queries_total", type="none", rcode="FORMERR") > 0
        assert served.sample("mchub_dns_dropped_total", reason="short") > 0
    finally:
        flood.close()


async def test_tcp_connections_over_the_limit_are_closed_at_once(served: Served) -> None:
    held = [await asyncio.open_connection("127.0.0.1", served.port) for _ in range(4)]
    await served.until(lambda: served.sample("mchub_dns_tcp_connections") == 4)
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    async with asyncio.timeout(2):
        assert await reader.read() == b""
    writer.close()
    assert served.sample("mchub_dns_dropped_total", reason="tcp_limit") == 1
    for _, w in held:
        w.close()
    await served.until(lambda: served.sample("mchub_dns_tcp_connections") == 0)
    assert (await served.tcp(NAME)).rcode() == dns.rcode.NOERROR


async def test_idle_and_half_sent_tcp_connections_are_closed(served: Served) -> None:
    idle_reader, idle = await asyncio.open_connection("127.0.0.1", served.port)
    half_reader, half = await asyncio.open_connection("127.0.0.1", served.port)
    half.write(b"\x00\x40" + b"\x00" * 10)  # announces 64 bytes, sends 10
    await half.drain()
    async with asyncio.timeout(3):
        assert await idle_reader.read() == b""
        assert await half_reader.read() == b""
    idle.close()
    half.close()


async def test_an_oversized_tcp_message_is_formerr(served: Served) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    writer.write(b"\xff\xff" + b"\x12\x34\x01\x00" + b"\x00" * 65531)
    await writer.drain()
    length = int.from_bytes(await reader.readexactly(2), "big")
    answer = dns.message.from_wire(await reader.readexactly(length))
    assert (answer.id, answer.rcode()) == (0x1234, dns.rcode.FORMERR)
    writer.close()


async def test_a_response_sent_over_tcp_ends_the_connection(served: Served) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", served.port)
    response = dns.message.make_response(dns.message.make_query(NAME, "A"))
    writer.write(response.to_wire(prepend_length=True))
    await writer.drain()
    async with asyncio.timeout(2):
        assert await reader.read() == b""
    writer.close()
