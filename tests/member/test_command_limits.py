"""`mchub member --kube-api-qps/--kube-api-burst/--import-workers/--export-workers`: the member's
client limit and workers, and the limit and the request counter on its /metrics."""

from __future__ import annotations

import asyncio
import signal
import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from kube.client import KubeClient
from sandbox.server import SandboxServer
from tests.kubeenv.cluster import sandbox_cluster


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[tuple[SandboxServer, KubeClient]]:
    async with sandbox_cluster(tmp_path / "east", name="east") as (server, client):
        yield server, client


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def _member(server: SandboxServer, *flags: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "mchub_cli.main",
        "member",
        "--kubeconfig",
        str(server.kubeconfig_path),
        *flags,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def test_the_members_qps_limit_and_its_requests_show_on_its_metrics(
    cluster: tuple[SandboxServer, KubeClient],
) -> None:
    server, _ = cluster
    health_port = free_port()
    process = await _member(
        server,
        "--kube-api-qps",
        "50",
        "--kube-api-burst",
        "60",
        "--import-workers",
        "3",
        "--health-address",
        f"127.0.0.1:{health_port}",
    )
    try:
        async with aiohttp.ClientSession() as http:
            async with asyncio.timeout(30):
                while True:  # health serves once the member has started
                    try:
                        response = await http.get(f"http://127.0.0.1:{health_port}/metrics")
                        break
                    except aiohttp.ClientConnectionError:
                        await asyncio.sleep(0.1)
            exposed = await response.text()
    finally:
        process.send_signal(signal.SIGTERM)
        _, stderr = await asyncio.wait_for(process.communicate(), 15)
    assert process.returncode == 0, stderr.decode()
    host = server.url
    assert f'rest_client_rate_limit_qps{{host="{host}"}} 50.0' in exposed
    assert f'rest_client_rate_limit_burst{{host="{host}"}} 60.0' in exposed
    # It read its config and watched for its ClusterSet: counted by verb, resource and code.
    assert f'rest_client_requests_total{{code="200",host="{host}",method="GET",resource="clustersets.' in exposed


@pytest.mark.parametrize("flags", [("--import-workers", "0"), ("--export-workers", "0")])
async def test_no_workers_is_refused_with_exit_2(
    cluster: tuple[SandboxServer, KubeClient], flags: tuple[str, str]
) -> None:
    server, _ = cluster
    process = await _member(server, *flags)
    _, stderr = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2
    assert "workers must be at least 1" in stderr.decode()
