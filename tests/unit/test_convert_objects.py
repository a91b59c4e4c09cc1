from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from mcapi import crds, names
from mcapi.convert import (
    ConversionError,
    build_cluster_info_import,
    build_service_import,
    endpoints_from_endpoints_json,
    export_kind,
    resource_export_from_cr,
    resource_export_to_cr,
    resource_import_from_cr,
    resource_import_to_cr,
    service_import_spec_v1alpha1,
    service_spec_from_service_json,
)
from mcapi.mchub.v1 import common_area_pb2 as pb

NOW = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)


def _service_export() -> pb.ResourceExport:
    return pb.ResourceExport(
        export_name=names.service_export_name("east", "default", "nginx"),
        cluster_id="east",
        namespace="default",
        name="nginx",
        service=pb.ServiceSpec(type="ClusterIP", ports=[pb.ServicePort(name="http", protocol="TCP", port=80)]),
    )


def test_a_service_export_becomes_the_cr_antrea_writes() -> None:
    document = resource_export_to_cr(_service_export()).to_dict()
    assert document["metadata"] == {
        "name": "east-default-nginx-service",
        "namespace": "antrea-multicluster",
        "labels": {
            "sourceName": "nginx",
            "sourceNamespace": "default",
            "sourceClusterID": "east",
            "sourceKind": "Service",
        },
    }
    assert document["spec"] == {
        "clusterID": "east",
        "name": "nginx",
        "namespace": "default",
        "kind": "Service",
        "service": {"serviceSpec": {"type": "ClusterIP", "ports": [{"name": "http", "protocol": "TCP", "port": 80}]}},
    }


def test_exported_labels_and_annotations_go_beside_antreas_service_spec() -> None:
    message = _service_export()
    message.service.exported_labels["dummy-label"] = "true"
    message.service.exported_annotations["dummy-annotation"] = "true"
    document = resource_export_to_cr(message).to_dict()
    assert document["spec"]["service"] == {
        "serviceSpec": {"type": "ClusterIP", "ports": [{"name": "http", "protocol": "TCP", "port": 80}]},
        "exportedLabels": {"dummy-label": "true"},
        "exportedAnnotations": {"dummy-annotation": "true"},
    }
    assert resource_export_from_cr(document) == message


def test_the_hub_create_time_and_verdict_are_kept_in_annotations_and_conditions() -> None:
    message = _service_export()
    message.create_time.FromJsonString("2024-05-01T10:00:00.123456789Z")
    message.status.CopyFrom(pb.ExportStatus(verdict=pb.VERDICT_CONFLICT, reason="PortConflict", message="port 80"))
    cr = resource_export_to_cr(message, namespace="leader-ns", now=NOW)
    assert cr.metadata.namespace == "leader-ns"
    assert cr.metadata.annotations == {
        names.ANNOTATION_EXPORT_CREATE_TIME: "2024-05-01T10:00:00.123456789Z",
        names.ANNOTATION_EXPORT_VERDICT: "VERDICT_CONFLICT",
    }
    assert cr.status is not None
    [condition] = cr.status.conditions
    assert (condition.type, condition.status, condition.reason) == ("Succeeded", "True", "PortConflict")
    assert condition.last_transition_time == NOW


def test_a_rejected_export_shows_antreas_failure_condition() -> None:
    message = _service_export()
    message.status.CopyFrom(pb.ExportStatus(verdict=pb.VERDICT_REJECTED, reason="ConvergeFailure"))
    cr = resource_export_to_cr(message)
    assert cr.status is not None
    assert [(c.type, c.status, c.reason) for c in cr.status.conditions] == [("Failure", "True", "ConvergeFailure")]


def test_without_annotations_the_create_time_and_verdict_come_from_the_object() -> None:
    document = resource_export_to_cr(_service_export()).to_dict()
    document["metadata"]["creationTimestamp"] = "2024-05-01T10:00:00Z"
    document["status"] = {"conditions": [{"type": "Failure", "status": "True", "reason": "ConvergeFailure"}]}
    message = resource_export_from_cr(document)
    assert message.create_time.ToJsonString() == "2024-05-01T10:00:00Z"
    assert message.status == pb.ExportStatus(verdict=pb.VERDICT_REJECTED, reason="ConvergeFailure")


