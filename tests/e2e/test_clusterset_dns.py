"""clusterset.local DNS end to end: west (and north) export, east's member answers the MCS names.

Three sandbox clusters joined to one hub (tests/e2e/conftest.py); east's member is restarted
with ``--dns-address`` (a MemberApp with DnsOptions), and queries go to it with dig (Debian
dnsutils) and dnspython, as a Pod's resolver would after CoreDNS forwarded clusterset.local.
"""

from __future__ import annotations

import asyncio
import shutil
import time
from collections.abc import AsyncIterator
from typing import Any

import dns.asyncquery
import dns.message
import dns.rcode
import pytest
import pytest_asyncio

from kube.client import KubeClient
from kube.resources import ENDPOINTS, SERVICES
from mcapi.resources import SERVICE_EXPORTS
from mchub_cli.localset import LocalClusterSet
from member.app import MemberApp
from member.config import MemberOptions
from member.dns.service import DnsOptions
from tests.e2e.mcs import (
    WAIT,
    consistently,
    eventually,
    export,
    export_condition,
    service,
    service_import,
    unexport,
)
from tests.needs import needs, tool_missing

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

NORTH, EAST, WEST = "test-cluster-north", "test-cluster-east", "test-cluster-west"
DIG = shutil.which("dig")
needs_dig = needs(tool_missing("dig", package="dnsutils"))
# A DNS answer follows the ServiceImport through one watch event: well under a second.
DNS_LAG = 1.0


class EastDns:
    def __init__(self, port: int) -> None:
        self.port = port

    async def dig(self, *args: str) -> str:
        assert DIG is not None, "a test that digs is marked needs_dig"
        process = await asyncio.create_subprocess_exec(
            DIG, "@127.0.0.1", "-p", str(self.port), "+time=2", "+tries=1", *args, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await process.communicate()
        return out.decode()

    async def short(self, name: str, rdtype: str = "A") -> list[str]:
        return sorted((await self.dig(name, rdtype, "+short")).split("\n")[:-1])

    async def ask(self, name: str, rdtype: str = "A") -> dns.message.Message:
        query = dns.message.make_query(name, rdtype)
        return await dns.asyncquery.udp(query, "127.0.0.1", port=self.port, timeout=2)

    async def values(self, name: str, rdtype: str = "A") -> list[str] | None:
        """The answer's values, sorted; None for NXDOMAIN."""
        reply = await self.ask(name, rdtype)
        if reply.rcode() == dns.rcode.NXDOMAIN:
            return None
        return sorted(r.to_text() for rrset in reply.answer for r in rrset)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def east_dns(clusterset: LocalClusterSet) -> AsyncIterator[EastDns]:
    """East's member, restarted with clusterset.local DNS on a free loopback port."""
    await clusterset.stop_member(EAST)
    cluster = clusterset.clusters[EAST]
    member = MemberApp(
        cluster.client, clusterset.member_namespace, options=MemberOptions(dns=DnsOptions("127.0.0.1:0"))
    )
    await member.start()
    cluster.member = member
    assert member.dns is not None
    yield EastDns(member.dns.server.port)


def fqdn(name: str, namespace: str) -> str:
    return f"{name}.{namespace}.svc.clusterset.local."


async def export_headless(
    client: KubeClient, namespace: str, name: str, pods: dict[str, str], port: tuple[str, int] = ("pg", 5432)
) -> None:
    """A headless Service whose Endpoints name their Pods (hostname -> IP), and its ServiceExport."""
    svc = service(name, [(port[0], port[1], "TCP")], headless=True)
    await client.create(SERVICES, svc, namespace=namespace)
    endpoints: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Endpoints",
        "metadata": {"name": name},
        "subsets": [
            {
                "addresses": [{"ip": ip, "hostname": host} for host, ip in pods.items()],
                "ports": [{"name": port[0], "port": port[1], "protocol": "TCP"}],
            }
        ],
    }
    await client.create(ENDPOINTS, endpoints, namespace=namespace)
    await client.create(
        SERVICE_EXPORTS,
        {"apiVersion": SERVICE_EXPORTS.api_version, "kind": "ServiceExport", "metadata": {"name": name}},
        namespace=namespace,
    )


@needs_dig
async def test_east_resolves_a_and_srv_of_a_clusterip_service_west_exported(
    clusterset: LocalClusterSet, namespace: str, east_dns: EastDns
) -> None:
    west, east = clusterset.clusters[WEST].client, clusterset.clusters[EAST].client
    await export(west, namespace, service("web", [("http", 80, "TCP"), ("metrics", 9090, "TCP")]))
    imported = await eventually(
        lambda: _with_ips(east, namespace, "web"), what="east's ServiceImport web has its ClusterSetIP"
    )
    await eventually(lambda: east_dns.values(fqdn("web", namespace)), what="east answers web's A")
    assert await east_dns.short(fqdn("web", namespace)) == sorted(imported["spec"]["ips"])
    srv = await east_dns.short("_http._tcp." + fqdn("web", namespace), "SRV")
    assert srv == [f"0 100 80 {fqdn('web', namespace)}"]
    assert await east_dns.short("_metrics._tcp." + fqdn("web", namespace), "SRV") == [
        f"0 100 9090 {fqdn('web', namespace)}"
    ]
    # A ClusterSetIP Service has no per-cluster names.
    assert await east_dns.values(f"{WEST}.{fqdn('web', namespace)}") is None


