"""CIDR overlap verdicts, the ClusterInfo export and its publisher, Service CIDR parsing (pure)."""

from __future__ import annotations

from mcapi.mchub.v1 import common_area_pb2 as pb
from member.gateway.cluster_info import ClusterInfoPublisher, ClusterRanges, build_cluster_info_export
from member.gateway.election import Candidate
from member.gateway.overlap import Ranges, find_overlaps
from member.gateway.service_cidr import cidr_from_service_cidr_objects, parse_valid_range

LOCAL = Ranges("", "10.96.0.0/12", ("10.1.0.0/16",))


def test_an_import_whose_service_cidr_overlaps_ours_is_flagged_with_both_cidrs() -> None:
    verdicts = find_overlaps(LOCAL, {"west-clusterinfo": Ranges("west", "10.100.0.0/16", ("10.2.0.0/16",))})
    verdict = verdicts["west-clusterinfo"]
    assert (verdict.status, verdict.reason) == ("True", "ServiceCIDROverlap")
    assert "10.100.0.0/16" in verdict.message and "10.96.0.0/12" in verdict.message


def test_a_pod_cidr_overlapping_another_imports_flags_both_and_names_the_keeper() -> None:
    verdicts = find_overlaps(
        LOCAL,
        {
            "west-clusterinfo": Ranges("west", "10.120.0.0/16", ("10.5.0.0/16",)),
            "north-clusterinfo": Ranges("north", "10.130.0.0/16", ("10.5.128.0/17",)),
        },
    )
    assert {v.reason for v in verdicts.values()} == {"PodCIDROverlap"}
    assert "cluster north keeps the route" in verdicts["west-clusterinfo"].message


def test_both_kinds_overlapping_gives_the_combined_reason() -> None:
    verdicts = find_overlaps(LOCAL, {"x": Ranges("x", "10.96.0.0/16", ("10.1.2.0/24",))})
    assert verdicts["x"].reason == "ServiceAndPodCIDROverlap"


def test_disjoint_ranges_get_no_overlap_and_ipv6_never_overlaps_ipv4() -> None:
    verdicts = find_overlaps(LOCAL, {"x": Ranges("x", "10.200.0.0/16", ("fd00::/64",))})
    assert (verdicts["x"].status, verdicts["x"].reason) == ("False", "NoOverlap")


def test_the_cluster_info_export_is_named_and_filled_like_antreas() -> None:
    gateway = Candidate("node-1", True, "10.0.0.1", "1.2.3.4", "key=")
    export = build_cluster_info_export(
        "east", "kube-system", [gateway], ClusterRanges("10.96.0.0/12", ("10.1.0.0/16",))
    )
    assert (export.export_name, export.cluster_id, export.namespace, export.name) == (
        "east-clusterinfo",
        "east",
        "kube-system",
        "east",
    )
    info = export.cluster_info
    assert info.cluster_id == "east" and info.service_cidr == "10.96.0.0/12"
    assert [g.gateway_ip for g in info.gateway_infos] == ["1.2.3.4"]
    assert list(info.pod_cidrs) == ["10.1.0.0/16"] and info.wire_guard.public_key == "key="


class _Sink:
    """The part of a hub session the publisher uses, recording every call."""

    def __init__(self) -> None:
        self.sent: list[pb.ResourceExport | str] = []

    def set_export(self, export: pb.ResourceExport) -> None:
        self.sent.append(export)

    def remove_export(self, export_name: str) -> None:
        self.sent.append(export_name)


def test_the_publisher_sends_only_changes_and_withdraws_without_a_gateway() -> None:
    sink = _Sink()
    publisher = ClusterInfoPublisher("east", "kube-system", sink)  # type: ignore[arg-type]
    ranges = ClusterRanges("10.96.0.0/12")
    gateway = Candidate("node-1", True, "10.0.0.1", "10.0.0.1")
    publisher.publish([gateway], ranges)
    publisher.publish([gateway], ranges)
    publisher.publish([], ranges)
    publisher.publish([], ranges)
    sent = sink.sent
    assert len(sent) == 2 and isinstance(sent[0], pb.ResourceExport) and sent[1] == "east-clusterinfo"
    assert sent[0].export_name == "east-clusterinfo"


def test_the_valid_range_is_read_from_kube_apiservers_error_text() -> None:
    message = (
        'Service "x" is invalid: spec.clusterIPs: Invalid value: []string{"0.0.0.0"}: failed to allocate IP '
        "0.0.0.0: the provided IP (0.0.0.0) is not in the valid range. The range of valid IPs is 10.96.0.0/12"
    )
    assert parse_valid_range(message) == "10.96.0.0/12"
    assert parse_valid_range("The range of valid IPs is fd00::/108, 10.0.0.0/16") == "10.0.0.0/16"
    assert parse_valid_range("something else") is None


def test_the_default_service_cidr_object_wins() -> None:
    items = [
        {"metadata": {"name": "extra"}, "spec": {"cidrs": ["10.200.0.0/16"]}},
        {"metadata": {"name": "kubernetes"}, "spec": {"cidrs": ["fd00::/108", "10.96.0.0/12"]}},
    ]
    assert cidr_from_service_cidr_objects(items) == "10.96.0.0/12"


def test_a_globally_addressed_import_is_resolved_and_no_conflict_for_the_others() -> None:
    local = Ranges("", "10.96.0.0/16", ("10.1.0.0/16",))
    imports = {
        "west-clusterinfo": Ranges("west", "10.96.0.0/16", ("10.1.0.0/16",), "242.0.32.0/20"),
        "south-clusterinfo": Ranges("south", "10.98.0.0/16", ("10.1.128.0/17",)),
    }
    verdicts = find_overlaps(local, imports)
    west = verdicts["west-clusterinfo"]
    assert (west.status, west.reason) == ("False", "GloballyAddressed")
    assert "overlaps the local Service CIDR 10.96.0.0/16" in west.message
    assert "reached through its global CIDR 242.0.32.0/20" in west.message
    # south overlaps the local Pod CIDR (not routable), but not west's: west is routed by its block.
    south = verdicts["south-clusterinfo"]
    assert south.status == "True" and "west" not in south.message
