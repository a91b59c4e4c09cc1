"""ServiceImport merge rules (MCS API conformance expectations)."""

from __future__ import annotations

from hub.merge import merge_group
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.unit.test_merge_builders import (
    CTX,
    HTTP,
    STRICT_CTX,
    endpoints_export,
    port_tuples,
    service_export,
    service_import_name,
)


def _spec(result_imports: dict[str, pb.ResourceImport]) -> pb.ServiceImportSpec:
    return result_imports[service_import_name()].service_import


def test_a_single_clusterip_export_becomes_a_clustersetip_import_with_its_ports() -> None:
    east = service_export("east", ports=[HTTP, ("https", "TCP", 443)])
    result = merge_group([east], {}, CTX)
    spec = _spec(result.imports)
    assert spec.type == "ClusterSetIP"
    assert port_tuples(spec.ports) == [("http", "TCP", 80), ("https", "TCP", 443)]
    assert list(spec.clusters) == ["east"]
    assert spec.session_affinity == "None"
    assert spec.internal_traffic_policy == "Cluster"
    assert result.statuses[east.export_name].verdict == pb.VERDICT_ACCEPTED
    imp = result.imports[service_import_name()]
    assert (imp.namespace, imp.name, list(imp.cluster_ids)) == ("demo", "web", [])


def test_identical_exports_from_two_clusters_merge_without_conflict() -> None:
    east, west = service_export("east", age=0), service_export("west", age=1)
    result = merge_group([west, east], {}, CTX)
    assert list(_spec(result.imports).clusters) == ["east", "west"]
    assert {s.verdict for s in result.statuses.values()} == {pb.VERDICT_ACCEPTED}


def test_different_port_names_give_the_union_and_a_port_conflict_on_both_exporters() -> None:
    east = service_export("east", age=0, ports=[HTTP])
    west = service_export("west", age=1, ports=[HTTP, ("stcp", "SCTP", 142)])
    result = merge_group([east, west], {}, CTX)
    assert port_tuples(_spec(result.imports).ports) == [HTTP, ("stcp", "SCTP", 142)]
    for export in (east, west):
        status = result.statuses[export.export_name]
        assert status.verdict == pb.VERDICT_CONFLICT
        assert status.reason == "PortConflict"
        assert "east, west" in status.message


def test_a_same_named_port_with_another_number_is_won_by_the_oldest_export() -> None:
    west = service_export("west", age=0, ports=[("http", "TCP", 8080)])
    east = service_export("east", age=5, ports=[HTTP])
    result = merge_group([east, west], {}, CTX)
    assert port_tuples(_spec(result.imports).ports) == [("http", "TCP", 8080)]
    for export in (east, west):
        status = result.statuses[export.export_name]
        assert (status.verdict, status.reason) == (pb.VERDICT_CONFLICT, "PortConflict")
        assert "west" in status.message and "east" in status.message
    assert list(_spec(result.imports).clusters) == ["east", "west"]


def test_a_same_named_port_with_another_protocol_is_a_port_conflict() -> None:
    east = service_export("east", age=0, ports=[("dns", "UDP", 53)])
    west = service_export("west", age=1, ports=[("dns", "TCP", 53)])
    result = merge_group([west, east], {}, CTX)
    assert port_tuples(_spec(result.imports).ports) == [("dns", "UDP", 53)]
    assert result.statuses[west.export_name].reason == "PortConflict"


def test_the_oldest_export_is_decided_by_create_time_not_by_cluster_id() -> None:
    zeta = service_export("zeta", age=0, ports=[("http", "TCP", 81)])
    alpha = service_export("alpha", age=1, ports=[HTTP])
    result = merge_group([alpha, zeta], {}, CTX)
    assert port_tuples(_spec(result.imports).ports) == [("http", "TCP", 81)]


