from __future__ import annotations

from datetime import UTC, datetime

import pytest
from pydantic import ValidationError

from mcapi import crds
from tests.unit.test_crds_samples import SAMPLES


@pytest.mark.parametrize("model", list(SAMPLES), ids=lambda m: m.API_VERSION + "/" + m.KIND)
def test_every_sample_round_trips_through_its_model_unchanged(model: type[crds.KubeObject]) -> None:
    sample = SAMPLES[model]
    assert model.model_validate(sample).to_dict() == sample


def test_type_meta_is_filled_from_the_class() -> None:
    gateway = crds.Gateway(gateway_ip="10.0.0.1")
    data = gateway.to_dict()
    assert data["apiVersion"] == "multicluster.crd.antrea.io/v1alpha1"
    assert data["kind"] == "Gateway"
    assert crds.ClusterSet.API_VERSION == "multicluster.crd.antrea.io/v1alpha2"
    assert crds.ServiceImportV1beta1.API_VERSION == "multicluster.x-k8s.io/v1beta1"


def test_an_object_of_another_version_is_refused() -> None:
    with pytest.raises(ValidationError, match="apiVersion"):
        crds.ServiceImportV1alpha1.model_validate(crds.ServiceImportV1beta1().to_dict())


def test_optional_empty_fields_are_omitted_like_go_omitempty() -> None:
    data = crds.ResourceExport(spec=crds.ResourceExportSpec(cluster_id="east", kind="ClusterInfo")).to_dict()
    assert data["spec"] == {"clusterID": "east", "kind": "ClusterInfo"}
    assert data["metadata"] == {}


def test_required_fields_are_written_even_when_empty() -> None:
    spec = crds.ServiceImportSpecV1beta1(type="Headless", ports=[])
    assert spec.model_dump(by_alias=True) == {"ports": [], "type": "Headless"}
    condition = crds.Condition(type="Valid", status="True", reason="Valid", last_transition_time=datetime.now(UTC))
    assert "message" in condition.model_dump(by_alias=True)


def test_an_empty_object_that_means_something_is_kept() -> None:
    export = crds.ResourceExport(
        spec=crds.ResourceExportSpec(kind="AntreaClusterNetworkPolicy", cluster_network_policy={"appliedTo": [{}]})
    )
    assert export.to_dict()["spec"]["clusterNetworkPolicy"] == {"appliedTo": [{}]}


def test_unknown_spec_fields_of_our_own_crds_are_errors() -> None:
    with pytest.raises(ValidationError):
        crds.ResourceExport.model_validate({"spec": {"clusterId": "east"}})


def test_unknown_metadata_fields_are_kept() -> None:
    data = {"metadata": {"name": "x", "managedFields": [{"manager": "kubectl"}]}, "value": "v"}
    assert crds.ClusterClaim.model_validate(data).to_dict()["metadata"]["managedFields"] == [{"manager": "kubectl"}]


def test_resource_import_uses_antreas_own_spellings() -> None:
    spec = crds.ResourceImportSpec(cluster_ids=["east"], cluster_info=crds.ClusterInfo(cluster_id="west"))
    dumped = spec.model_dump(by_alias=True)
    assert dumped == {"clusterID": ["east"], "clusterinfo": {"clusterID": "west"}}


def test_times_are_written_in_utc_with_second_precision() -> None:
    meta = crds.ObjectMeta(creation_timestamp=datetime(2024, 5, 1, 12, 30, 15, 123456, tzinfo=UTC))
    assert meta.model_dump(mode="json", by_alias=True) == {"creationTimestamp": "2024-05-01T12:30:15Z"}
    parsed = crds.ObjectMeta.model_validate({"creationTimestamp": "2024-05-01T14:30:15+02:00"})
    assert parsed.creation_timestamp == datetime(2024, 5, 1, 12, 30, 15, tzinfo=UTC)


def test_a_cluster_set_needs_exactly_one_leader() -> None:
    with pytest.raises(ValidationError):
        crds.ClusterSet(spec=crds.ClusterSetSpecV1alpha2(cluster_id="east", leaders=[]))


def test_model_for_finds_the_class_of_an_api_version_and_kind() -> None:
    assert crds.model_for("multicluster.x-k8s.io/v1alpha1", "ServiceExport") is crds.ServiceExportV1alpha1
    with pytest.raises(KeyError):
        crds.model_for("v1", "Pod")


def test_label_identity_and_cluster_property_are_cluster_scoped_and_the_rest_namespaced() -> None:
    scoped = {m.KIND for m in crds.ALL_KINDS if not m.NAMESPACED}
    assert scoped == {"LabelIdentity", "ClusterProperty"}
