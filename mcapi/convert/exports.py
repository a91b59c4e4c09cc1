"""ResourceExport: the CR in the leader Namespace <-> the wire message.

Mapping (and what the kube store relies on):

* ``metadata.name`` is the export name; ``spec.clusterID/namespace/name`` the
  source; ``spec.kind`` follows the payload (Service, Endpoints, ClusterInfo,
  AntreaClusterNetworkPolicy, LabelIdentity); labels ``sourceName``,
  ``sourceNamespace``, ``sourceClusterID``, ``sourceKind`` as Antrea sets them
  (empty values left out). A Service export's exported labels and annotations
  (from its ServiceExport) go beside Antrea's ``spec.service.serviceSpec``, as
  ``spec.service.exportedLabels`` and ``exportedAnnotations``.
* The hub's ``create_time`` goes to the annotation
  ``multicluster.antrea.io/export-create-time`` (RFC 3339, nanoseconds: the
  oldest-wins rule needs more than creationTimestamp's seconds); without it,
  ``metadata.creationTimestamp`` is used.
* The hub's status goes to ``status.conditions`` as Antrea shapes it
  (Succeeded=True for an accepted or conflicting export, Failure=True for a
  rejected or invalid one, reason and message verbatim) and, exactly, to the
  annotation ``multicluster.antrea.io/export-verdict`` (a Verdict name); the clusters a
  selective Service export reaches (its status's clusters) to ``mchub.antrea.io/export-clusters``
  (comma-separated). A Service export's cluster selectors go to ``spec.service.clusterSelectors``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from google.protobuf import timestamp_pb2
from pydantic import ValidationError

from mcapi import names
from mcapi.convert.cluster_info import cluster_info_from_pb, cluster_info_to_pb
from mcapi.convert.errors import ConversionError
from mcapi.convert.service import (
    endpoint_subsets_from_pb,
    endpoint_subsets_to_pb,
    service_spec_from_pb,
    service_spec_to_pb,
)
from mcapi.convert.service_import import cluster_selector_models, cluster_selectors_from_models
from mcapi.convert.structs import dict_to_struct, struct_to_dict
from mcapi.crds.base import ObjectMeta
from mcapi.crds.conditions import CONDITION_TRUE, AntreaCondition
from mcapi.crds.exchange import (
    RESOURCE_EXPORT_FAILURE,
    RESOURCE_EXPORT_SUCCEEDED,
    EndpointsPayload,
    LabelIdentityExport,
    ResourceExport,
    ResourceExportSpec,
    ResourceExportStatus,
    ServiceExportPayload,
)
from mcapi.mchub.v1 import common_area_pb2 as pb

_KIND_OF_PAYLOAD = {
    "service": names.KIND_SERVICE,
    "endpoints": names.KIND_ENDPOINTS,
    "cluster_info": names.KIND_CLUSTER_INFO,
    "cluster_network_policy": names.KIND_ACNP,
    "label_identity": names.KIND_LABEL_IDENTITY,
}
_SUCCEEDED_VERDICTS = (pb.VERDICT_ACCEPTED, pb.VERDICT_CONFLICT)
_FAILED_VERDICTS = (pb.VERDICT_REJECTED, pb.VERDICT_INVALID)


def export_kind(message: pb.ResourceExport) -> str:
    """The spec.kind of an export, from its payload."""
    payload = message.WhichOneof("payload")
    if payload is None:
        raise ConversionError(f"export {message.export_name!r} has no payload")
    return _KIND_OF_PAYLOAD[payload]


def resource_export_to_cr(
    message: pb.ResourceExport,
    namespace: str = names.DEFAULT_LEADER_NAMESPACE,
    now: datetime | None = None,
) -> ResourceExport:
    """The ResourceExport CR of a wire export; ``now`` stamps its conditions."""
    kind = export_kind(message)
    spec = ResourceExportSpec(cluster_id=message.cluster_id, name=message.name, namespace=message.namespace, kind=kind)
    payload = message.WhichOneof("payload")
    if payload == "service":
        spec.service = ServiceExportPayload(
            service_spec=service_spec_from_pb(message.service),
            exported_labels=dict(message.service.exported_labels),
            exported_annotations=dict(message.service.exported_annotations),
            cluster_selectors=cluster_selector_models(message.service.cluster_selectors),
        )
    elif payload == "endpoints":
        spec.endpoints = EndpointsPayload(subsets=endpoint_subsets_from_pb(message.endpoints))
    elif payload == "cluster_info":
        spec.cluster_info = cluster_info_from_pb(message.cluster_info)
    elif payload == "cluster_network_policy":
        spec.cluster_network_policy = struct_to_dict(message.cluster_network_policy)
    else:
        spec.label_identity = LabelIdentityExport(normalized_label=message.label_identity.normalized_label)

    labels = {
        names.LABEL_SOURCE_NAME: message.name,
        names.LABEL_SOURCE_NAMESPACE: message.namespace,
        names.LABEL_SOURCE_CLUSTER_ID: message.cluster_id,
        names.LABEL_SOURCE_KIND: kind,
    }
    annotations: dict[str, str] = {}
    if message.HasField("create_time"):
        annotations[names.ANNOTATION_EXPORT_CREATE_TIME] = message.create_time.ToJsonString()
    status = None
    if message.HasField("status"):
        annotations[names.ANNOTATION_EXPORT_VERDICT] = pb.Verdict.Name(message.status.verdict)
        if message.status.clusters:
            annotations[names.ANNOTATION_EXPORT_CLUSTERS] = ",".join(message.status.clusters)
        status = _status_to_cr(message.status, now)
    metadata = ObjectMeta(
        name=message.export_name,
        namespace=namespace,
        labels={k: v for k, v in labels.items() if v},
        annotations=annotations,
    )
    return ResourceExport(metadata=metadata, spec=spec, status=status)


def _status_to_cr(status: pb.ExportStatus, now: datetime | None) -> ResourceExportStatus | None:
    if status.verdict in _SUCCEEDED_VERDICTS:
        condition_type = RESOURCE_EXPORT_SUCCEEDED
    elif status.verdict in _FAILED_VERDICTS:
        condition_type = RESOURCE_EXPORT_FAILURE
    else:
        return None
    condition = AntreaCondition(
        type=condition_type,
        status=CONDITION_TRUE,
        reason=status.reason,
        message=status.message,
        last_transition_time=now,
    )
    return ResourceExportStatus(conditions=[condition])


def resource_export_from_cr(cr: ResourceExport | Mapping[str, Any]) -> pb.ResourceExport:
    """The wire export of a ResourceExport CR (a model or the JSON of one)."""
    export = _parse(cr)
    spec = export.spec
    message = pb.ResourceExport(
        export_name=export.metadata.name, cluster_id=spec.cluster_id, namespace=spec.namespace, name=spec.name
    )
    _copy_payload(spec, message, export.metadata.name)
    created = export.metadata.annotations.get(names.ANNOTATION_EXPORT_CREATE_TIME)
    if created:
        try:
            message.create_time.FromJsonString(created)
        except ValueError:
            raise ConversionError(f"export {export.metadata.name!r}: bad create time {created!r}") from None
    elif export.metadata.creation_timestamp is not None:
        message.create_time.CopyFrom(_timestamp(export.metadata.creation_timestamp))
    status = _status_from_cr(export)
    if status is not None:
        message.status.CopyFrom(status)
    return message


def _parse(cr: ResourceExport | Mapping[str, Any]) -> ResourceExport:
    if isinstance(cr, ResourceExport):
        return cr
    try:
        return ResourceExport.model_validate(cr)
    except ValidationError as err:
        raise ConversionError(f"invalid ResourceExport: {err}") from None


def _copy_payload(spec: ResourceExportSpec, message: pb.ResourceExport, export_name: str) -> None:
    kind = spec.kind
    if kind == names.KIND_SERVICE and spec.service is not None:
        message.service.CopyFrom(service_spec_to_pb(spec.service.service_spec))
        message.service.exported_labels.update(spec.service.exported_labels)
        message.service.exported_annotations.update(spec.service.exported_annotations)
        message.service.cluster_selectors.extend(
            cluster_selectors_from_models(spec.service.cluster_selectors, f"export {export_name!r}")
        )
    elif kind == names.KIND_ENDPOINTS and spec.endpoints is not None:
        message.endpoints.CopyFrom(endpoint_subsets_to_pb(spec.endpoints.subsets))
    elif kind == names.KIND_CLUSTER_INFO and spec.cluster_info is not None:
        message.cluster_info.CopyFrom(cluster_info_to_pb(spec.cluster_info))
    elif kind == names.KIND_ACNP and spec.cluster_network_policy is not None:
        message.cluster_network_policy.CopyFrom(dict_to_struct(spec.cluster_network_policy))
    elif kind == names.KIND_LABEL_IDENTITY and spec.label_identity is not None:
        message.label_identity.normalized_label = spec.label_identity.normalized_label
    elif kind in _KIND_OF_PAYLOAD.values():
        raise ConversionError(f"export {export_name!r} of kind {kind} has no {kind} payload")
    else:
        raise ConversionError(f"export {export_name!r}: kind {kind!r} is not supported")


def _status_from_cr(export: ResourceExport) -> pb.ExportStatus | None:
    conditions = export.status.conditions if export.status else []
    condition = next((c for c in conditions if c.type in (RESOURCE_EXPORT_SUCCEEDED, RESOURCE_EXPORT_FAILURE)), None)
    verdict_name = export.metadata.annotations.get(names.ANNOTATION_EXPORT_VERDICT)
    if verdict_name is not None:
        try:
            verdict = pb.Verdict.Value(verdict_name)
        except ValueError:
            raise ConversionError(f"export {export.metadata.name!r}: unknown verdict {verdict_name!r}") from None
    elif condition is not None and condition.status == CONDITION_TRUE:
        verdict = pb.VERDICT_ACCEPTED if condition.type == RESOURCE_EXPORT_SUCCEEDED else pb.VERDICT_REJECTED
    else:
        return None
    status = pb.ExportStatus(verdict=verdict)
    clusters = export.metadata.annotations.get(names.ANNOTATION_EXPORT_CLUSTERS, "")
    status.clusters.extend(c for c in clusters.split(",") if c)
    if condition is not None:
        status.reason = condition.reason
        status.message = condition.message
    return status


def _timestamp(moment: datetime) -> timestamp_pb2.Timestamp:
    stamp = timestamp_pb2.Timestamp()
    stamp.FromDatetime(moment)
    return stamp