async def _with_ips(client: KubeClient, namespace: str, name: str) -> dict[str, Any] | None:
    found = await service_import(client, namespace, name)
    return found if found and found["spec"].get("ips") else None


@needs_dig
async def test_east_resolves_every_endpoint_and_each_pod_name_of_a_headless_service(
    clusterset: LocalClusterSet, namespace: str, east_dns: EastDns
) -> None:
    west = clusterset.clusters[WEST].client
    await export_headless(west, namespace, "db", {"db-0": "10.10.0.1", "db-1": "10.10.0.2"})
    await eventually(lambda: east_dns.values(fqdn("db", namespace)), what="east answers db's A")
    assert await east_dns.short(fqdn("db", namespace)) == ["10.10.0.1", "10.10.0.2"]
    assert await east_dns.short(f"db-0.{WEST}.{fqdn('db', namespace)}") == ["10.10.0.1"]
    assert await east_dns.short(f"db-1.{WEST}.{fqdn('db', namespace)}") == ["10.10.0.2"]
    srv = await east_dns.short("_pg._tcp." + fqdn("db", namespace), "SRV")
    assert srv == [f"0 50 5432 db-0.{WEST}.{fqdn('db', namespace)}", f"0 50 5432 db-1.{WEST}.{fqdn('db', namespace)}"]
    # dnspython agrees, and names are case-insensitive.
    assert await east_dns.values(f"DB-0.{WEST.upper()}.{fqdn('db', namespace).upper()}") == ["10.10.0.1"]


@needs_dig
async def test_an_unexported_service_is_nxdomain_within_the_imports_propagation_time(
    clusterset: LocalClusterSet, namespace: str, east_dns: EastDns
) -> None:
    west, east = clusterset.clusters[WEST].client, clusterset.clusters[EAST].client
    await export(west, namespace, service("gone"))
    await eventually(lambda: east_dns.values(fqdn("gone", namespace)), what="east answers gone's A")

    started = time.monotonic()
    await unexport(west, namespace, "gone")

    async def import_deleted() -> float:
        await eventually(lambda: _absent(service_import(east, namespace, "gone")), what="east's ServiceImport deleted")
        return time.monotonic() - started

    async def nxdomain() -> float:
        async def answered_nxdomain() -> bool:
            return (await east_dns.ask(fqdn("gone", namespace))).rcode() == dns.rcode.NXDOMAIN

        await eventually(answered_nxdomain, what="NXDOMAIN for gone")
        return time.monotonic() - started

    import_seconds, dns_seconds = await asyncio.gather(import_deleted(), nxdomain())
    assert dns_seconds <= import_seconds + DNS_LAG, (import_seconds, dns_seconds)
    assert "status: NXDOMAIN" in await east_dns.dig(fqdn("gone", namespace))


async def _absent(pending: Any) -> bool:
    return await pending is None


async def test_a_conflicting_export_changes_nothing_in_dns_until_the_import_changes(
    clusterset: LocalClusterSet, namespace: str, east_dns: EastDns
) -> None:
    west, north = clusterset.clusters[WEST].client, clusterset.clusters[NORTH].client
    east = clusterset.clusters[EAST].client
    await export(west, namespace, service("cfl", [("http", 80, "TCP")]))
    await eventually(lambda: east_dns.values(fqdn("cfl", namespace)), what="east answers cfl's A")
    before_a = await east_dns.values(fqdn("cfl", namespace))
    before_srv = await east_dns.values("_http._tcp." + fqdn("cfl", namespace), "SRV")
    before_import = await service_import(east, namespace, "cfl")
    assert before_import is not None

    # North exports the same name and port as a headless Service: a TypeConflict the oldest
    # export wins, so east's import stays as it was (another port would join the union).
    await asyncio.sleep(1.1)
    await export_headless(north, namespace, "cfl", {"cfl-0": "10.20.0.1"}, port=("http", 80))

    async def conflict() -> dict[str, Any] | None:
        condition = await export_condition(north, namespace, "cfl", "Conflict")
        return condition if condition and condition.get("status") == "True" else None

    await eventually(conflict, what="Conflict on north's export")

    async def unchanged() -> bool:
        return (
            await east_dns.values(fqdn("cfl", namespace)) == before_a
            and await east_dns.values("_http._tcp." + fqdn("cfl", namespace), "SRV") == before_srv
            and await east_dns.values(f"cfl-0.{NORTH}.{fqdn('cfl', namespace)}") is None
        )

    await consistently(unchanged, what="east's answers for cfl while north's export conflicts")
    current = await service_import(east, namespace, "cfl")
    assert current is not None and current["spec"] == before_import["spec"]

    # The import changes when west withdraws: north's headless export is all there is.
    await unexport(west, namespace, "cfl")
    await eventually(
        lambda: east_dns.values(f"cfl-0.{NORTH}.{fqdn('cfl', namespace)}"), within=WAIT, what="north's pod name"
    )
    assert await east_dns.values(fqdn("cfl", namespace)) == ["10.20.0.1"]
