"""The mirror of a SQLite hub into a leader cluster (`mchub hub --mirror-kubeconfig K`), on a
sandbox and on a real kube-apiserver (tests/contract/leader_api.py):

- what the hub holds appears in the leader Namespace as ResourceExports, ResourceImports and
  MemberClusterAnnounces, with Antrea's columns in `kubectl get`;
- a mirrored CR a person deletes or changes is put back, and an Event says so;
- the hub keeps serving members while the leader's API server cannot be reached, and the mirror
  converges once it can (a TCP proxy in front of a sandbox of this test stands for the server:
  closing it refuses and breaks every connection, as a stopped API server does, while the
  shared real clusters are never stopped);
- the requests each mirrored change costs are counted (the mirror client's
  rest_client_requests_total) and bounded; a restart over unchanged state writes nothing.

Members here are gRPC clients of the hub (tests/integration/hubclient.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from hub.app import HubApp
from hub.config import MirrorConfig, SqliteStoreConfig
from hub.mirror.leader import LeaderCluster
from kube.client import KubeClient
from kube.errors import NotFound
from kube.resources import EVENTS, NAMESPACES
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import CLUSTER_PROFILES, MEMBER_CLUSTER_ANNOUNCES, RESOURCE_EXPORTS, RESOURCE_IMPORTS
from tests.contract.leader_api import LeaderApi, leader_api
from tests.deploy.kubectl import Kubectl, needs_kubectl
from tests.integration.hub_fixtures import hub_config
from tests.integration.hubclient import MemberFactory, endpoints_export, read_until_synced, service_export
from tests.kubeenv.cluster import sandbox_cluster
from tests.tcp_proxy import TcpProxy

CLUSTERSET, LEADER = "test-clusterset", "test-cluster-north"
CAUGHT_UP_WITHIN = 20.0


@dataclass
class Leader:
    api: LeaderApi
    namespace: str

    @property
    def client(self) -> KubeClient:
        return self.api.client


@pytest.fixture
async def leader(cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Leader]:
    async with leader_api(cluster_kind, request, tmp_path / "leader-cluster") as api:
        if api.real:
            yield Leader(api, await api.namespace("leader"))
        else:
            yield Leader(api, await api.fixed_namespace(names.DEFAULT_LEADER_NAMESPACE))


@contextlib.asynccontextmanager
async def mirrored_hub(data_dir: Path, kubeconfig: Path, namespace: str) -> AsyncIterator[HubApp]:
    hub = HubApp(
        hub_config(
            data_dir,
            cluster_set_id=CLUSTERSET,
            leader_cluster_id=LEADER,
            namespace=namespace,
            store=SqliteStoreConfig(mirror=MirrorConfig(kubeconfig)),
            status_interval=0.5,
        )
    )
    await hub.start()
    try:
        yield hub
    finally:
        await hub.stop()


def leader_of(hub: HubApp) -> LeaderCluster:
    assert hub.leader_cluster is not None
    return hub.leader_cluster


async def caught_up(hub: HubApp, within: float = CAUGHT_UP_WITHIN) -> None:
    await asyncio.wait_for(leader_of(hub).mirror.caught_up(), within)


async def until(probe: Callable[[], Awaitable[bool]], within: float, what: str) -> float:
    start = time.monotonic()
    while time.monotonic() - start < within:
        if await probe():
            return time.monotonic() - start
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what}: not within {within}s")


async def names_of(client: KubeClient, resource: Any, namespace: str) -> set[str]:
    return {o["metadata"]["name"] for o in (await client.list(resource, namespace)).items}


def rows(text: str) -> list[list[str]]:
    """kubectl's table, each line split on runs of two or more spaces (column cells)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.strip().splitlines()]


async def export_nginx(members: MemberFactory, cluster: str, ip: str) -> None:
    member = await members(cluster)
    await member.export(
        service_export(cluster, "default", "nginx", cluster_ip=ip), endpoints_export(cluster, "default", "nginx", [ip])
    )


