"""Users' objects are never touched; Delete, Synced and remove_all remove only what was imported,
and a restarted member rewrites nothing that is unchanged."""

from __future__ import annotations

from kube.client import KubeClient
from kube.resources import ENDPOINT_SLICES, ENDPOINTS, EVENTS, SERVICES, Obj, Resource
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import CLUSTER_INFO_IMPORTS, LABEL_IDENTITIES, SERVICE_IMPORTS
from member.hubclient import Delete, Synced
from tests.member_imports.conftest import MEMBER_NAMESPACE, Appliers, Reports, eventually
from tests.member_imports.messages import (
    cluster_info_import,
    endpoints_import,
    label_identity_import,
    service_import,
)
from tests.member_imports.test_service_imports import eventually_applied

USER_SERVICE: Obj = {
    "metadata": {"name": "antrea-mc-nginx", "namespace": "default", "labels": {"owner": "user"}},
    "spec": {"ports": [{"name": "web", "port": 8443, "protocol": "TCP"}], "selector": {"app": "mine"}},
}


async def _names(client: KubeClient, resource: Resource, namespace: str | None = None) -> set[str]:
    return {o["metadata"]["name"] for o in (await client.list(resource, namespace)).items}


async def _versions(client: KubeClient) -> dict[str, str]:
    versions = {}
    for resource, namespace in (
        (SERVICES, "default"),
        (ENDPOINTS, "default"),
        (ENDPOINT_SLICES, "default"),
        (SERVICE_IMPORTS, "default"),
        (LABEL_IDENTITIES, None),
        (CLUSTER_INFO_IMPORTS, MEMBER_NAMESPACE),
    ):
        for obj in (await client.list(resource, namespace)).items:
            versions[f"{resource.kind}/{obj['metadata']['name']}"] = obj["metadata"]["resourceVersion"]
    return versions


async def test_a_users_same_named_service_is_left_alone_with_a_warning_event_and_a_failed_report(
    member: KubeClient, appliers: Appliers, reports: Reports
) -> None:
    user = await member.create(SERVICES, USER_SERVICE)
    applier = await appliers.new()
    upsert = service_import("default", "nginx")
    await applier.handle(upsert)
    await applier.retry_blocked()  # blocked again: no second Event, no second report

    kept = await member.get(SERVICES, "antrea-mc-nginx", "default")
    assert kept["metadata"]["resourceVersion"] == user["metadata"]["resourceVersion"]
    failed = reports.last(upsert.import_name)
    assert failed is not None and failed[:2] == (False, "ImportConflict")
    assert "Service default/antrea-mc-nginx exists and was not created by Antrea Multi-cluster" in failed[2]
    assert reports.count(upsert.import_name) == 1
    events = [
        e
        for e in (await member.list(EVENTS, "default")).items
        if e["involvedObject"].get("uid") == user["metadata"]["uid"]
    ]
    assert [(e["type"], e["reason"], e.get("count")) for e in events] == [("Warning", "ImportConflict", 1)]
    assert events[0]["involvedObject"]["kind"] == "Service"

    # The user removes their Service: the import is applied by the periodic retry.
    await member.delete(SERVICES, "antrea-mc-nginx", "default")
    await eventually_applied(reports, upsert.import_name)
    ours = await member.get(SERVICES, "antrea-mc-nginx", "default")
    assert ours["metadata"]["annotations"][names.ANNOTATION_IMPORTED_SERVICE] == "true"


async def test_a_delete_removes_the_objects_of_that_import_only(member: KubeClient, appliers: Appliers) -> None:
    applier = await appliers.new()
    for upsert in (
        service_import("default", "nginx"),
        endpoints_import("default", "nginx", {"east": ["10.10.0.5"]}),
        service_import("default", "redis"),
    ):
        await applier.handle(upsert)

    await applier.handle(Delete(names.service_import_name("default", "nginx")))
    assert await _names(member, SERVICES, "default") >= {"antrea-mc-redis"}
    assert "antrea-mc-nginx" not in await _names(member, SERVICES, "default")
    assert await _names(member, SERVICE_IMPORTS, "default") == {"redis"}
    assert "antrea-mc-nginx" in await _names(member, ENDPOINTS, "default")

    await applier.handle(Delete(names.endpoints_import_name("default", "nginx")))
    assert "antrea-mc-nginx" not in await _names(member, ENDPOINTS, "default")
    assert await _names(member, ENDPOINT_SLICES, "default") == set()


