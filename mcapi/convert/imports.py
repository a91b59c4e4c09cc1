"""ResourceImport: the CR in the leader Namespace <-> the wire message.

``metadata.name`` is the import name; ``spec.clusterID`` (Antrea's name for
the list of target clusters) is ``cluster_ids``; ``spec.kind`` follows the
payload. A ServiceImport payload is Antrea's embedded MCS ServiceImport with
the v1beta1 spec shape (with its cluster selectors), its exporting clusters in
``status.clusters`` and the exported labels and annotations in its ``metadata``;
the selectors' results per importing member go in mchub's ``spec.clusterSelections``.
Endpoints subsets keep the hub's per-subset cluster ID under the extra key
``clusterID``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import ValidationError

from mcapi import names
from mcapi.convert.cluster_info import cluster_info_from_pb, cluster_info_to_pb
from mcapi.convert.errors import ConversionError
from mcapi.convert.service import endpoint_subsets_from_pb, endpoint_subsets_to_pb
from mcapi.convert.service_import import service_import_spec_to_pb, service_import_spec_v1beta1
from mcapi.convert.structs import dict_to_struct, struct_to_dict
from mcapi.crds.base import ObjectMeta
from mcapi.crds.exchange import (
    ClusterSelection,
    EmbeddedServiceImport,
    EndpointsPayload,
    ResourceImport,
    ResourceImportSpec,
)
from mcapi.crds.gateway import LabelIdentitySpec
from mcapi.crds.mcs import ClusterSelectorResult, ServiceImportClusterStatus, ServiceImportStatusV1beta1
from mcapi.mchub.v1 import common_area_pb2 as pb

_KIND_OF_PAYLOAD = {
    "service_import": names.KIND_SERVICE_IMPORT,
    "endpoints": names.KIND_ENDPOINTS,
    "cluster_info": names.KIND_CLUSTER_INFO,
    "cluster_network_policy": names.KIND_ACNP,
    "label_identity": names.KIND_LABEL_IDENTITY,
}


def import_kind(message: pb.ResourceImport) -> str:
    """The spec.kind of an import, from its payload."""
    payload = message.WhichOneof("payload")
    if payload is None:
        raise ConversionError(f"import {message.import_name!r} has no payload")
    return _KIND_OF_PAYLOAD[payload]


def resource_import_to_cr(
    message: pb.ResourceImport, namespace: str = names.DEFAULT_LEADER_NAMESPACE
) -> ResourceImport:
    spec = ResourceImportSpec(
        cluster_ids=list(message.cluster_ids),
        name=message.name,
        namespace=message.namespace,
        kind=import_kind(message),
    )
    payload = message.WhichOneof("payload")
    if payload == "service_import":
        spec.service_import = EmbeddedServiceImport(
            metadata=_exported_metadata(message.service_import),
            spec=service_import_spec_v1beta1(message.service_import),
            status=ServiceImportStatusV1beta1(
                clusters=[ServiceImportClusterStatus(cluster=c) for c in message.service_import.clusters]
            ),
        )
        spec.cluster_selections = [
            ClusterSelection(
                importers=list(s.importers),
                results=[ClusterSelectorResult(clusters=list(r.clusters)) for r in s.results],
            )
            for s in message.service_import.selections
        ]
    elif payload == "endpoints":
        spec.endpoints = EndpointsPayload(subsets=endpoint_subsets_from_pb(message.endpoints))
    elif payload == "cluster_info":
        spec.cluster_info = cluster_info_from_pb(message.cluster_info)
    elif payload == "cluster_network_policy":
        spec.cluster_network_policy = struct_to_dict(message.cluster_network_policy)
    else:
        spec.label_identity = LabelIdentitySpec(label=message.label_identity.label, id=message.label_identity.id)
    return ResourceImport(metadata=ObjectMeta(name=message.import_name, namespace=namespace), spec=spec)


def _exported_metadata(message: pb.ServiceImportSpec) -> dict[str, Any] | None:
    """The embedded ServiceImport's metadata: the exported labels and annotations (None: neither)."""
    metadata = {"labels": dict(message.labels), "annotations": dict(message.annotations)}
    return {key: value for key, value in metadata.items() if value} or None


def _copy_exported_metadata(metadata: Mapping[str, Any] | None, message: pb.ServiceImportSpec, name: str) -> None:
    for key, target in (("labels", message.labels), ("annotations", message.annotations)):
        values = (metadata or {}).get(key) or {}
        if not isinstance(values, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in values.items()
        ):
            raise ConversionError(f"import {name!r}: serviceImport.metadata.{key} is not a map of strings")
        target.update(values)


def resource_import_from_cr(cr: ResourceImport | Mapping[str, Any]) -> pb.ResourceImport:
    """The wire import of a ResourceImport CR (a model or the JSON of one)."""
    if isinstance(cr, ResourceImport):
        resource_import = cr
    else:
        try:
            resource_import = ResourceImport.model_validate(cr)
        except ValidationError as err:
            raise ConversionError(f"invalid ResourceImport: {err}") from None
    spec = resource_import.spec
    name = resource_import.metadata.name
    message = pb.ResourceImport(
        import_name=name, namespace=spec.namespace, name=spec.name, cluster_ids=list(spec.cluster_ids)
    )
    kind = spec.kind
    if kind == names.KIND_SERVICE_IMPORT and spec.service_import and spec.service_import.spec:
        status = spec.service_import.status
        clusters = [c.cluster for c in status.clusters] if status else []
        message.service_import.CopyFrom(service_import_spec_to_pb(spec.service_import.spec, clusters))
        _copy_exported_metadata(spec.service_import.metadata, message.service_import, name)
        for selection in spec.cluster_selections:
            message.service_import.selections.append(
                pb.ClusterSelection(
                    importers=selection.importers,
                    results=[pb.ClusterSelectorResult(clusters=r.clusters) for r in selection.results],
                )
            )
    elif kind == names.KIND_ENDPOINTS and spec.endpoints is not None:
        message.endpoints.CopyFrom(endpoint_subsets_to_pb(spec.endpoints.subsets))
    elif kind == names.KIND_CLUSTER_INFO and spec.cluster_info is not None:
        message.cluster_info.CopyFrom(cluster_info_to_pb(spec.cluster_info))
    elif kind == names.KIND_ACNP and spec.cluster_network_policy is not None:
        message.cluster_network_policy.CopyFrom(dict_to_struct(spec.cluster_network_policy))
    elif kind == names.KIND_LABEL_IDENTITY and spec.label_identity is not None:
        message.label_identity.CopyFrom(pb.LabelIdentity(label=spec.label_identity.label, id=spec.label_identity.id))
    elif kind in _KIND_OF_PAYLOAD.values():
        raise ConversionError(f"import {name!r} of kind {kind} has no {kind} payload")
    else:
        raise ConversionError(f"import {name!r}: kind {kind!r} is not supported")
    return message
