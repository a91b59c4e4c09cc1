"""What one ServiceExport means for the hub: valid or not (and why), and the exports it makes.

Pure: the caller passes the ServiceExport, its Service and Endpoints as the API server returns
them (or None). A valid ServiceExport makes two exports, as Antrea's member does:

- ``<clusterID>-<ns>-<name>-service``: the Service's spec, with the ServiceExport's
  ``spec.exportedLabels`` and ``spec.exportedAnnotations`` (either served version has them;
  the Service's own labels and annotations are not exported). Keys or values the API server
  would refuse on a ServiceImport make the ServiceExport invalid; so do v1beta1's alpha
  ``spec.clusterSelectors`` (KEP-5939) when they cannot be evaluated (InvalidClusterSelector)
  or the Service is Headless (InvalidServiceType: selection is for ClusterSetIP Services);
- ``<clusterID>-<ns>-<name>-endpoints``: with endpointIPType ClusterIP, the one address is
  the Service's ClusterIP with the Service's ports (traffic enters through the exporting
  cluster's Service); with PodIP, the ready addresses of the Endpoints. A headless Service
  has no ClusterIP, so its Pod IPs are exported in either mode.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kube.resources import Obj
from mcapi import label_syntax, names
from mcapi.cluster_selection import InvalidClusterSelectors, selectors_from_json
from mcapi.config import EndpointIPType
from mcapi.convert import ConversionError, endpoints_from_endpoints_json, service_spec_from_service_json
from mcapi.mchub.v1 import common_area_pb2 as pb

Key = tuple[str, str]  # (namespace, name) of the ServiceExport and its Service

HEADLESS = "None"


class InvalidReason(StrEnum):
    """Why a ServiceExport is not valid (its Valid=False reason)."""

    NO_SERVICE = "NoService"  # MCS
    INVALID_SERVICE_TYPE = "InvalidServiceType"  # MCS
    IMPORTED_SERVICE = "ImportedService"  # Antrea: a Service the member itself imported
    INVALID_SERVICE = "InvalidService"  # the Service cannot be read as a Service spec
    # spec.exportedLabels / spec.exportedAnnotations that no ServiceImport could carry
    INVALID_EXPORTED_LABELS = "InvalidExportedLabels"
    INVALID_EXPORTED_ANNOTATIONS = "InvalidExportedAnnotations"
    # KEP-5939: spec.clusterSelectors that cannot be evaluated
    INVALID_CLUSTER_SELECTOR = "InvalidClusterSelector"


@dataclass(frozen=True)
class Blocked:
    """Why a valid ServiceExport is not exported (its Ready=False reason): a globally addressed
    member could not give it its global addresses (member.global_addresses)."""

    reason: str
    message: str


@dataclass(frozen=True)
class Evaluation:
    key: Key
    exports: tuple[pb.ResourceExport, ...] = ()
    invalid: InvalidReason | None = None
    message: str = ""
    blocked: Blocked | None = None

    @property
    def valid(self) -> bool:
        return self.invalid is None


def export_names(cluster_id: str, key: Key) -> tuple[str, str]:
    """The service and endpoints export names of a ServiceExport, whether it exports or not."""
    namespace, name = key
    return (
        names.service_export_name(cluster_id, namespace, name),
        names.endpoints_export_name(cluster_id, namespace, name),
    )


def _invalid(key: Key, reason: InvalidReason, message: str) -> Evaluation:
    return Evaluation(key=key, invalid=reason, message=message)


def _endpoints_spec(spec: pb.ServiceSpec, endpoints: Obj | None, ip_type: EndpointIPType) -> pb.EndpointsSpec:
    cluster_ip = spec.cluster_ip
    if ip_type == "ClusterIP" and cluster_ip and cluster_ip != HEADLESS:
        ports = [pb.EndpointPort(name=p.name, port=p.port, protocol=p.protocol) for p in spec.ports]
        return pb.EndpointsSpec(subsets=[pb.EndpointSubset(addresses=[pb.EndpointAddress(ip=cluster_ip)], ports=ports)])
    return endpoints_from_endpoints_json(endpoints or {})


def _string_map(value: object) -> dict[str, str] | None:
    """A map of strings as the CRD schema allows it (None: something else)."""
    if value is None:
        return {}
    if isinstance(value, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        return dict(value)
    return None


def _exported_metadata(key: Key, service_export: Obj | None) -> tuple[dict[str, str], dict[str, str]] | Evaluation:
    """The exported labels and annotations, or the Evaluation saying why they cannot be exported."""
    spec = (service_export or {}).get("spec") or {}
    labels = _string_map(spec.get("exportedLabels"))
    annotations = _string_map(spec.get("exportedAnnotations"))
    label_problems = label_syntax.label_problems(labels) if labels is not None else ["it is not a map of strings"]
    if label_problems:
        return _invalid(
            key, InvalidReason.INVALID_EXPORTED_LABELS, label_syntax.sentence("exportedLabels", label_problems)
        )
    annotation_problems = (
        label_syntax.annotation_problems(annotations) if annotations is not None else ["it is not a map of strings"]
    )
    if annotation_problems:
        return _invalid(
            key,
            InvalidReason.INVALID_EXPORTED_ANNOTATIONS,
            label_syntax.sentence("exportedAnnotations", annotation_problems),
        )
    assert labels is not None and annotations is not None
    return labels, annotations


def evaluate(
    cluster_id: str,
    ip_type: EndpointIPType,
    key: Key,
    service: Obj | None,
    endpoints: Obj | None,
    *,
    service_export: Obj | None = None,
) -> Evaluation:
    """``service_export``: the ServiceExport (its spec's exported labels and annotations)."""
    namespace, name = key
    if service is None or (service.get("metadata") or {}).get("deletionTimestamp"):
        return _invalid(key, InvalidReason.NO_SERVICE, f"Service {namespace}/{name} does not exist")
    annotations = (service.get("metadata") or {}).get("annotations") or {}
    if names.ANNOTATION_IMPORTED_SERVICE in annotations:
        return _invalid(
            key,
            InvalidReason.IMPORTED_SERVICE,
            f"Service {namespace}/{name} was imported from the ClusterSet; an imported Service cannot be exported",
        )
    service_type = (service.get("spec") or {}).get("type") or "ClusterIP"
    if service_type == "ExternalName":
        return _invalid(
            key, InvalidReason.INVALID_SERVICE_TYPE, "Service type ExternalName is not supported for export"
        )
    exported = _exported_metadata(key, service_export)
    if isinstance(exported, Evaluation):
        return exported
    try:
        selectors = selectors_from_json(((service_export or {}).get("spec") or {}).get("clusterSelectors"))
    except InvalidClusterSelectors as err:
        return _invalid(key, InvalidReason.INVALID_CLUSTER_SELECTOR, f"spec.clusterSelectors is invalid: {err}")
    if selectors and (service.get("spec") or {}).get("clusterIP") == HEADLESS:
        return _invalid(
            key,
            InvalidReason.INVALID_SERVICE_TYPE,
            f"Service {namespace}/{name} is Headless: cluster selectors select among the clusters of a "
            "ClusterSetIP Service only",
        )
    try:
        spec = service_spec_from_service_json(service)
        endpoints_spec = _endpoints_spec(spec, endpoints, ip_type)
    except ConversionError as err:
        return _invalid(key, InvalidReason.INVALID_SERVICE, str(err))
    spec.exported_labels.update(exported[0])
    spec.exported_annotations.update(exported[1])
    spec.cluster_selectors.extend(selectors)
    service_name, endpoints_name = export_names(cluster_id, key)
    return Evaluation(
        key=key,
        exports=(
            pb.ResourceExport(
                export_name=service_name, cluster_id=cluster_id, namespace=namespace, name=name, service=spec
            ),
            pb.ResourceExport(
                export_name=endpoints_name,
                cluster_id=cluster_id,
                namespace=namespace,
                name=name,
                endpoints=endpoints_spec,
            ),
        ),
    )
