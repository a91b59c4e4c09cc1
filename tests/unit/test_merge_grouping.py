"""Group keys, the imports a group can produce, and derived export names."""

from __future__ import annotations

import pytest

from hub.merge import (
    MixedGroup,
    UnknownExportKind,
    UnknownGroupKind,
    expected_export_name,
    group_key,
    import_names_for_group,
    merge_group,
)
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.unit.test_merge_builders import (
    CTX,
    acnp_export,
    cluster_info_export,
    endpoints_export,
    label_export,
    service_export,
)

LABEL = "ns:kubernetes.io/metadata.name=demo&pod:app=web"


def test_service_and_endpoints_exports_of_one_service_share_a_group() -> None:
    assert group_key(service_export("east")) == ("service", "demo", "web")
    assert group_key(endpoints_export("west", ["10.0.0.1"])) == ("service", "demo", "web")


def test_other_kinds_are_grouped_by_what_makes_their_import() -> None:
    assert group_key(cluster_info_export("east")) == ("clusterinfo", "east")
    assert group_key(acnp_export("deny-all")) == ("acnp", "deny-all")
    assert group_key(label_export("east", LABEL)) == ("labelidentity", LABEL)


def test_an_export_without_payload_has_no_group() -> None:
    with pytest.raises(UnknownExportKind):
        group_key(pb.ResourceExport(export_name="x", cluster_id="east"))


def test_each_group_lists_every_import_it_can_produce() -> None:
    assert import_names_for_group(("service", "demo", "web")) == ["demo-web-service", "demo-web-endpoints"]
    assert import_names_for_group(("clusterinfo", "east")) == ["east-clusterinfo"]
    assert import_names_for_group(("acnp", "deny-all")) == ["deny-all-antreaclusternetworkpolicy"]
    assert import_names_for_group(("labelidentity", LABEL)) == [names.label_hash(LABEL)]
    with pytest.raises(UnknownGroupKind):
        import_names_for_group(("gateway", "east"))


def test_a_group_produces_only_imports_it_lists() -> None:
    groups = [
        [service_export("east"), endpoints_export("east", ["10.96.0.10"])],
        [cluster_info_export("east")],
        [acnp_export("deny-all")],
        [label_export("east", LABEL)],
    ]
    for exports in groups:
        produced = merge_group(exports, {}, CTX).imports
        assert set(produced) == set(import_names_for_group(group_key(exports[0])))
        assert all(name == imp.import_name for name, imp in produced.items())


def test_exports_of_different_groups_are_refused_together() -> None:
    with pytest.raises(MixedGroup):
        merge_group([service_export("east"), service_export("east", name="api")], {}, CTX)


def test_expected_export_names_follow_antrea() -> None:
    assert expected_export_name(service_export("east")) == "east-demo-web-service"
    assert expected_export_name(endpoints_export("east", ["10.0.0.1"])) == "east-demo-web-endpoints"
    assert expected_export_name(cluster_info_export("east")) == "east-clusterinfo"
    assert expected_export_name(label_export("east", LABEL)) == f"east-{names.label_hash(LABEL)}"
    assert expected_export_name(acnp_export("deny-all")) is None
    assert expected_export_name(pb.ResourceExport(cluster_id="east")) is None