def test_the_admin_acnp_export_of_the_user_guide_converts() -> None:
    document: dict[str, Any] = {
        "apiVersion": "multicluster.crd.antrea.io/v1alpha1",
        "kind": "ResourceExport",
        "metadata": {"name": "strict-namespace-isolation-for-test-clusterset", "namespace": "antrea-multicluster"},
        "spec": {
            "kind": "AntreaClusterNetworkPolicy",
            "name": "strict-namespace-isolation",
            "clusterNetworkPolicy": {
                "priority": 1,
                "tier": "securityops",
                "appliedTo": [{"namespaceSelector": {}}],
                "ingress": [{"action": "Pass", "from": [{"namespaces": {"match": "Self"}}]}],
            },
        },
    }
    message = resource_export_from_cr(document)
    assert export_kind(message) == names.KIND_ACNP
    back = resource_export_to_cr(message).to_dict()
    assert back["spec"]["clusterNetworkPolicy"] == document["spec"]["clusterNetworkPolicy"]


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ({"kind": "Service", "name": "x"}, "has no Service payload"),
        ({"kind": "ExternalEntity", "externalEntity": {}}, "not supported"),
        ({"kind": "Service", "service": {}, "bogus": 1}, "invalid ResourceExport"),
    ],
)
def test_a_cr_that_cannot_be_converted_raises_a_conversion_error(spec: dict[str, object], expected: str) -> None:
    with pytest.raises(ConversionError, match=expected):
        resource_export_from_cr({"metadata": {"name": "e"}, "spec": spec})


def test_an_unknown_verdict_annotation_is_a_conversion_error() -> None:
    document = resource_export_to_cr(_service_export()).to_dict()
    document["metadata"]["annotations"] = {names.ANNOTATION_EXPORT_VERDICT: "VERDICT_MAYBE"}
    with pytest.raises(ConversionError, match="unknown verdict"):
        resource_export_from_cr(document)


def test_an_export_without_payload_has_no_kind() -> None:
    with pytest.raises(ConversionError, match="no payload"):
        resource_export_to_cr(pb.ResourceExport(export_name="e"))


def test_a_service_import_becomes_antreas_resource_import() -> None:
    message = pb.ResourceImport(
        import_name="default-nginx-service",
        namespace="default",
        name="nginx",
        service_import=pb.ServiceImportSpec(
            type="ClusterSetIP", ports=[pb.ServicePort(port=80, protocol="TCP")], clusters=["east", "west"]
        ),
    )
    document = resource_import_to_cr(message).to_dict()
    assert document["spec"] == {
        "name": "nginx",
        "namespace": "default",
        "kind": "ServiceImport",
        "serviceImport": {
            "spec": {"ports": [{"protocol": "TCP", "port": 80}], "type": "ClusterSetIP"},
            "status": {"clusters": [{"cluster": "east"}, {"cluster": "west"}]},
        },
    }
    assert resource_import_from_cr(document) == message


def test_the_exported_labels_and_annotations_of_an_import_are_the_embedded_service_imports_metadata() -> None:
    message = pb.ResourceImport(
        import_name="default-nginx-service",
        namespace="default",
        name="nginx",
        service_import=pb.ServiceImportSpec(
            type="ClusterSetIP", labels={"dummy-label": "true"}, annotations={"dummy-annotation": "true"}
        ),
    )
    document = resource_import_to_cr(message).to_dict()
    assert document["spec"]["serviceImport"]["metadata"] == {
        "labels": {"dummy-label": "true"},
        "annotations": {"dummy-annotation": "true"},
    }
    assert resource_import_from_cr(document) == message
    document["spec"]["serviceImport"]["metadata"]["labels"] = {"n": 1}
    with pytest.raises(ConversionError, match=r"metadata\.labels is not a map of strings"):
        resource_import_from_cr(document)