def test_headless_against_clustersetip_is_a_type_conflict_won_by_the_oldest() -> None:
    east = service_export("east", age=0)
    west = service_export("west", age=1, cluster_ip="None")
    result = merge_group([west, east], {}, CTX)
    assert _spec(result.imports).type == "ClusterSetIP"
    for export in (east, west):
        status = result.statuses[export.export_name]
        assert (status.verdict, status.reason) == (pb.VERDICT_CONFLICT, "TypeConflict")


def test_an_older_headless_export_makes_the_import_headless() -> None:
    east = service_export("east", age=0, cluster_ip="None")
    west = service_export("west", age=1)
    result = merge_group([east, west], {}, CTX)
    assert _spec(result.imports).type == "Headless"
    assert result.statuses[west.export_name].reason == "TypeConflict"


def test_a_lone_headless_export_gives_a_headless_import() -> None:
    result = merge_group([service_export("east", cluster_ip="None")], {}, CTX)
    assert _spec(result.imports).type == "Headless"


def test_session_affinity_and_its_timeout_are_copied_from_the_exported_service() -> None:
    east = service_export("east", affinity="ClientIP", timeout=600)
    spec = _spec(merge_group([east], {}, CTX).imports)
    assert (spec.session_affinity, spec.session_affinity_timeout_seconds) == ("ClientIP", 600)


def test_an_unset_clientip_timeout_means_the_kubernetes_default_and_does_not_conflict() -> None:
    east = service_export("east", age=0, affinity="ClientIP", timeout=0)
    west = service_export("west", age=1, affinity="ClientIP", timeout=10800)
    result = merge_group([east, west], {}, CTX)
    assert _spec(result.imports).session_affinity_timeout_seconds == 10800
    assert result.statuses[west.export_name].verdict == pb.VERDICT_ACCEPTED


def test_differing_session_affinity_is_a_conflict_on_every_exporter() -> None:
    east = service_export("east", age=0, affinity="ClientIP")
    west = service_export("west", age=1, affinity="None")
    result = merge_group([east, west], {}, CTX)
    assert _spec(result.imports).session_affinity == "ClientIP"
    for export in (east, west):
        assert result.statuses[export.export_name].reason == "SessionAffinityConflict"


def test_differing_session_affinity_timeouts_are_a_session_affinity_config_conflict() -> None:
    east = service_export("east", age=0, affinity="ClientIP", timeout=300)
    west = service_export("west", age=1, affinity="ClientIP", timeout=900)
    result = merge_group([west, east], {}, CTX)
    assert _spec(result.imports).session_affinity_timeout_seconds == 300
    for export in (east, west):
        status = result.statuses[export.export_name]
        assert (status.verdict, status.reason) == (pb.VERDICT_CONFLICT, "SessionAffinityConfigConflict")
        assert "300" in status.message


def test_internal_traffic_policy_is_copied_and_its_differences_conflict() -> None:
    east = service_export("east", age=0, internal_traffic_policy="Local")
    west = service_export("west", age=1)
    result = merge_group([east, west], {}, CTX)
    assert _spec(result.imports).internal_traffic_policy == "Local"
    assert result.statuses[west.export_name].reason == "InternalTrafficPolicyConflict"


def test_an_unset_internal_traffic_policy_equals_cluster() -> None:
    east = service_export("east", age=0, internal_traffic_policy="Cluster")
    west = service_export("west", age=1)
    result = merge_group([east, west], {}, CTX)
    assert result.statuses[west.export_name].verdict == pb.VERDICT_ACCEPTED


def test_traffic_distribution_is_copied_and_set_against_unset_conflicts() -> None:
    east = service_export("east", age=0, traffic_distribution="PreferClose")
    west = service_export("west", age=1)
    result = merge_group([east, west], {}, CTX)
    assert _spec(result.imports).traffic_distribution == "PreferClose"
    assert result.statuses[east.export_name].reason == "TrafficDistributionConflict"


