"""ClusterInfo and AntreaClusterNetworkPolicy imports, and who receives imports."""

from __future__ import annotations

from hub.merge import merge_group
from mcapi.delivery import delivers_to
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.unit.test_merge_builders import CTX, acnp_export, cluster_info_export, service_export


def test_a_cluster_info_export_becomes_one_import_named_after_its_cluster() -> None:
    east = cluster_info_export("east")
    result = merge_group([east], {}, CTX)
    imp = result.imports["east-clusterinfo"]
    assert imp.cluster_info == east.cluster_info
    assert list(imp.cluster_ids) == []
    assert result.statuses[east.export_name].verdict == pb.VERDICT_ACCEPTED


def test_a_cluster_info_import_reaches_every_member_but_the_one_it_describes() -> None:
    imp = merge_group([cluster_info_export("east")], {}, CTX).imports["east-clusterinfo"]
    assert delivers_to(imp, "west")
    assert delivers_to(imp, "north")
    assert not delivers_to(imp, "east")


def test_an_import_with_target_clusters_reaches_only_them() -> None:
    imp = pb.ResourceImport(import_name="x", cluster_ids=["west"])
    assert delivers_to(imp, "west")
    assert not delivers_to(imp, "east")


def test_a_service_import_reaches_every_member_including_the_exporters() -> None:
    imp = merge_group([service_export("east")], {}, CTX).imports["demo-web-service"]
    assert delivers_to(imp, "east")
    assert delivers_to(imp, "west")


def test_no_cluster_info_exports_means_no_import() -> None:
    assert merge_group([], {}, CTX).imports == {}


def test_an_acnp_export_becomes_one_import_for_all_members() -> None:
    policy = acnp_export("deny-all")
    result = merge_group([policy], {}, CTX)
    imp = result.imports["deny-all-antreaclusternetworkpolicy"]
    assert imp.cluster_network_policy == policy.cluster_network_policy
    assert (imp.name, list(imp.cluster_ids)) == ("deny-all", [])
    assert delivers_to(imp, "east")
    assert result.statuses[policy.export_name].verdict == pb.VERDICT_ACCEPTED


def test_a_younger_export_of_the_same_acnp_name_is_rejected_as_a_duplicate() -> None:
    older = acnp_export("deny-all", cluster="admin", age=0)
    younger = acnp_export("deny-all", cluster="leader", age=3)
    younger.export_name = "deny-all-acnp-2"
    younger.cluster_network_policy["priority"] = 9
    result = merge_group([younger, older], {}, CTX)
    assert result.imports["deny-all-antreaclusternetworkpolicy"].cluster_network_policy["priority"] == 1
    assert result.statuses[younger.export_name].reason == "DuplicateExport"
