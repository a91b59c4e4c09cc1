"""ServiceExports: what reaches the hub, and the conditions the member writes back."""

from __future__ import annotations

from hub.app import HubApp
from kube.errors import NotFound
from kube.resources import SERVICES
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import SERVICE_EXPORTS
from tests.kubeenv.cluster import ensure_namespace
from tests.member.conftest import MemberFactory
from tests.member.harness import eventually

NS = "shop"


def _hub_export(hub: HubApp, name: str) -> pb.ResourceExport | None:
    return hub.engine.index.exports.get(name)


async def _at_hub(hub: HubApp, name: str) -> pb.ResourceExport:
    async def probe() -> pb.ResourceExport | None:
        return _hub_export(hub, name)

    return await eventually(probe, what=f"export {name} at the hub")


async def _gone_from_hub(hub: HubApp, name: str) -> None:
    async def probe() -> bool:
        return _hub_export(hub, name) is None

    await eventually(probe, what=f"export {name} gone from the hub")


async def test_a_cluster_ip_export_carries_the_service_and_its_cluster_ip_as_the_endpoint(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    service = await east.create_service(NS, "web", [("http", 80), ("metrics", 9090)])
    await east.create_endpoints(NS, "web", ["10.244.1.5", "10.244.1.6"])
    await east.export(NS, "web")

    exported = await _at_hub(hub, names.service_export_name("east", NS, "web"))
    assert exported.cluster_id == "east" and exported.namespace == NS and exported.name == "web"
    assert exported.service.cluster_ip == service["spec"]["clusterIP"]
    assert [(p.name, p.port, p.protocol) for p in exported.service.ports] == [
        ("http", 80, "TCP"),
        ("metrics", 9090, "TCP"),
    ]
    endpoints = await _at_hub(hub, names.endpoints_export_name("east", NS, "web"))
    (subset,) = endpoints.endpoints.subsets
    assert [a.ip for a in subset.addresses] == [service["spec"]["clusterIP"]]
    assert [(p.name, p.port) for p in subset.ports] == [("http", 80), ("metrics", 9090)]


async def test_a_pod_ip_export_carries_the_endpoints_addresses(hub: HubApp, members: MemberFactory) -> None:
    east = await members.join("east", config_yaml="endpointIPType: PodIP\n")
    await east.create_service(NS, "web")
    await east.create_endpoints(NS, "web", ["10.244.1.5", "10.244.1.6"], port=8080)
    await east.export(NS, "web")

    endpoints = await _at_hub(hub, names.endpoints_export_name("east", NS, "web"))
    (subset,) = endpoints.endpoints.subsets
    assert sorted(a.ip for a in subset.addresses) == ["10.244.1.5", "10.244.1.6"]
    assert [(p.port, p.protocol) for p in subset.ports] == [(8080, "TCP")]


async def test_a_headless_service_exports_pod_ips_even_in_cluster_ip_mode(hub: HubApp, members: MemberFactory) -> None:
    east = await members.join("east")
    spec = {"clusterIP": "None", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}
    await east.create_service(NS, "db", spec=spec)
    await east.create_endpoints(NS, "db", ["10.244.2.7"])
    await east.export(NS, "db")

    endpoints = await _at_hub(hub, names.endpoints_export_name("east", NS, "db"))
    assert [a.ip for s in endpoints.endpoints.subsets for a in s.addresses] == ["10.244.2.7"]


async def test_an_accepted_export_is_valid_ready_and_without_conflict(hub: HubApp, members: MemberFactory) -> None:
    east = await members.join("east")
    await east.create_service(NS, "web")
    await east.export(NS, "web")

    valid = await east.wait_condition(NS, "web", "Valid", "True", "Valid")
    ready = await east.wait_condition(NS, "web", "Ready", "True", "Exported")
    await east.wait_condition(NS, "web", "Conflict", "False", "NoConflicts")
    obj = await east.service_export(NS, "web")
    assert obj is not None
    generation = obj["metadata"]["generation"]
    assert valid["observedGeneration"] == generation and ready["observedGeneration"] == generation


async def test_a_service_export_without_its_service_is_invalid_until_the_service_appears(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    await east.export(NS, "web")
    await east.wait_condition(NS, "web", "Valid", "False", "NoService")
    await east.wait_condition(NS, "web", "Ready", "False", "Failed")
    assert _hub_export(hub, names.service_export_name("east", NS, "web")) is None

    await east.create_service(NS, "web")
    await east.wait_condition(NS, "web", "Valid", "True", "Valid")
    await _at_hub(hub, names.service_export_name("east", NS, "web"))


async def test_an_external_name_service_is_an_invalid_service_type_and_not_exported(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    await east.create_service(NS, "ext", spec={"type": "ExternalName", "externalName": "db.example.com"})
    await east.export(NS, "ext")
    await east.wait_condition(NS, "ext", "Valid", "False", "InvalidServiceType")
    await east.wait_condition(NS, "ext", "Ready", "False", "Failed")
    assert _hub_export(hub, names.service_export_name("east", NS, "ext")) is None


async def test_an_imported_service_is_refused_for_export(hub: HubApp, members: MemberFactory) -> None:
    west = await members.join("west")
    await west.create_service(NS, "web")
    await west.export(NS, "web")
    east = await members.join("east")
    await ensure_namespace(east.client, NS)
    imported = names.imported_object_name("web")

    async def imported_in_east() -> bool:
        try:
            await east.client.get(SERVICES, imported, NS)
        except NotFound:
            return False
        return True

    await eventually(imported_in_east, what="web imported into east")
    await east.export(NS, imported)
    await east.wait_condition(NS, imported, "Valid", "False", "ImportedService")
    await east.wait_condition(NS, imported, "Ready", "False", "Failed")
    assert _hub_export(hub, names.service_export_name("east", NS, imported)) is None


async def test_a_conflicting_port_sets_conflict_on_both_exporters_and_the_oldest_wins(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    await east.create_service(NS, "web", [("http", 80)])
    await east.export(NS, "web")
    await east.wait_condition(NS, "web", "Ready", "True", "Exported")

    west = await members.join("west")
    await west.create_service(NS, "web", [("http", 8080)])
    await west.export(NS, "web")

    west_conflict = await west.wait_condition(NS, "web", "Conflict", "True", "PortConflict")
    assert west_conflict["message"]
    await west.wait_condition(NS, "web", "Ready", "True", "Exported")
    # The older exporter learns of the conflict unasked, from a verdict the hub pushes.
    await east.wait_condition(NS, "web", "Conflict", "True", "PortConflict")
    service_import = hub.engine.index.imports[names.service_import_name(NS, "web")]
    assert [p.port for p in service_import.service_import.ports] == [80]

    # Once west agrees, the conflict clears on both.
    await west.client.patch(SERVICES, "web", {"spec": {"ports": [{"name": "http", "port": 80}]}}, NS)
    await west.wait_condition(NS, "web", "Conflict", "False", "NoConflicts")
    await east.wait_condition(NS, "web", "Conflict", "False", "NoConflicts")


async def test_a_service_update_reaches_the_hub(hub: HubApp, members: MemberFactory) -> None:
    east = await members.join("east")
    await east.create_service(NS, "web", [("http", 80)])
    await east.export(NS, "web")
    name = names.service_export_name("east", NS, "web")
    await _at_hub(hub, name)

    await east.client.patch(
        SERVICES, "web", {"spec": {"ports": [{"name": "http", "port": 80}, {"name": "grpc", "port": 9000}]}}, NS
    )

    async def updated() -> bool:
        export = _hub_export(hub, name)
        return export is not None and [p.port for p in export.service.ports] == [80, 9000]

    await eventually(updated, what="the new port at the hub")


async def test_deleting_a_service_export_removes_its_exports_from_the_hub(hub: HubApp, members: MemberFactory) -> None:
    east = await members.join("east")
    await east.create_service(NS, "web")
    await east.export(NS, "web")
    await _at_hub(hub, names.endpoints_export_name("east", NS, "web"))

    await east.client.delete(SERVICE_EXPORTS, "web", NS)
    await _gone_from_hub(hub, names.service_export_name("east", NS, "web"))
    await _gone_from_hub(hub, names.endpoints_export_name("east", NS, "web"))


async def test_deleting_the_service_withdraws_the_export_and_says_no_service(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    await east.create_service(NS, "web")
    await east.export(NS, "web")
    await east.wait_condition(NS, "web", "Ready", "True", "Exported")

    await east.client.delete(SERVICES, "web", NS)
    await east.wait_condition(NS, "web", "Valid", "False", "NoService")
    await _gone_from_hub(hub, names.service_export_name("east", NS, "web"))


async def test_conditions_keep_their_transition_time_while_their_status_holds(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    await east.create_service(NS, "web", [("http", 80)])
    await east.export(NS, "web")
    valid = await east.wait_condition(NS, "web", "Valid", "True", "Valid")
    await east.wait_condition(NS, "web", "Ready", "True", "Exported")

    # A change that keeps the export valid and ready rewrites nothing.
    obj = await east.service_export(NS, "web")
    assert obj is not None
    version = obj["metadata"]["resourceVersion"]
    await east.client.patch(SERVICES, "web", {"metadata": {"labels": {"tier": "front"}}}, NS)
    session = east.member.session
    assert session is not None

    async def settled() -> bool:
        exports = east.member.exports
        assert exports is not None
        await exports.wait_idle()
        return True

    await eventually(settled, what="the member idle")
    obj = await east.service_export(NS, "web")
    assert obj is not None
    assert obj["metadata"]["resourceVersion"] == version
    again = next(c for c in obj["status"]["conditions"] if c["type"] == "Valid")
    assert again["lastTransitionTime"] == valid["lastTransitionTime"]


async def test_an_export_the_leader_accepts_at_once_gets_its_status_in_one_write(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    await east.create_service(NS, "web")
    status_writes = ("patch", f"{SERVICE_EXPORTS.plural}.{SERVICE_EXPORTS.group}/status", "200")
    before = east.client.metrics.counts().get(status_writes, 0)
    await east.export(NS, "web")
    await east.wait_condition(NS, "web", "Ready", "True", "Exported")
    exports = east.member.exports
    assert exports is not None
    await exports.wait_idle()
    # Valid and Ready together: no "Pending" written first when the leader answers within the grace.
    assert east.client.metrics.counts().get(status_writes, 0) - before == 1


async def test_an_export_the_leader_does_not_answer_is_shown_pending(hub: HubApp, members: MemberFactory) -> None:
    east = await members.join("east")
    await east.create_service(NS, "web")
    await hub.stop()
    await east.export(NS, "web")
    await east.wait_condition(NS, "web", "Valid", "True", "Valid")
    await east.wait_condition(NS, "web", "Ready", "False", "Pending")
