"""The DNS fed from a sandbox cluster's API through the member's import caches (the importer's
watches): the member's imports in, answers out, no watch of its own, no API load per query."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import dns.asyncquery
import dns.message
import dns.rcode
import pytest
import yaml
from prometheus_client import CollectorRegistry

from kube.client import KubeClient, connect
from kube.errors import NotFound
from kube.resources import CRDS, ENDPOINT_SLICES
from mcapi import names
from mcapi.resources import SERVICE_IMPORTS, SERVICE_IMPORTS_V1BETA1
from member.dns.feed import DnsFeed
from member.dns.service import ClustersetDns, DnsOptions
from member.dns.zone import ClustersetZone
from member.imports.caches import ImportCaches
from member.imports.discovery import ApiDiscovery
from member.imports.objects import IMPORTED_SERVICE_IMPORTS
from member.imports.objects import served as served_version
from sandbox.server import SandboxServer
from tests.kubeenv.cluster import CRD_DIR, ensure_namespace, install_crds
from tests.kubeenv.tasks import running_informers, running_tasks
from tests.member_dns.objects import endpoint, endpoint_slice, service_import

NAME = "nginx.web.svc.clusterset.local."


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[KubeClient]:
    """A client of a sandbox API server without any CRD yet."""
    server = SandboxServer(name="east", service_cidr="10.112.0.0/16", work_dir=tmp_path / "east")
    await server.start()
    client = await connect(server.kubeconfig_path)
    try:
        await ensure_namespace(client, "web")
        yield client
    finally:
        await client.close()
        await server.stop()


@contextlib.asynccontextmanager
async def import_caches(client: KubeClient) -> AsyncIterator[ImportCaches]:
    """The member's import caches, started (Antrea Multi-cluster's CRDs installed, which a
    member needs; not the MCS ones)."""
    await install_crds(client, f"{names.GROUP}_*.yaml")
    caches = ImportCaches(client, "kube-system")
    await caches.start()
    try:
        yield caches
    finally:
        await caches.stop()


@contextlib.asynccontextmanager
async def running_dns(client: KubeClient, **options: object) -> AsyncIterator[ClustersetDns]:
    """A ClustersetDns reading fresh import caches of ``client``'s cluster."""
    async with import_caches(client) as caches:
        registry = CollectorRegistry()
        dns_server = ClustersetDns(client, caches, DnsOptions("127.0.0.1:0", **options), registry)  # type: ignore[arg-type]
        dns_server.feed.retry_interval = 0.1
        await dns_server.start()
        try:
            yield dns_server
        finally:
            await dns_server.stop()


async def ask(server: ClustersetDns, name: str, rdtype: str = "A") -> dns.message.Message:
    return await dns.asyncquery.udp(
        dns.message.make_query(name, rdtype), "127.0.0.1", port=server.server.port, timeout=2
    )


async def answers(server: ClustersetDns, name: str, rdtype: str = "A") -> set[str] | None:
    """The answer's values; None for NXDOMAIN."""
    reply = await ask(server, name, rdtype)
    if reply.rcode() == dns.rcode.NXDOMAIN:
        return None
    return {r.to_text() for rrset in reply.answer for r in rrset}


async def until(probe: Callable[[], object], within: float = 10.0) -> None:
    """Poll the server (a DNS answer has no event to await) until ``probe()`` holds."""
    for _ in range(int(within / 0.05)):
        value = probe()
        if asyncio.iscoroutine(value):
            value = await value
        if value:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"not within {within}s")


async def test_imports_written_to_the_cluster_are_answered_and_their_deletion_is_nxdomain(
    cluster: KubeClient,
) -> None:
    await install_crds(cluster)
    async with running_dns(cluster) as served:
        await cluster.create(
            SERVICE_IMPORTS_V1BETA1, service_import("nginx", "web", ips=["10.112.0.5"]), namespace="web"
        )
        await cluster.create(SERVICE_IMPORTS_V1BETA1, service_import("db", "web", headless=True), namespace="web")
        await cluster.create(
            ENDPOINT_SLICES, endpoint_slice("db", "west", [endpoint("10.0.0.1", "db-0")], "web"), namespace="web"
        )
        await until(lambda: answers(served, NAME))
        assert await answers(served, NAME) == {"10.112.0.5"}
        await until(lambda: answers(served, "db-0.west.db.web.svc.clusterset.local."))
        assert await answers(served, "db.web.svc.clusterset.local.") == {"10.0.0.1"}

        await cluster.delete(SERVICE_IMPORTS_V1BETA1, "nginx", "web")
        await until(lambda: _is_none(answers(served, NAME)))
        await cluster.delete(ENDPOINT_SLICES, "antrea-mc-db.west", "web")
        await until(lambda: _is_none(answers(served, "db.web.svc.clusterset.local.")))


