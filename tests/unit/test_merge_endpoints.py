"""Endpoints import: the concatenation of the merged exporters' endpoints."""

from __future__ import annotations

from hub.merge import merge_group
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.unit.test_merge_builders import (
    CTX,
    HTTP,
    STRICT_CTX,
    endpoints_export,
    endpoints_import_name,
    service_export,
)


def _subsets(result_imports: dict[str, pb.ResourceImport]) -> list[tuple[str, list[str]]]:
    spec = result_imports[endpoints_import_name()].endpoints
    return [(s.cluster_id, [a.ip for a in s.addresses]) for s in spec.subsets]


def test_clusterip_shaped_endpoints_concatenate_one_address_per_cluster_sorted_by_cluster() -> None:
    exports = [
        service_export("west", age=0, cluster_ip="10.97.0.10"),
        service_export("east", age=1, cluster_ip="10.96.0.10"),
        endpoints_export("west", ["10.97.0.10"]),
        endpoints_export("east", ["10.96.0.10"]),
    ]
    result = merge_group(exports, {}, CTX)
    assert _subsets(result.imports) == [("east", ["10.96.0.10"]), ("west", ["10.97.0.10"])]
    imp = result.imports[endpoints_import_name()]
    assert (imp.namespace, imp.name, list(imp.cluster_ids)) == ("demo", "web", [])


def test_podip_shaped_endpoints_concatenate_every_pod_address() -> None:
    exports = [
        service_export("east", age=0),
        service_export("west", age=1),
        endpoints_export("east", ["10.244.1.5", "10.244.2.7"]),
        endpoints_export("west", ["10.245.1.9"]),
    ]
    result = merge_group(exports, {}, CTX)
    assert _subsets(result.imports) == [("east", ["10.244.1.5", "10.244.2.7"]), ("west", ["10.245.1.9"])]
    ports = result.imports[endpoints_import_name()].endpoints.subsets[0].ports
    assert [(p.name, p.protocol, p.port) for p in ports] == [HTTP]


def _ports_by_cluster(result_imports: dict[str, pb.ResourceImport]) -> list[tuple[str, list[tuple[str, str, int]]]]:
    spec = result_imports[endpoints_import_name()].endpoints
    return [(s.cluster_id, [(p.name, p.protocol, p.port) for p in s.ports]) for s in spec.subsets]


def test_endpoints_of_a_port_that_lost_a_port_conflict_are_left_out() -> None:
    # The suite's StrictPortConflict case: west's "http" is 8080, the import's (east's, oldest) 80.
    exports = [
        service_export("east", age=0),
        service_export("west", age=1, ports=[("http", "TCP", 8080)]),
        endpoints_export("east", ["10.244.1.5"]),
        endpoints_export("west", ["10.245.1.9"], ports=[("http", "TCP", 8080)]),
    ]
    result = merge_group(exports, {}, CTX)
    assert _subsets(result.imports) == [("east", ["10.244.1.5"])]
    status = result.statuses[exports[3].export_name]
    assert status.verdict == pb.VERDICT_ACCEPTED
    assert "without the ports 'http'" in status.message
    assert result.statuses[exports[2].export_name].message == f"Merged into {endpoints_import_name()}."


def test_only_the_ports_a_cluster_serves_as_the_import_does_are_kept() -> None:
    # west: "http" lost (8080 vs 80), "admin" is its own (the union has it as west serves it).
    exports = [
        service_export("east", age=0),
        service_export("west", age=1, ports=[("http", "TCP", 8080), ("admin", "TCP", 9000)]),
        endpoints_export("east", ["10.244.1.5"]),
        endpoints_export("west", ["10.245.1.9"], ports=[("http", "TCP", 8080), ("admin", "TCP", 9000)]),
    ]
    result = merge_group(exports, {}, CTX)
    assert _ports_by_cluster(result.imports) == [("east", [HTTP]), ("west", [("admin", "TCP", 9000)])]


