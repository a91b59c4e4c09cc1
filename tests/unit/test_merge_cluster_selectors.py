"""KEP-5939 in the merge: cluster selectors go into the ServiceImport with every member's results,
conflicts are ClusterSelectorsConflict, a Headless export cannot have them, and each exporter
learns which members' traffic it receives."""

from __future__ import annotations

from dataclasses import replace

from hub.merge import merge_group
from hub.merge.verdicts import REASON_CLUSTER_SELECTORS_CONFLICT, REASON_INVALID_SERVICE_TYPE
from mcapi.cluster_selection import results_for, selectors_from_json
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.unit.test_merge_builders import CTX, endpoints_export, service_export, service_import_name

REGION = "region.topology.k8s.io"
SAME_REGION = selectors_from_json([{"propertySelector": {"matchProperties": {REGION: "@SameAsImporter@"}}}])
ANYWHERE_EU = selectors_from_json([{"propertySelector": {"matchProperties": {REGION: "eu"}}}])
MEMBERS = {
    "east": {REGION: "us"},
    "north": {REGION: "eu"},
    "south": {REGION: "eu"},
    "west": {REGION: "us"},
}
CTX_WITH_MEMBERS = replace(CTX, member_properties=MEMBERS)


def selective(
    cluster: str, selectors: list[pb.ClusterSelector], *, age: int = 0, **kwargs: object
) -> pb.ResourceExport:
    export = service_export(cluster, age=age, **kwargs)  # type: ignore[arg-type]
    export.service.cluster_selectors.extend(selectors)
    return export


def test_every_member_gets_the_results_of_the_selectors_among_the_exporters() -> None:
    exports = [
        selective("north", SAME_REGION, age=0),
        selective("west", SAME_REGION, age=1),
        endpoints_export("north", ["10.0.0.1"]),
        endpoints_export("west", ["10.0.0.2"]),
    ]
    result = merge_group(exports, {}, CTX_WITH_MEMBERS)
    spec = result.imports[service_import_name()].service_import
    assert list(spec.cluster_selectors) == SAME_REGION
    assert results_for(spec, "south") == [["north"]]
    assert results_for(spec, "east") == [["west"]]
    assert results_for(spec, "north") == [["north"]]
    assert [list(s.importers) for s in spec.selections] == [["east", "west"], ["north", "south"]]
    north, west = (result.statuses[e.export_name] for e in exports[:2])
    assert (north.verdict, list(north.clusters)) == (pb.VERDICT_ACCEPTED, ["north", "south"])
    assert list(west.clusters) == ["east", "west"]


def test_a_region_whose_exporters_have_no_ready_endpoint_falls_back_to_every_exporter() -> None:
    exports = [
        selective("north", SAME_REGION, age=0),
        selective("west", SAME_REGION, age=1),
        endpoints_export("north", []),
        endpoints_export("west", ["10.0.0.2"]),
    ]
    result = merge_group(exports, {}, CTX_WITH_MEMBERS)
    north, west = (result.statuses[e.export_name] for e in exports[:2])
    assert list(north.clusters) == ["north", "south"]
    assert list(west.clusters) == ["east", "north", "south", "west"]


def test_differing_selectors_are_a_conflict_won_by_the_oldest() -> None:
    exports = [selective("north", SAME_REGION, age=0), selective("west", ANYWHERE_EU, age=1)]
    result = merge_group(exports, {}, CTX_WITH_MEMBERS)
    spec = result.imports[service_import_name()].service_import
    assert list(spec.cluster_selectors) == SAME_REGION
    for export in exports:
        status = result.statuses[export.export_name]
        assert (status.verdict, status.reason) == (pb.VERDICT_CONFLICT, REASON_CLUSTER_SELECTORS_CONFLICT)


def test_a_headless_export_with_selectors_is_invalid() -> None:
    headless = selective("north", SAME_REGION, cluster_ip="None")
    result = merge_group([headless], {}, CTX_WITH_MEMBERS)
    status = result.statuses[headless.export_name]
    assert (status.verdict, status.reason) == (pb.VERDICT_INVALID, REASON_INVALID_SERVICE_TYPE)
    assert service_import_name() not in result.imports


def test_without_selectors_nothing_is_selected_and_no_export_lists_clusters() -> None:
    exports = [service_export("north"), endpoints_export("north", ["10.0.0.1"])]
    result = merge_group(exports, {}, CTX_WITH_MEMBERS)
    spec = result.imports[service_import_name()].service_import
    assert not spec.selections and not spec.cluster_selectors
    assert list(result.statuses[exports[0].export_name].clusters) == []
