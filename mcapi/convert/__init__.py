"""Pure conversions between Kubernetes objects (the models in mcapi.crds, or
their JSON) and the wire messages of mchub.v1."""

from mcapi.convert.cluster_info import build_cluster_info_import, cluster_info_from_pb, cluster_info_to_pb
from mcapi.convert.errors import ConversionError
from mcapi.convert.exports import export_kind, resource_export_from_cr, resource_export_to_cr
from mcapi.convert.imports import import_kind, resource_import_from_cr, resource_import_to_cr
from mcapi.convert.service import (
    endpoint_subsets_from_pb,
    endpoint_subsets_to_pb,
    endpoints_from_endpoints_json,
    service_spec_from_pb,
    service_spec_from_service_json,
    service_spec_to_pb,
)
from mcapi.convert.service_import import (
    build_service_import,
    service_import_spec_to_pb,
    service_import_spec_v1alpha1,
    service_import_spec_v1beta1,
)
from mcapi.convert.structs import dict_to_struct, struct_to_dict

__all__ = [
    "ConversionError",
    "build_cluster_info_import",
    "build_service_import",
    "cluster_info_from_pb",
    "cluster_info_to_pb",
    "dict_to_struct",
    "endpoint_subsets_from_pb",
    "endpoint_subsets_to_pb",
    "endpoints_from_endpoints_json",
    "export_kind",
    "import_kind",
    "resource_export_from_cr",
    "resource_export_to_cr",
    "resource_import_from_cr",
    "resource_import_to_cr",
    "service_import_spec_to_pb",
    "service_import_spec_v1alpha1",
    "service_import_spec_v1beta1",
    "service_spec_from_pb",
    "service_spec_from_service_json",
    "service_spec_to_pb",
    "struct_to_dict",
]