def test_import_targets_and_cluster_info_use_antreas_field_names() -> None:
    message = pb.ResourceImport(
        import_name="west-clusterinfo",
        cluster_ids=["east"],
        cluster_info=pb.ClusterInfo(cluster_id="west", service_cidr="10.96.0.0/12"),
    )
    spec = resource_import_to_cr(message).to_dict()["spec"]
    assert spec["clusterID"] == ["east"]
    assert spec["clusterinfo"] == {"clusterID": "west", "serviceCIDR": "10.96.0.0/12"}
    assert spec["kind"] == "ClusterInfo"


def test_an_import_cr_of_raw_kind_is_not_supported() -> None:
    with pytest.raises(ConversionError, match="not supported"):
        resource_import_from_cr({"metadata": {"name": "r"}, "spec": {"kind": "Pod", "raw": {"data": "eA=="}}})


def test_a_service_object_is_read_with_the_api_server_defaults() -> None:
    service = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "nginx", "namespace": "default"},
        "spec": {
            "ports": [{"port": 80, "targetPort": 8080}],
            "selector": {"app": "nginx"},
            "clusterIP": "10.96.1.2",
            "clusterIPs": ["10.96.1.2"],
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 300}},
            "ipFamilies": ["IPv4"],
            "ipFamilyPolicy": "SingleStack",
        },
    }
    assert service_spec_from_service_json(service) == pb.ServiceSpec(
        type="ClusterIP",
        ports=[pb.ServicePort(protocol="TCP", port=80)],
        cluster_ip="10.96.1.2",
        cluster_ips=["10.96.1.2"],
        session_affinity="None",
        session_affinity_timeout_seconds=300,
        ip_families=["IPv4"],
    )


def test_an_invalid_service_object_is_a_conversion_error() -> None:
    with pytest.raises(ConversionError):
        service_spec_from_service_json({"spec": {"ports": [{"port": "eighty"}]}})


def test_endpoints_keep_ready_addresses_only() -> None:
    endpoints = {
        "subsets": [
            {
                "addresses": [{"ip": "10.244.1.5", "nodeName": "n1", "targetRef": {"kind": "Pod", "name": "p"}}],
                "notReadyAddresses": [{"ip": "10.244.1.6"}],
                "ports": [{"name": "http", "port": 8080}],
            }
        ]
    }
    assert endpoints_from_endpoints_json(endpoints) == pb.EndpointsSpec(
        subsets=[
            pb.EndpointSubset(
                addresses=[pb.EndpointAddress(ip="10.244.1.5", node_name="n1")],
                ports=[pb.EndpointPort(name="http", port=8080, protocol="TCP")],
            )
        ]
    )


def test_a_v1alpha1_service_import_has_no_traffic_policies() -> None:
    message = pb.ServiceImportSpec(type="Headless", internal_traffic_policy="Local", traffic_distribution="PreferClose")
    spec = service_import_spec_v1alpha1(message)
    assert "internalTrafficPolicy" not in spec.model_dump(by_alias=True)
    with pytest.raises(ConversionError, match="ClusterSetIP or Headless"):
        service_import_spec_v1alpha1(pb.ServiceImportSpec(type="NodePort"))


def test_a_member_builds_mcs_service_imports_and_cluster_info_imports() -> None:
    spec = pb.ServiceImportSpec(
        type="ClusterSetIP",
        ports=[pb.ServicePort(port=80, protocol="TCP")],
        session_affinity_timeout_seconds=60,
        clusters=["east"],
    )
    imported = build_service_import(spec, "default", "nginx", ips=["10.96.200.1"]).to_dict()
    assert imported["apiVersion"] == "multicluster.x-k8s.io/v1beta1"
    assert imported["spec"]["ips"] == ["10.96.200.1"]
    assert imported["spec"]["sessionAffinityConfig"] == {"clientIP": {"timeoutSeconds": 60}}
    assert imported["status"] == {"clusters": [{"cluster": "east"}]}
    legacy = build_service_import(spec, "default", "nginx", version="v1alpha1")
    assert isinstance(legacy, crds.ServiceImportV1alpha1)
    info = build_cluster_info_import(pb.ClusterInfo(cluster_id="west"), "kube-system", "west-clusterinfo")
    assert info.to_dict()["spec"] == {"clusterID": "west"}