def test_ip_families_follow_the_oldest_export_and_differences_conflict() -> None:
    east = service_export("east", age=0, ip_families=["IPv4"])
    west = service_export("west", age=1, ip_families=["IPv6"])
    result = merge_group([east, west], {}, CTX)
    assert list(_spec(result.imports).ip_families) == ["IPv4"]
    assert result.statuses[west.export_name].reason == "IPFamilyConflict"


def test_an_export_stating_no_ip_families_does_not_conflict() -> None:
    east = service_export("east", age=0)
    west = service_export("west", age=1, ip_families=["IPv6", "IPv4"])
    result = merge_group([east, west], {}, CTX)
    assert list(_spec(result.imports).ip_families) == ["IPv6", "IPv4"]
    assert result.statuses[east.export_name].verdict == pb.VERDICT_ACCEPTED


def test_several_conflicts_report_the_most_significant_reason_and_describe_all() -> None:
    east = service_export("east", age=0, affinity="ClientIP")
    west = service_export("west", age=1, cluster_ip="None", ports=[("http", "TCP", 81)])
    status = merge_group([east, west], {}, CTX).statuses[east.export_name]
    assert status.reason == "TypeConflict"
    assert "port" in status.message and "sessionAffinity" in status.message


def test_exported_labels_and_annotations_of_agreeing_exporters_go_to_the_import() -> None:
    labels, annotations = {"dummy-label": "true"}, {"dummy-annotation": "true"}
    east = service_export("east", age=0, exported_labels=labels, exported_annotations=annotations)
    west = service_export("west", age=1, exported_labels=labels, exported_annotations=annotations)
    result = merge_group([east, west], {}, CTX)
    spec = _spec(result.imports)
    assert (dict(spec.labels), dict(spec.annotations)) == (labels, annotations)
    assert {s.verdict for s in result.statuses.values()} == {pb.VERDICT_ACCEPTED}


def test_conflicting_exported_labels_are_won_by_the_oldest_with_a_labels_conflict_on_both() -> None:
    # The suite's ExportedLabels conflict case: different keys on each exporter.
    east = service_export(
        "east", age=0, exported_labels={"dummy-label": "true"}, exported_annotations={"dummy-annotation": "true"}
    )
    west = service_export(
        "west", age=1, exported_labels={"dummy-label2": "true"}, exported_annotations={"dummy-annotation2": "true"}
    )
    result = merge_group([west, east], {}, CTX)
    spec = _spec(result.imports)
    assert (dict(spec.labels), dict(spec.annotations)) == ({"dummy-label": "true"}, {"dummy-annotation": "true"})
    for export in (east, west):
        status = result.statuses[export.export_name]
        assert (status.verdict, status.reason) == (pb.VERDICT_CONFLICT, "LabelsConflict")
        assert "exported labels" in status.message and "exported annotations" in status.message
        assert "the keys 'dummy-label' from the oldest export, of cluster east" in status.message


def test_any_difference_in_the_maps_is_a_conflict_even_a_value_or_an_added_key() -> None:
    east = service_export("east", age=0, exported_annotations={"a": "1"})
    for other in ({"a": "2"}, {"a": "1", "b": "1"}, {}):
        west = service_export("west", age=1, exported_annotations=other)
        result = merge_group([east, west], {}, CTX)
        assert dict(_spec(result.imports).annotations) == {"a": "1"}
        assert result.statuses[west.export_name].reason == "AnnotationsConflict"


def test_exported_metadata_conflicts_rank_after_the_service_conflicts() -> None:
    east = service_export("east", age=0, exported_labels={"a": "1"})
    west = service_export("west", age=1, ports=[("http", "TCP", 81)])
    status = merge_group([east, west], {}, CTX).statuses[east.export_name]
    assert status.reason == "PortConflict"
    assert "exported labels" in status.message


def test_an_externalname_export_is_invalid_and_gives_no_import() -> None:
    east = service_export("east", service_type="ExternalName", cluster_ip="", ports=[])
    result = merge_group([east], {}, CTX)
    assert result.imports == {}
    status = result.statuses[east.export_name]
    assert (status.verdict, status.reason) == (pb.VERDICT_INVALID, "InvalidServiceType")