def test_the_service_export_decides_not_the_endpoint_port_number() -> None:
    # PodIP shape: west's "http" is Service port 8080 with target port 80; its endpoints say 80,
    # the import's number, but west's Service serves "http" on 8080: left out all the same.
    exports = [
        service_export("east", age=0),
        service_export("west", age=1, ports=[("http", "TCP", 8080)]),
        endpoints_export("east", ["10.244.1.5"], ports=[("http", "TCP", 8000)]),
        endpoints_export("west", ["10.245.1.9"], ports=[HTTP]),
    ]
    result = merge_group(exports, {}, CTX)
    # east's target port differs from its Service port: kept (its Service serves "http" on 80).
    assert _ports_by_cluster(result.imports) == [("east", [("http", "TCP", 8000)])]


def test_a_same_named_port_of_another_protocol_is_left_out() -> None:
    exports = [
        service_export("east", age=0, ports=[("dns", "TCP", 53)]),
        service_export("west", age=1, ports=[("dns", "UDP", 53)]),
        endpoints_export("east", ["10.244.1.5"], ports=[("dns", "TCP", 53)]),
        endpoints_export("west", ["10.245.1.9"], ports=[("dns", "UDP", 53)]),
    ]
    result = merge_group(exports, {}, CTX)
    assert _subsets(result.imports) == [("east", ["10.244.1.5"])]


def test_strict_ports_mode_merges_the_endpoints_of_the_exporters_it_keeps_as_before() -> None:
    exports = [
        service_export("east", age=0),
        service_export("west", age=1),
        service_export("north", age=2, ports=[("http", "TCP", 8080)]),
        endpoints_export("east", ["10.244.1.5"]),
        endpoints_export("west", ["10.245.1.9"]),
        endpoints_export("north", ["10.246.1.9"], ports=[("http", "TCP", 8080)]),
    ]
    result = merge_group(exports, {}, STRICT_CTX)
    assert _ports_by_cluster(result.imports) == [("east", [HTTP]), ("west", [HTTP])]
    assert result.statuses[exports[5].export_name].verdict == pb.VERDICT_REJECTED


def test_endpoints_of_an_invalid_exporter_are_left_out() -> None:
    exports = [
        service_export("east", age=0, service_type="ExternalName", cluster_ip="", ports=[]),
        service_export("west", age=1),
        endpoints_export("east", ["10.244.1.5"]),
        endpoints_export("west", ["10.245.1.9"]),
    ]
    result = merge_group(exports, {}, CTX)
    assert _subsets(result.imports) == [("west", ["10.245.1.9"])]
    status = result.statuses[exports[2].export_name]
    assert (status.verdict, status.reason) == (pb.VERDICT_INVALID, "InvalidServiceType")


def test_endpoints_without_a_service_export_are_held_but_not_merged() -> None:
    exports = [
        service_export("east"),
        endpoints_export("east", ["10.244.1.5"]),
        endpoints_export("west", ["1.2.3.4"]),
    ]
    result = merge_group(exports, {}, CTX)
    assert _subsets(result.imports) == [("east", ["10.244.1.5"])]
    status = result.statuses[exports[2].export_name]
    assert status.verdict == pb.VERDICT_ACCEPTED
    assert "waits for the Service export" in status.message


def test_endpoints_alone_produce_no_import() -> None:
    lone = endpoints_export("east", ["10.244.1.5"])
    result = merge_group([lone], {}, CTX)
    assert result.imports == {}
    assert result.statuses[lone.export_name].verdict == pb.VERDICT_ACCEPTED


def test_a_service_export_without_endpoints_still_produces_an_empty_endpoints_import() -> None:
    result = merge_group([service_export("east")], {}, CTX)
    assert _subsets(result.imports) == []


def test_the_exporters_endpoints_are_copied_not_shared() -> None:
    ep = endpoints_export("east", ["10.244.1.5"])
    result = merge_group([service_export("east"), ep], {}, CTX)
    result.imports[endpoints_import_name()].endpoints.subsets[0].addresses[0].ip = "9.9.9.9"
    assert ep.endpoints.subsets[0].addresses[0].ip == "10.244.1.5"
    assert ep.endpoints.subsets[0].cluster_id == ""
