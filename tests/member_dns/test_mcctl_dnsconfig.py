"""`mcctl get dnsconfig`: the CoreDNS stanza that forwards clusterset.local to the member's DNS
Service, read from a sandbox member cluster; deploy/INSTALL.md shows the same stanza."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from ctl.dnsconfig import SERVICE, stanza
from ctl.main import main
from kube.client import KubeClient
from kube.resources import SERVICES
from sandbox.server import SandboxServer
from tests.deploy import manifests
from tests.kubeenv.cluster import ensure_namespace, sandbox_cluster

INSTALL = Path(__file__).resolve().parents[2] / "deploy" / "INSTALL.md"


async def mcctl(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    capsys.readouterr()
    code = await asyncio.to_thread(main, [str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
async def member(tmp_path: Path) -> AsyncIterator[tuple[SandboxServer, KubeClient]]:
    async with sandbox_cluster(tmp_path / "east", name="east", service_cidr="10.112.0.0/16") as pair:
        yield pair


async def _create_dns_service(client: KubeClient, namespace: str = "kube-system") -> str:
    """The Service as the member manifest ships it; its ClusterIP."""
    service = manifests.find(manifests.load(manifests.MEMBER), "Service", SERVICE)
    service["metadata"]["namespace"] = namespace
    await ensure_namespace(client, namespace)
    created = await client.create(SERVICES, service, namespace=namespace)
    return str(created["spec"]["clusterIP"])


async def test_get_dnsconfig_prints_the_stanza_forwarding_to_the_services_cluster_ip(
    member: tuple[SandboxServer, KubeClient], capsys: pytest.CaptureFixture[str]
) -> None:
    server, client = member
    ip = await _create_dns_service(client)
    code, out, _ = await mcctl(capsys, "--kubeconfig", server.kubeconfig_path, "get", "dnsconfig")
    assert code == 0
    assert stanza(ip) in out
    assert f"forward . {ip}" in out
    assert out.count("{") == out.count("}")


async def test_get_dnsconfig_reads_the_member_namespace_given(
    member: tuple[SandboxServer, KubeClient], capsys: pytest.CaptureFixture[str]
) -> None:
    server, client = member
    ip = await _create_dns_service(client, "mc-member")
    code, out, _ = await mcctl(capsys, "get", "dnsconfig", "-n", "mc-member", "--kubeconfig", server.kubeconfig_path)
    assert code == 0
    assert f"forward . {ip}" in out


async def test_get_dnsconfig_without_the_service_is_not_found_and_says_what_to_deploy(
    member: tuple[SandboxServer, KubeClient], capsys: pytest.CaptureFixture[str]
) -> None:
    server, _ = member
    code, out, err = await mcctl(capsys, "--kubeconfig", server.kubeconfig_path, "get", "dnsconfig")
    assert code == 3
    assert out == ""
    assert SERVICE in err and "antrea-multicluster-member.yml" in err


def test_the_stanza_is_the_one_install_md_shows() -> None:
    assert stanza("10.96.0.53") in INSTALL.read_text()