@needs_kubectl
async def test_the_hub_state_appears_in_the_leader_crs_with_antreas_columns(leader: Leader, tmp_path: Path) -> None:
    async with mirrored_hub(tmp_path / "hub", leader.api.kubeconfig, leader.namespace) as hub:
        members = MemberFactory(hub)
        try:
            await export_nginx(members, "test-cluster-east", "10.96.0.10")
            await export_nginx(members, "test-cluster-west", "10.112.0.10")
            await caught_up(hub)
        finally:
            await members.close()
        kubectl = Kubectl(leader.api.kubeconfig, cache_dir=tmp_path / "kubectl-cache")
        ns = leader.namespace
        exports = rows((await kubectl("get", "resourceexport", "-n", ns)).check().stdout)
        assert exports[0] == ["NAME", "CLUSTER ID", "KIND", "NAMESPACE", "NAME", "AGE"]
        assert ["test-cluster-east-default-nginx-service", "test-cluster-east", "Service", "default", "nginx"] in [
            r[:5] for r in exports[1:]
        ]
        assert len(exports) == 1 + 4
        imports = rows((await kubectl("get", "resourceimport", "-n", ns)).check().stdout)
        assert imports[0] == ["NAME", "KIND", "NAMESPACE", "NAME", "AGE"]
        assert {tuple(r[:4]) for r in imports[1:]} == {
            ("default-nginx-service", "ServiceImport", "default", "nginx"),
            ("default-nginx-endpoints", "Endpoints", "default", "nginx"),
        }
        announces = rows((await kubectl("get", "memberclusterannounce", "-n", ns)).check().stdout)
        assert announces[0] == ["NAME", "CLUSTER ID", "CLUSTERSET ID", "AGE"]
        assert {tuple(r[:3]) for r in announces[1:]} == {
            ("member-announce-from-test-cluster-east", "test-cluster-east", CLUSTERSET),
            ("member-announce-from-test-cluster-west", "test-cluster-west", CLUSTERSET),
        }
        export = await leader.client.get(RESOURCE_EXPORTS, "test-cluster-west-default-nginx-service", ns)
        [condition] = export["status"]["conditions"]
        assert (condition["type"], condition["status"]) == ("Succeeded", "True")


async def _restored_events(client: KubeClient, namespace: str, name: str) -> list[dict[str, Any]]:
    listed = await client.list(EVENTS, namespace)
    return [e for e in listed.items if e.get("reason") == "RestoredByHub" and e["involvedObject"].get("name") == name]


async def test_a_mirrored_cr_deleted_or_changed_by_hand_is_put_back_and_an_event_says_so(
    leader: Leader, tmp_path: Path
) -> None:
    ns, client = leader.namespace, leader.client
    async with mirrored_hub(tmp_path / "hub", leader.api.kubeconfig, ns) as hub:
        members = MemberFactory(hub)
        try:
            await export_nginx(members, "test-cluster-east", "10.96.0.10")
            await caught_up(hub)
        finally:
            await members.close()
        before = await client.get(RESOURCE_IMPORTS, "default-nginx-service", ns)
        await client.delete(RESOURCE_IMPORTS, "default-nginx-service", ns)

        async def import_back() -> bool:
            with contextlib.suppress(NotFound):
                again = await client.get(RESOURCE_IMPORTS, "default-nginx-service", ns)
                return bool(again["metadata"]["uid"] != before["metadata"]["uid"])
            return False

        await until(import_back, 10, "the deleted ResourceImport back")
        again = await client.get(RESOURCE_IMPORTS, "default-nginx-service", ns)
        assert again["spec"] == before["spec"]

        name = "test-cluster-east-default-nginx-service"
        await client.patch(RESOURCE_EXPORTS, name, {"spec": {"service": {"serviceSpec": {"ports": []}}}}, ns)

        async def export_back() -> bool:
            current = await client.get(RESOURCE_EXPORTS, name, ns)
            return bool(current["spec"]["service"]["serviceSpec"].get("ports"))

        await until(export_back, 10, "the changed ResourceExport put back")
        await client.delete(MEMBER_CLUSTER_ANNOUNCES, "member-announce-from-test-cluster-east", ns)
        await until(
            lambda: _exists(client, MEMBER_CLUSTER_ANNOUNCES, "member-announce-from-test-cluster-east", ns),
            10,
            "the deleted MemberClusterAnnounce back",
        )
        for restored in ("default-nginx-service", name, "member-announce-from-test-cluster-east"):
            await until(functools.partial(_has_events, client, ns, restored), 10, f"an Event on {restored}")
        [event] = await _restored_events(client, ns, "default-nginx-service")
        assert event["type"] == "Warning" and "deleted with the Kubernetes API" in event["message"]
        assert event["involvedObject"]["uid"] == again["metadata"]["uid"]
        counted = leader_of(hub).mirror.metrics.restored
        assert sum(s.value for m in counted.collect() for s in m.samples if s.name.endswith("_total")) == 3