async def _is_none(pending: object) -> bool:
    return await pending is None  # type: ignore[misc]


async def test_a_service_import_the_member_did_not_import_has_no_name(cluster: KubeClient) -> None:
    await install_crds(cluster)
    async with running_dns(cluster) as served:
        await cluster.create(
            SERVICE_IMPORTS_V1BETA1,
            service_import("mine", "web", ips=["10.112.0.7"], imported=False),
            namespace="web",
        )
        await cluster.create(
            SERVICE_IMPORTS_V1BETA1, service_import("nginx", "web", ips=["10.112.0.5"]), namespace="web"
        )
        await until(lambda: answers(served, NAME))
        assert await answers(served, "mine.web.svc.clusterset.local.") is None


async def test_imports_listed_before_the_start_are_answered_at_once(cluster: KubeClient) -> None:
    await install_crds(cluster)
    await cluster.create(SERVICE_IMPORTS_V1BETA1, service_import("nginx", "web", ips=["10.112.0.5"]), namespace="web")
    async with running_dns(cluster) as served:
        assert served.feed.synced
        assert await answers(served, NAME) == {"10.112.0.5"}


async def test_a_serviceimport_crd_installed_after_the_start_is_followed(cluster: KubeClient) -> None:
    async with running_dns(cluster) as served:  # the MCS CRDs are not installed
        assert not served.feed.synced
        assert (await ask(served, NAME)).rcode() == dns.rcode.NXDOMAIN
        await install_crds(cluster, f"{names.MCS_GROUP}_*.yaml")
        await until(lambda: served.feed.synced)
        await cluster.create(
            SERVICE_IMPORTS_V1BETA1, service_import("nginx", "web", ips=["10.112.0.5"]), namespace="web"
        )
        await until(lambda: answers(served, NAME))


async def test_a_serviceimport_crd_removed_takes_its_names_and_is_followed_again_when_back(
    cluster: KubeClient,
) -> None:
    await install_crds(cluster)
    await cluster.create(SERVICE_IMPORTS_V1BETA1, service_import("nginx", "web", ips=["10.112.0.5"]), namespace="web")
    async with running_dns(cluster) as served:
        assert await answers(served, NAME) == {"10.112.0.5"}
        await cluster.delete(CRDS, SERVICE_IMPORTS_V1BETA1.qualified_name)
        await until(lambda: _is_none(answers(served, NAME)))
        # The API server ends the watches of a CRD it no longer serves: the ServiceImport watch
        # then fails (404), and is no longer followed.
        await until(lambda: not served.feed.synced)

        await install_crds(cluster)
        await until(lambda: served.feed.synced)
        await cluster.create(
            SERVICE_IMPORTS_V1BETA1, service_import("nginx", "web", ips=["10.112.0.6"]), namespace="web"
        )
        await until(lambda: answers(served, NAME))
        assert await answers(served, NAME) == {"10.112.0.6"}


