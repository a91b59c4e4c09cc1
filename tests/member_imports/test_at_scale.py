"""Imports at scale: concurrent and level-based, each object written once per change, reads from
the applier's caches, stale cleanup behind new imports. Requests are counted by the member's
client (rest_client_requests_total)."""

from __future__ import annotations

import asyncio

from kube.client import KubeClient
from kube.resources import ENDPOINTS, NAMESPACES, SERVICES
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import CLUSTER_INFO_IMPORTS, SERVICE_IMPORTS
from member.hubclient import ImportEvent, Synced
from tests.member_imports.conftest import MEMBER_NAMESPACE, Appliers, Reports, eventually
from tests.member_imports.messages import (
    cluster_info_import,
    endpoints_import,
    label_identity_import,
    service_import,
)
from tests.member_imports.test_service_imports import eventually_applied

# Discovery answers kept for the whole test: its GETs are not what these tests count.
CACHED_DISCOVERY = 600.0
WRITES = {"create", "update", "patch", "delete"}


def _delta(client: KubeClient, before: dict[tuple[str, str, str], float]) -> dict[tuple[str, str, str], int]:
    after = client.metrics.counts()
    return {key: int(value - before.get(key, 0)) for key, value in after.items() if value != before.get(key, 0)}


def _sum(delta: dict[tuple[str, str, str], int], verbs: set[str]) -> int:
    return sum(value for (verb, _, _), value in delta.items() if verb in verbs)


def _failed(delta: dict[tuple[str, str, str], int]) -> dict[tuple[str, str, str], int]:
    return {key: value for key, value in delta.items() if int(key[2]) >= 400}


async def test_a_burst_of_500_imports_converges_while_the_one_whose_namespace_is_missing_retries_alone(
    member: KubeClient, appliers: Appliers, reports: Reports
) -> None:
    applier = (await appliers.new(workers=8, discovery_ttl=CACHED_DISCOVERY)).applier
    failing = service_import("missing", "lonely")
    burst = [service_import("default", f"svc-{i}") for i in range(499)]
    before = member.metrics.counts()

    await applier.handle(failing)  # first in line: it must not hold up the others
    for upsert in burst:
        await applier.handle(upsert)
    async with asyncio.timeout(60):
        await applier.settled()
    await eventually(lambda: _at_least(applier.requeues(failing.import_name), 3))
    delta = _delta(member, before)  # before this test's own reads

    imported = {o["metadata"]["name"] for o in (await member.list(SERVICE_IMPORTS, "default")).items}
    assert imported == {f"svc-{i}" for i in range(499)}
    assert all(reports.last(u.import_name) == (True, "Succeeded", "") for u in burst)
    last = reports.last(failing.import_name)
    assert last is not None and last[:2] == (False, "NamespaceNotFound")
    assert reports.count(failing.import_name) == 1  # told once, however often it is retried

    # Per import: the Service, the ServiceImport and its status; nothing refused, nothing listed,
    # no GET (the Namespace comes from the cache, also on every retry of the failing import).
    assert _sum(delta, WRITES) == 3 * 499
    assert _failed(delta) == {}
    assert _sum(delta, {"list", "get"}) == 0

    await member.create(NAMESPACES, {"metadata": {"name": "missing"}})
    await eventually_applied(reports, failing.import_name)
    assert (await member.get(SERVICE_IMPORTS, "lonely", "missing"))["spec"]["type"] == "ClusterSetIP"


async def _at_least(value: int, wanted: int) -> bool:
    return value >= wanted