async def _exists(client: KubeClient, resource: Any, name: str, namespace: str) -> bool:
    try:
        await client.get(resource, name, namespace)
    except NotFound:
        return False
    return True


async def _has_events(client: KubeClient, namespace: str, name: str) -> bool:
    return bool(await _restored_events(client, namespace, name))


# ---- a leader API server that goes away and comes back ---------------------------------------


def proxied_kubeconfig(kubeconfig: Path, port: int, path: Path) -> Path:
    config = yaml.safe_load(kubeconfig.read_text())
    config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    path.write_text(yaml.safe_dump(config))
    return path


async def test_the_hub_serves_members_while_the_leader_api_server_is_down_and_the_mirror_catches_up(
    tmp_path: Path,
) -> None:
    async with sandbox_cluster(tmp_path / "leader-cluster", name="leader") as (server, client):
        ns = names.DEFAULT_LEADER_NAMESPACE
        await client.create(NAMESPACES, {"metadata": {"name": ns}})
        proxy = TcpProxy(server.port)
        await proxy.start()
        kubeconfig = proxied_kubeconfig(server.kubeconfig_path, proxy.port, tmp_path / "via-proxy.kubeconfig")
        try:
            async with mirrored_hub(tmp_path / "hub", kubeconfig, ns) as hub:
                members = MemberFactory(hub)
                try:
                    east = await members("test-cluster-east")
                    await east.export(service_export("test-cluster-east", "default", "svc-0"))
                    await caught_up(hub)
                    await proxy.stop()  # the leader's API server is gone

                    watch = east.watch()
                    snapshot, _ = await asyncio.wait_for(read_until_synced(watch), 5)
                    assert names.service_import_name("default", "svc-0") in snapshot
                    started = time.monotonic()
                    session = east.export_session()
                    for i in range(1, 21):
                        answer = await session.upsert(service_export("test-cluster-east", "default", f"svc-{i}"))
                        assert answer.status.verdict == pb.VERDICT_ACCEPTED
                    await east.announce()
                    served = time.monotonic() - started
                    assert served < 5.0, f"21 calls took {served:.1f}s with the leader down"
                    wanted = {names.service_import_name("default", f"svc-{i}") for i in range(1, 21)}
                    seen: set[str] = set()
                    while not wanted <= seen:  # every member still gets its imports
                        event = await asyncio.wait_for(watch.__anext__(), 5)
                        if event.WhichOneof("event") == "upsert":
                            seen.add(event.upsert.import_name)
                    lagging = await names_of(client, RESOURCE_IMPORTS, ns)
                    assert names.service_import_name("default", "svc-20") not in lagging  # the mirror lags

                    await proxy.start()  # back, on the same port
                    took = time.monotonic()
                    await caught_up(hub)
                    took = time.monotonic() - took
                    imported = await names_of(client, RESOURCE_IMPORTS, ns)
                    assert {names.service_import_name("default", f"svc-{i}") for i in range(21)} <= imported
                    exported = await names_of(client, RESOURCE_EXPORTS, ns)
                    assert {
                        names.service_export_name("test-cluster-east", "default", f"svc-{i}") for i in range(21)
                    } <= exported
                    assert took < CAUGHT_UP_WITHIN
                finally:
                    await members.close()
        finally:
            await proxy.stop()


# ---- requests ---------------------------------------------------------------------------------


def writes_by_resource(hub: HubApp) -> dict[str, int]:
    """Write requests of the mirror's client so far, by resource (status counted apart)."""
    out: dict[str, int] = {}
    for (verb, resource, _code), value in leader_of(hub).client.metrics.counts().items():
        if verb in ("create", "update", "patch", "delete"):
            out[resource] = out.get(resource, 0) + int(value)
    return out


def reads(hub: HubApp) -> dict[str, int]:
    out: dict[str, int] = {}
    for (verb, resource, _code), value in leader_of(hub).client.metrics.counts().items():
        if verb in ("get", "list"):
            out[f"{verb} {resource}"] = out.get(f"{verb} {resource}", 0) + int(value)
    return out


def delta(after: dict[str, int], before: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in after.items() if v - before.get(k, 0)}


