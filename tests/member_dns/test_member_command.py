"""`mchub member --dns-address`: the member process serves clusterset.local from its imports."""

from __future__ import annotations

import asyncio
import re
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import dns.asyncquery
import dns.message
import dns.rcode
import pytest
from prometheus_client import generate_latest

from kube.client import KubeClient
from mcapi.resources import SERVICE_IMPORTS_V1BETA1
from member.app import MemberApp
from member.config import MemberOptions
from member.dns.service import DnsOptions
from sandbox.server import SandboxServer
from tests.kubeenv.cluster import ensure_namespace, sandbox_cluster
from tests.member_dns.objects import service_import

NAME = "nginx.web.svc.clusterset.local."


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[SandboxServer, KubeClient]]:
    async with sandbox_cluster(tmp_path / "east", name="east") as (server, client):
        await ensure_namespace(client, "web")
        await client.create(
            SERVICE_IMPORTS_V1BETA1, service_import("nginx", "web", ips=["10.112.0.5"]), namespace="web"
        )
        yield server, client


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_member_command_serves_dns_and_its_metrics_and_exits_cleanly(
    cluster: tuple[SandboxServer, KubeClient],
) -> None:
    server, _ = cluster
    health_port = free_port()
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mchub_cli.main",
        "member",
        "--kubeconfig",
        str(server.kubeconfig_path),
        "--dns-address",
        "127.0.0.1:0",
        "--dns-ttl",
        "7",
        "--health-address",
        f"127.0.0.1:{health_port}",
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        port = 0
        async with asyncio.timeout(30):
            while not port:
                line = (await process.stdout.readline()).decode()
                assert line, "the member exited before serving DNS"
                found = re.search(r"clusterset.local DNS on 127.0.0.1:(\d+)", line)
                port = int(found.group(1)) if found else 0
        answer = await dns.asyncquery.udp(dns.message.make_query(NAME, "A"), "127.0.0.1", port=port, timeout=2)
        assert [(rrset.ttl, r.to_text()) for rrset in answer.answer for r in rrset] == [(7, "10.112.0.5")]
        async with aiohttp.ClientSession() as http:
            async with asyncio.timeout(30):
                while True:  # health serves once the member printed its last line
                    try:
                        response = await http.get(f"http://127.0.0.1:{health_port}/metrics")
                        break
                    except aiohttp.ClientConnectionError:
                        await asyncio.sleep(0.1)
            exposed = await response.text()
        assert 'mchub_dns_queries_total{rcode="NOERROR",type="A"} 1.0' in exposed
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), 15)
    assert process.returncode == 0, stderr.decode()


@pytest.mark.parametrize("address", ["nowhere", "127.0.0.1:99999", "127.0.0.1:"])
async def test_a_bad_dns_address_exits_2(cluster: tuple[SandboxServer, KubeClient], address: str) -> None:
    server, _ = cluster
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mchub_cli.main",
        "member",
        "--kubeconfig",
        str(server.kubeconfig_path),
        "--dns-address",
        address,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2
    assert "HOST:PORT" in stderr.decode()


async def test_a_member_app_with_dns_options_serves_and_counts_on_its_registry(
    cluster: tuple[SandboxServer, KubeClient],
) -> None:
    _, client = cluster
    app = MemberApp(client, options=MemberOptions(dns=DnsOptions("127.0.0.1:0")))
    await app.start()
    try:
        assert app.dns is not None
        port = app.dns.server.port
        answer = await dns.asyncquery.udp(dns.message.make_query(NAME, "A"), "127.0.0.1", port=port, timeout=2)
        assert answer.rcode() == dns.rcode.NOERROR
        exposed = generate_latest(app.registry).decode()
        assert 'mchub_dns_queries_total{rcode="NOERROR",type="A"} 1.0' in exposed
    finally:
        await app.stop()
    assert app.dns is None