async def test_queries_cost_the_api_server_nothing_and_the_dns_watches_nothing_itself(cluster: KubeClient) -> None:
    await install_crds(cluster)
    await cluster.create(SERVICE_IMPORTS_V1BETA1, service_import("nginx", "web", ips=["10.112.0.5"]), namespace="web")
    async with import_caches(cluster) as caches:
        # What the importer watches when it starts: its fixed kinds, and the served ServiceImports.
        await caches.optional_kind(IMPORTED_SERVICE_IMPORTS.in_version("v1beta1"))
        kinds = len(caches.all_kinds()) + 1  # and Namespaces
        await until(lambda: cluster.metrics.total(verbs=["watch"]) == kinds)
        registry = CollectorRegistry()
        served = ClustersetDns(cluster, caches, DnsOptions("127.0.0.1:0"), registry)
        await served.start()
        try:
            # Everything but the caches' watches would be a request made for a query.
            not_watches = ("get", "list", "create", "update", "patch", "delete")
            before = cluster.metrics.total(verbs=not_watches)
            for i in range(500):
                name = NAME if i % 2 else f"other-{i}.web.svc.clusterset.local."
                await ask(served, name)
            assert cluster.metrics.total(verbs=not_watches) == before
            assert cluster.metrics.total(verbs=["watch"]) == kinds
        finally:
            await served.stop()
        counted = {
            (sample.labels["type"], sample.labels["rcode"]): sample.value
            for metric in served.metrics.queries.collect()
            for sample in metric.samples
            if sample.name.endswith("_total")
        }
        assert counted == {("A", "NOERROR"): 250, ("A", "NXDOMAIN"): 250}


async def test_a_start_cancelled_midway_leaves_nothing_following_the_caches(cluster: KubeClient) -> None:
    await install_crds(cluster)
    await cluster.create(SERVICE_IMPORTS_V1BETA1, service_import("nginx", "web", ips=["10.112.0.5"]), namespace="web")
    async with import_caches(cluster) as caches:
        feed = DnsFeed(cluster, caches, ClustersetZone(), retry_interval=0.1)
        start = asyncio.create_task(feed.start())
        await asyncio.sleep(0)  # subscribed, and looking for the served ServiceImport version
        assert not start.done() and running_tasks("dns-feed-serviceimports") == 1
        start.cancel()
        with pytest.raises(asyncio.CancelledError):
            await start

        assert running_tasks("dns-feed-serviceimports") == 0
        assert not feed.synced
        # The importer has the ServiceImports watched: their contents go to every subscriber at
        # once, and none of them to the feed that never started.
        await caches.optional_kind(IMPORTED_SERVICE_IMPORTS.in_version("v1beta1"))
        assert feed.zone.services == 0
        assert running_informers(SERVICE_IMPORTS_V1BETA1) == 1


async def test_a_feed_started_on_stopped_caches_returns_and_follows_nothing(cluster: KubeClient) -> None:
    await install_crds(cluster)
    async with import_caches(cluster) as caches:
        await caches.stop()  # the member is leaving
        feed = DnsFeed(cluster, caches, ClustersetZone(), retry_interval=0.1)
        async with asyncio.timeout(10):
            await feed.start()  # the ServiceImport CRD is served, but the caches watch nothing more
        assert running_tasks("dns-feed-serviceimports") == 0
        assert not feed.synced
        await feed.stop()


async def test_where_only_v1alpha1_is_served_the_dns_follows_the_version_the_importer_writes(
    cluster: KubeClient,
) -> None:
    crd = yaml.safe_load((CRD_DIR / "multicluster.x-k8s.io_serviceimports.yaml").read_text())
    crd["spec"]["versions"] = [{**v, "storage": True} for v in crd["spec"]["versions"] if v["name"] == "v1alpha1"]
    await cluster.create(CRDS, crd)
    body = {k: v for k, v in service_import("nginx", "web", ips=["10.112.0.5"]).items() if k != "apiVersion"}
    await until(lambda: _creates(cluster, body))
    async with running_dns(cluster) as served:
        assert served.feed.synced
        watched = served.feed.caches.watching(SERVICE_IMPORTS.qualified_name)
        assert watched is not None and watched.resource == SERVICE_IMPORTS
        version = await served_version(IMPORTED_SERVICE_IMPORTS, ApiDiscovery(cluster))
        assert version is not None and version.resource == SERVICE_IMPORTS
        assert await answers(served, NAME) == {"10.112.0.5"}


async def _creates(client: KubeClient, service_import_v1alpha1: dict[str, object]) -> bool:
    """Whether the v1alpha1 ServiceImport could be created (its new CRD may not serve it yet)."""
    try:
        await client.create(SERVICE_IMPORTS, service_import_v1alpha1, namespace="web")
    except NotFound:
        return False
    return True