RE, RI, MCA = (r.qualified_name for r in (RESOURCE_EXPORTS, RESOURCE_IMPORTS, MEMBER_CLUSTER_ANNOUNCES))
PROFILE = CLUSTER_PROFILES.qualified_name


async def profile_written(hub: HubApp) -> None:
    """Until a member's ClusterProfile and its status are written. The status loop writes them on its
    own schedule, apart from the mirror's pipeline (which ``caught_up`` waits for), so a count of the
    requests an export costs starts only after the join's own writes."""

    async def written() -> bool:
        spent = writes_by_resource(hub)
        return spent.get(PROFILE, 0) > 0 and spent.get(f"{PROFILE}/status", 0) > 0

    await until(written, CAUGHT_UP_WITHIN, "the member's ClusterProfile written")


async def test_requests_per_mirrored_change_are_counted_and_bounded(leader: Leader, tmp_path: Path) -> None:
    count = 20
    async with mirrored_hub(tmp_path / "hub", leader.api.kubeconfig, leader.namespace) as hub:
        members = MemberFactory(hub)
        try:
            east = await members("test-cluster-east")
            await caught_up(hub)
            await profile_written(hub)
            before, reads_before = writes_by_resource(hub), reads(hub)
            # One new Service each: its export (a create and its status) and two imports (the
            # ServiceImport and its Endpoints, a create each).
            for i in range(count):
                await east.export(service_export("test-cluster-east", "default", f"svc-{i}"))
            await caught_up(hub)
            spent = delta(writes_by_resource(hub), before)
            assert spent.get(RE, 0) == count and spent.get(f"{RE}/status", 0) == count, spent
            assert spent.get(RI, 0) == 2 * count, spent
            assert sum(spent.values()) == 4 * count, spent
            assert delta(reads(hub), reads_before) == {}, "the mirror reads from its watches only"

            # A burst on one Service: 10 updates while the mirror waits, written once at the newest.
            before = writes_by_resource(hub)
            session = east.export_session()
            for port in range(8000, 8010):
                await session.upsert(service_export("test-cluster-east", "default", "svc-0", [("http", port)]))
            await caught_up(hub)
            burst = delta(writes_by_resource(hub), before)
            assert sum(burst.values()) <= 2 * 3, burst  # at most two passes of (export, status, import)
        finally:
            await members.close()
        total = sum(writes_by_resource(hub).values())
    async with mirrored_hub(tmp_path / "hub", leader.api.kubeconfig, leader.namespace) as again:
        await caught_up(again)
        assert writes_by_resource(again) == {}, "a restart over unchanged state rewrites nothing"
        listed = await names_of(leader.client, RESOURCE_IMPORTS, leader.namespace)
        assert len(listed) == 2 * count
    assert total > 0


async def test_what_changed_while_the_mirror_was_off_is_caught_up_at_start(leader: Leader, tmp_path: Path) -> None:
    """A hub run once without its mirror (the member removed meanwhile): the next start deletes the
    CRs of what went and writes what came, and nothing else."""
    ns = leader.namespace
    async with mirrored_hub(tmp_path / "hub", leader.api.kubeconfig, ns) as hub:
        members = MemberFactory(hub)
        try:
            await export_nginx(members, "test-cluster-east", "10.96.0.10")
            await caught_up(hub)
        finally:
            await members.close()
    plain = HubApp(hub_config(tmp_path / "hub", cluster_set_id=CLUSTERSET, leader_cluster_id=LEADER, namespace=ns))
    await plain.start()
    members = MemberFactory(plain)
    try:
        await plain.engine.remove_member("test-cluster-east", "removed by the test")
        await export_nginx(members, "test-cluster-west", "10.112.0.10")
    finally:
        await members.close()
        await plain.stop()
    async with mirrored_hub(tmp_path / "hub", leader.api.kubeconfig, ns) as again:
        await caught_up(again)
        exports = await names_of(leader.client, RESOURCE_EXPORTS, ns)
        assert exports == {"test-cluster-west-default-nginx-service", "test-cluster-west-default-nginx-endpoints"}
        announces = await names_of(leader.client, MEMBER_CLUSTER_ANNOUNCES, ns)
        assert announces == {"member-announce-from-test-cluster-west"}
        assert await names_of(leader.client, RESOURCE_IMPORTS, ns) == {
            "default-nginx-service",
            "default-nginx-endpoints",
        }