async def test_an_import_updated_50_times_in_a_row_is_written_far_fewer_times(
    member: KubeClient, appliers: Appliers
) -> None:
    applier = (await appliers.new(discovery_ttl=CACHED_DISCOVERY)).applier
    await applier.handle(service_import("default", "web", [("http", 1, "TCP")]))
    await applier.settled()
    before = member.metrics.counts()

    for port in range(2, 52):
        await applier.handle(service_import("default", "web", [("http", port, "TCP")]))
    async with asyncio.timeout(10):
        await applier.settled()

    delta = _delta(member, before)
    # 50 updates one by one would be 100 writes (the Service and the ServiceImport each time).
    assert _sum(delta, WRITES) <= 6
    assert _failed(delta) == {}
    service = await member.get(SERVICES, "antrea-mc-web", "default")
    assert [p["port"] for p in service["spec"]["ports"]] == [51]
    assert [p["port"] for p in (await member.get(SERVICE_IMPORTS, "web", "default"))["spec"]["ports"]] == [51]


async def test_a_restarted_member_with_nothing_changed_issues_no_write(
    member: KubeClient, appliers: Appliers, reports: Reports
) -> None:
    snapshot: list[ImportEvent] = [
        service_import("default", "nginx", clusters=["east", "north"]),
        endpoints_import("default", "nginx", {"east": ["10.10.0.5"], "north": ["10.20.0.7", "10.20.0.8"]}),
        service_import("default", "db", import_type="Headless"),
        endpoints_import("default", "db", {"east": ["10.10.0.9"]}),
        label_identity_import("ns:kubernetes.io/metadata.name=default&pod:app=web", 7),
        cluster_info_import("east"),
    ]
    first = (await appliers.new(discovery_ttl=CACHED_DISCOVERY)).applier
    for event in snapshot:
        await first.handle(event)
    await first.settled()
    await first.stop()
    before = member.metrics.counts()

    restarted = (await appliers.new(discovery_ttl=CACHED_DISCOVERY)).applier
    for event in snapshot:
        await restarted.handle(event)
    kept = frozenset(e.import_name for e in snapshot if hasattr(e, "import_name"))
    await restarted.handle(Synced(pb.SYNCED_REASON_INITIAL, kept, frozenset()))
    await restarted.settled()

    delta = _delta(member, before)
    assert _sum(delta, WRITES) == 0, delta
    assert _failed(delta) == {}
    assert all((reports.last(name) or (False,))[0] for name in kept)


async def test_stale_cleanup_after_synced_does_not_hold_up_a_new_import(
    member: KubeClient, appliers: Appliers, reports: Reports
) -> None:
    first = (await appliers.new(workers=4, discovery_ttl=CACHED_DISCOVERY)).applier
    stale = [service_import("default", f"old-{i}") for i in range(150)]
    stale += [endpoints_import("default", f"old-{i}", {"east": ["10.10.0.5"]}) for i in range(150)]
    for event in stale:
        await first.handle(event)
    async with asyncio.timeout(60):
        await first.settled()
    await first.stop()

    deletes_when_ready: list[int] = []
    info = cluster_info_import("east")

    def note(import_name: str, succeeded: bool, reason: str, message: str) -> None:
        if import_name == info.import_name and succeeded:
            deletes_when_ready.append(member.metrics.total(verbs={"delete"}))

    restarted = (await appliers.new(workers=4, discovery_ttl=CACHED_DISCOVERY, report=note)).applier
    deletes_before = member.metrics.total(verbs={"delete"})
    await restarted.handle(Synced(pb.SYNCED_REASON_INITIAL, frozenset(), frozenset()))
    await restarted.handle(info)  # a newly elected remote Gateway, right after the snapshot
    async with asyncio.timeout(60):
        await restarted.settled()

    # 600 stale objects (Service, ServiceImport, Endpoints, EndpointSlice of 150 imports) went...
    assert member.metrics.total(verbs={"delete"}) - deletes_before == 600
    assert [o["metadata"]["name"] for o in (await member.list(SERVICE_IMPORTS, "default")).items] == []
    assert not [o for o in (await member.list(ENDPOINTS, "default")).items if o["metadata"]["name"] != "kubernetes"]
    # ...but the ClusterInfoImport was there long before the last of them.
    [deletes] = deletes_when_ready
    assert deletes - deletes_before < 100
    assert (await member.get(CLUSTER_INFO_IMPORTS, info.import_name, MEMBER_NAMESPACE))["spec"]["clusterID"] == "east"