async def test_a_delete_the_member_never_saw_finds_the_objects_by_their_names(
    member: KubeClient, appliers: Appliers
) -> None:
    first = await appliers.new()
    await first.handle(service_import("default", "nginx"))
    await first.handle(endpoints_import("default", "nginx", {"east": ["10.10.0.5"]}))
    await first.stop()  # a running importer would put back what another one deletes

    restarted = await appliers.new()  # knows nothing: as after a member restart that resumed the watch
    await restarted.handle(Delete(names.endpoints_import_name("default", "nginx")))
    assert "antrea-mc-nginx" not in await _names(member, ENDPOINTS, "default")
    assert await _names(member, ENDPOINT_SLICES, "default") == set()
    assert "antrea-mc-nginx" in await _names(member, SERVICES, "default")


async def test_synced_after_a_restart_removes_stale_imports_and_rewrites_nothing_unchanged(
    member: KubeClient, appliers: Appliers, reports: Reports
) -> None:
    kept = [
        service_import("default", "nginx"),
        endpoints_import("default", "nginx", {"east": ["10.10.0.5"], "north": ["10.20.0.7"]}),
        label_identity_import("ns:kubernetes.io/metadata.name=default&pod:app=web", 7),
        cluster_info_import("east"),
    ]
    stale = [
        service_import("default", "gone"),
        endpoints_import("default", "gone", {"east": ["10.10.0.9"]}),
        label_identity_import("ns:kubernetes.io/metadata.name=default&pod:app=old", 8),
        cluster_info_import("south"),
    ]
    first = await appliers.new()
    for upsert in kept + stale:
        await first.handle(upsert)
    await first.stop()
    await member.create(SERVICES, {**USER_SERVICE, "metadata": {**USER_SERVICE["metadata"], "name": "antrea-mc-mine"}})
    before = await _versions(member)

    restarted = await appliers.new()
    for upsert in kept:
        await restarted.handle(upsert)
    await restarted.handle(Synced(pb.SYNCED_REASON_INITIAL, frozenset(u.import_name for u in kept), frozenset()))

    after = await _versions(member)
    stale_keys = {
        "Service/antrea-mc-gone",
        "Endpoints/antrea-mc-gone",
        "EndpointSlice/antrea-mc-gone.east",
        "ServiceImport/gone",
        f"LabelIdentity/{stale[2].import_name}",
        "ClusterInfoImport/south-clusterinfo",
    }
    assert stale_keys <= set(before)
    assert after == {key: version for key, version in before.items() if key not in stale_keys}
    assert "antrea-mc-gone" not in await _names(member, SERVICES, "default")
    assert "antrea-mc-mine" in await _names(member, SERVICES, "default")  # a user's, whatever its name
    assert await _names(member, SERVICE_IMPORTS, "default") == {"nginx"}
    assert await _names(member, ENDPOINT_SLICES, "default") == {"antrea-mc-nginx.east", "antrea-mc-nginx.north"}
    assert await _names(member, LABEL_IDENTITIES) == {kept[2].import_name}
    assert await _names(member, CLUSTER_INFO_IMPORTS, MEMBER_NAMESPACE) == {"east-clusterinfo"}


async def test_remove_all_deletes_every_imported_object_and_keeps_users_objects(
    member: KubeClient, appliers: Appliers
) -> None:
    applier = await appliers.new()
    await member.create(SERVICES, {**USER_SERVICE, "metadata": {**USER_SERVICE["metadata"], "name": "web"}})
    for upsert in (
        service_import("default", "nginx"),
        endpoints_import("default", "nginx", {"east": ["10.10.0.5"]}),
        label_identity_import("ns:a=b&pod:c=d", 3),
        cluster_info_import("east"),
    ):
        await applier.handle(upsert)

    await applier.remove_all()

    async def nothing_left() -> bool:
        return (
            await _names(member, SERVICES, "default") == {"kubernetes", "web"}
            and await _names(member, ENDPOINT_SLICES, "default") == set()
            and "antrea-mc-nginx" not in await _names(member, ENDPOINTS, "default")
            and await _names(member, SERVICE_IMPORTS, "default") == set()
            and await _names(member, LABEL_IDENTITIES) == set()
            and await _names(member, CLUSTER_INFO_IMPORTS, MEMBER_NAMESPACE) == set()
        )

    assert await eventually(nothing_left)
