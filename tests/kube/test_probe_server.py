"""ProbeServer serves /healthz always, and /readyz and /metrics only when given what they show."""

from __future__ import annotations

import aiohttp
import pytest
from prometheus_client import CollectorRegistry, Counter

from kube.probe_server import ProbeServer, parse_address


async def _get(server: ProbeServer, path: str) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http, http.get(f"http://127.0.0.1:{server.port}{path}") as reply:
        return reply.status, await reply.text()


async def test_readiness_says_why_it_is_not_ready() -> None:
    ready = [False, "no hub yet"]
    server = ProbeServer("127.0.0.1:0", readiness=lambda: (bool(ready[0]), str(ready[1])))
    await server.start()
    try:
        assert await _get(server, "/healthz") == (200, "ok")
        assert await _get(server, "/readyz") == (503, "no hub yet")
        ready[:] = [True, ""]
        assert await _get(server, "/readyz") == (200, "ok")
        assert (await _get(server, "/metrics"))[0] == 404  # no registry: nothing to scrape
    finally:
        await server.stop()


async def test_metrics_without_readiness() -> None:
    registry = CollectorRegistry()
    Counter("probe_test_total", "A counter", registry=registry).inc()
    server = ProbeServer("127.0.0.1:0", registry=registry)
    await server.start()
    try:
        status, text = await _get(server, "/metrics")
        assert status == 200 and "probe_test_total 1.0" in text
        assert (await _get(server, "/readyz"))[0] == 404
    finally:
        await server.stop()


def test_an_address_without_a_port_names_what_it_is() -> None:
    with pytest.raises(ValueError, match="health address must be HOST:PORT"):
        ProbeServer("localhost", what="health address")


@pytest.mark.parametrize(
    ("address", "parsed"),
    [("127.0.0.1:51823", ("127.0.0.1", 51823)), (":8080", ("0.0.0.0", 8080)), ("[::1]:9000", ("::1", 9000))],
)
def test_an_address_is_host_and_port(address: str, parsed: tuple[str, int]) -> None:
    assert parse_address(address) == parsed


@pytest.mark.parametrize("address", ["localhost", "127.0.0.1:", "127.0.0.1:http", "127.0.0.1:65536"])
def test_an_address_without_a_usable_port_is_refused(address: str) -> None:
    with pytest.raises(ValueError, match=f"probe address must be HOST:PORT, got '{address}'"):
        parse_address(address)