def test_an_externalname_export_beside_a_valid_one_is_left_out_of_the_import() -> None:
    east = service_export("east", age=0, service_type="ExternalName", cluster_ip="", ports=[])
    west = service_export("west", age=1)
    result = merge_group([east, west], {}, CTX)
    assert list(_spec(result.imports).clusters) == ["west"]
    assert result.statuses[west.export_name].verdict == pb.VERDICT_ACCEPTED
    assert result.statuses[east.export_name].verdict == pb.VERDICT_INVALID


def test_nodeport_and_loadbalancer_exports_are_imported_as_clustersetip() -> None:
    east = service_export("east", age=0, service_type="NodePort")
    west = service_export("west", age=1, service_type="LoadBalancer")
    result = merge_group([east, west], {}, CTX)
    assert _spec(result.imports).type == "ClusterSetIP"
    assert {s.verdict for s in result.statuses.values()} == {pb.VERDICT_ACCEPTED}


def test_strict_mode_rejects_an_export_whose_ports_differ_and_drops_its_endpoints() -> None:
    east = service_export("east", age=0, ports=[HTTP])
    west = service_export("west", age=1, ports=[HTTP, ("metrics", "TCP", 9090)])
    north = service_export("north", age=2, ports=[HTTP])
    exports = [
        east,
        west,
        north,
        endpoints_export("east", ["10.96.0.10"]),
        endpoints_export("west", ["10.97.0.10"]),
        endpoints_export("north", ["10.98.0.10"]),
    ]
    result = merge_group(exports, {}, STRICT_CTX)
    spec = _spec(result.imports)
    assert port_tuples(spec.ports) == [HTTP]
    assert list(spec.clusters) == ["east", "north"]
    status = result.statuses[west.export_name]
    assert (status.verdict, status.reason) == (pb.VERDICT_REJECTED, "ConvergeFailure")
    assert result.statuses[east.export_name].verdict == pb.VERDICT_ACCEPTED
    assert result.statuses[north.export_name].verdict == pb.VERDICT_ACCEPTED
    subsets = result.imports["demo-web-endpoints"].endpoints.subsets
    assert [s.cluster_id for s in subsets] == ["east", "north"]
    assert result.statuses[exports[4].export_name].verdict == pb.VERDICT_REJECTED


def test_strict_mode_still_reports_other_conflicts_among_the_kept_exports() -> None:
    east = service_export("east", age=0, affinity="ClientIP")
    west = service_export("west", age=1)
    result = merge_group([east, west], {}, STRICT_CTX)
    assert result.statuses[west.export_name].reason == "SessionAffinityConflict"


def test_the_import_ports_are_sorted_by_name_then_number() -> None:
    east = service_export("east", ports=[("b", "TCP", 2), ("a", "TCP", 9), ("c", "UDP", 1)])
    assert [p.name for p in _spec(merge_group([east], {}, CTX).imports).ports] == ["a", "b", "c"]


def test_a_second_export_of_the_same_cluster_is_rejected_as_a_duplicate() -> None:
    first = service_export("east", age=0)
    second = service_export("east", age=1, ports=[("http", "TCP", 81)])
    second.export_name = "east-demo-web-service-copy"
    result = merge_group([first, second], {}, CTX)
    assert port_tuples(_spec(result.imports).ports) == [HTTP]
    assert result.statuses[second.export_name].reason == "DuplicateExport"
    assert result.statuses[first.export_name].verdict == pb.VERDICT_ACCEPTED


def test_merging_never_mutates_the_exports_given() -> None:
    east = service_export("east", age=0)
    west = service_export("west", age=1, ports=[("http", "TCP", 81)])
    before = [east.SerializeToString(), west.SerializeToString()]
    result = merge_group([east, west], {}, CTX)
    _spec(result.imports).ports[0].port = 1
    assert [east.SerializeToString(), west.SerializeToString()] == before
