"""Wire message -> CRD object -> JSON -> CRD object -> wire message is the identity."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from mcapi import crds
from mcapi.convert import (
    cluster_info_from_pb,
    cluster_info_to_pb,
    endpoint_subsets_from_pb,
    endpoint_subsets_to_pb,
    resource_export_from_cr,
    resource_export_to_cr,
    resource_import_from_cr,
    resource_import_to_cr,
    service_import_spec_to_pb,
    service_import_spec_v1beta1,
    service_spec_from_pb,
    service_spec_to_pb,
)
from mcapi.crds.openapi import structural_schema, validation_errors
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.unit import test_convert_strategies as s

FAST = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
EXPORT_SCHEMA = structural_schema(crds.ResourceExport)
IMPORT_SCHEMA = structural_schema(crds.ResourceImport)


@FAST
@given(s.resource_exports())
def test_a_resource_export_survives_the_trip_through_its_cr(message: pb.ResourceExport) -> None:
    document = resource_export_to_cr(message).to_dict()
    assert validation_errors(EXPORT_SCHEMA, document) == []
    assert resource_export_from_cr(document) == message


@FAST
@given(s.resource_imports())
def test_a_resource_import_survives_the_trip_through_its_cr(message: pb.ResourceImport) -> None:
    document = resource_import_to_cr(message).to_dict()
    assert validation_errors(IMPORT_SCHEMA, document) == []
    assert resource_import_from_cr(document) == message


@FAST
@given(s.service_specs)
def test_a_service_spec_survives_the_trip_through_the_core_model(message: pb.ServiceSpec) -> None:
    assert service_spec_to_pb(service_spec_from_pb(message)) == message


@FAST
@given(s.endpoints_specs)
def test_endpoints_survive_the_trip_through_the_core_model(message: pb.EndpointsSpec) -> None:
    assert endpoint_subsets_to_pb(endpoint_subsets_from_pb(message)) == message


@FAST
@given(s.cluster_infos())
def test_cluster_info_survives_the_trip_through_the_crd_shape(message: pb.ClusterInfo) -> None:
    document = cluster_info_from_pb(message).model_dump(mode="json", by_alias=True)
    assert cluster_info_to_pb(crds.ClusterInfo.model_validate(document)) == message


@FAST
@given(s.service_import_specs)
def test_a_service_import_spec_survives_the_trip_through_the_v1beta1_shape(message: pb.ServiceImportSpec) -> None:
    spec = service_import_spec_v1beta1(message)
    assert service_import_spec_to_pb(spec, message.clusters) == message
