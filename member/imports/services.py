"""A ServiceImport import -> the Service ``antrea-mc-<name>`` and the MCS ServiceImport ``<name>``.

The Service is selectorless (its Endpoints and EndpointSlices come from the Endpoints
import); its ClusterIP becomes the ServiceImport's ClusterSetIP, as in Antrea. A
Headless import gets a headless Service and a ServiceImport without IPs.

The ServiceImport's metadata carries the labels and annotations the exporting
ServiceExports asked for (``spec.exportedLabels``/``exportedAnnotations``, as the hub
merged them: the oldest export's) beside the importer's own, which win a key both name.
The cluster selectors of the ServiceExports (KEP-5939, v1beta1) are its ``spec.clusterSelectors``
and their results for this member its ``status.clusterSelectorResults``, with
``status.observedGeneration``.

Which keys came from the export is kept in the annotations
``mchub.antrea.io/exported-labels`` and ``mchub.antrea.io/exported-annotations`` (the
keys, comma-separated), so a key the export drops is removed, and a label or annotation
someone else put on the ServiceImport is left alone.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import TYPE_CHECKING, Any, Literal, cast

from kube.resources import SERVICES, Obj, Resource
from mcapi import names, trace
from mcapi.convert import build_service_import
from mcapi.convert.errors import ConversionError
from mcapi.crds.mcs import SERVICE_IMPORT_HEADLESS
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.imports.objects import IMPORTED_SERVICE_IMPORTS
from member.imports.outcome import ImportBlocked, ImportReason
from member.imports.ownership import (
    ANNOTATION_LOCAL_CLUSTER_ID,
    imported_service_annotations,
    imported_service_labels,
)
from member.imports.selection import selector_results_status

if TYPE_CHECKING:
    from member.imports.context import ImportContext

# Spec fields the importer owns on each version: one the import leaves unset must be absent.
_SPEC_FIELDS = {
    "v1alpha1": ("ports", "ips", "type", "sessionAffinity", "sessionAffinityConfig", "ipFamilies"),
    "v1beta1": (
        "ports",
        "ips",
        "type",
        "sessionAffinity",
        "sessionAffinityConfig",
        "ipFamilies",
        "internalTrafficPolicy",
        "trafficDistribution",
        "clusterSelectors",
    ),
}


# The keys of the exported labels and annotations last written (comma-separated; keys have no comma).
ANNOTATION_EXPORTED_LABELS = "mchub.antrea.io/exported-labels"
ANNOTATION_EXPORTED_ANNOTATIONS = "mchub.antrea.io/exported-annotations"


def is_headless(spec: pb.ServiceImportSpec) -> bool:
    return spec.type == SERVICE_IMPORT_HEADLESS


def desired_service(message: pb.ResourceImport) -> Obj:
    spec = message.service_import
    ports: list[dict[str, Any]] = []
    for port in spec.ports:
        entry: dict[str, Any] = {"port": port.port, "protocol": port.protocol or "TCP"}
        if port.name:
            entry["name"] = port.name
        if port.app_protocol:
            entry["appProtocol"] = port.app_protocol
        ports.append(entry)
    service_spec: dict[str, Any] = {"type": "ClusterIP", "ports": ports or None, "selector": None}
    if is_headless(spec):
        service_spec["clusterIP"] = "None"
    else:
        # kube-proxy honours affinity on the Service; MCS ignores it for Headless imports.
        service_spec["sessionAffinity"] = spec.session_affinity or "None"
        timeout = spec.session_affinity_timeout_seconds
        service_spec["sessionAffinityConfig"] = (
            {"clientIP": {"timeoutSeconds": timeout}} if spec.session_affinity == "ClientIP" and timeout else None
        )
    return {
        "metadata": {
            "name": names.imported_object_name(message.name),
            "namespace": message.namespace,
            "annotations": imported_service_annotations(),
            "labels": imported_service_labels(),
        },
        "spec": service_spec,
    }


def cluster_set_ips(service: Obj) -> list[str]:
    spec = service.get("spec") or {}
    ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    return [ip for ip in ips if ip and ip != "None"][:2]


def _tracked_keys(annotations: Mapping[str, Any], tracking: str) -> set[str]:
    value = annotations.get(tracking)
    return {key for key in value.split(",") if key} if isinstance(value, str) else set()


def _exported_entries(
    exported: Mapping[str, str], reserved: Collection[str], live: Mapping[str, Any], previously: set[str]
) -> tuple[dict[str, str | None], str | None]:
    """The exported entries whose keys are not ours (``reserved``), and None for each key exported
    before and no longer (it must go); then the record of the keys exported now (None: none)."""
    kept = {key: value for key, value in exported.items() if key not in reserved}
    gone: dict[str, str | None] = {key: None for key in previously - kept.keys() - set(reserved) if key in live}
    return {**gone, **kept}, ",".join(sorted(kept)) or None


def service_import_metadata(
    spec: pb.ServiceImportSpec, cluster_id: str, live: Obj | None
) -> tuple[dict[str, str | None], dict[str, str | None]]:
    """The ServiceImport's labels and annotations: ours, and the exported ones (``live``: the
    ServiceImport as it is, whose record of exported keys says which to remove)."""
    live_meta = (live or {}).get("metadata") or {}
    live_labels, live_annotations = live_meta.get("labels") or {}, live_meta.get("annotations") or {}
    own_labels: dict[str, str | None] = {**imported_service_labels()}
    labels, label_keys = _exported_entries(
        spec.labels, own_labels, live_labels, _tracked_keys(live_annotations, ANNOTATION_EXPORTED_LABELS)
    )
    own_annotations: dict[str, str | None] = {
        **imported_service_annotations(),
        ANNOTATION_LOCAL_CLUSTER_ID: cluster_id,
        ANNOTATION_EXPORTED_LABELS: label_keys,
        ANNOTATION_EXPORTED_ANNOTATIONS: None,
    }
    annotations, annotation_keys = _exported_entries(
        spec.annotations,
        own_annotations,
        live_annotations,
        _tracked_keys(live_annotations, ANNOTATION_EXPORTED_ANNOTATIONS),
    )
    own_annotations[ANNOTATION_EXPORTED_ANNOTATIONS] = annotation_keys
    return {**labels, **own_labels}, {**annotations, **own_annotations}


def desired_service_import(
    message: pb.ResourceImport, resource: Resource, ips: list[str], cluster_id: str, live: Obj | None = None
) -> tuple[Obj, dict[str, Any]]:
    """The ServiceImport (without status) and its desired status; ``live``: the ServiceImport there now."""
    version = cast(Literal["v1alpha1", "v1beta1"], resource.version)
    try:
        model = build_service_import(message.service_import, message.namespace, message.name, ips, version)
    except ConversionError as err:
        raise ImportBlocked(ImportReason.INVALID, f"import {message.import_name}: {err}") from None
    document = model.to_dict()
    status = document.pop("status", None) or {}
    spec = document.setdefault("spec", {})
    for field in _SPEC_FIELDS[version]:
        spec.setdefault(field, None)
    labels, annotations = service_import_metadata(message.service_import, cluster_id, live)
    document["metadata"]["labels"] = labels
    document["metadata"]["annotations"] = annotations
    desired_status: dict[str, Any] = {"clusters": status.get("clusters") or None}
    if version == "v1beta1":
        desired_status["clusterSelectorResults"] = selector_results_status(message, cluster_id)
    return document, desired_status


async def apply_service_import(ctx: ImportContext, message: pb.ResourceImport) -> None:
    """The Service, then the ServiceImport (its ClusterSetIP is the Service's ClusterIP), then its
    status: at most three writes, none when all is as it should be."""
    ctx.require_namespace(message.namespace)
    service = await _apply_service(ctx, message)
    trace.mark_import(trace.Hop.SERVICE_WRITTEN, message, ctx.cluster_id)
    service_imports = await ctx.watched(IMPORTED_SERVICE_IMPORTS)
    if service_imports is None:
        raise ImportBlocked(
            ImportReason.CRD_NOT_INSTALLED,
            "ServiceImport CRD (multicluster.x-k8s.io) not installed: "
            f"Service {message.namespace}/{names.imported_object_name(message.name)} was imported without it",
        )
    ips = [] if is_headless(message.service_import) else cluster_set_ips(service)
    current = service_imports.get(message.name, message.namespace)
    desired, status = desired_service_import(message, service_imports.resource, ips, ctx.cluster_id, current)
    live = await ctx.writer.ensure(service_imports, desired, import_name=message.import_name)
    trace.mark_import(trace.Hop.SERVICE_IMPORT_WRITTEN, message, ctx.cluster_id)
    if "clusterSelectorResults" in status:  # KEP-5939: which spec the results are of
        status["observedGeneration"] = (live.get("metadata") or {}).get("generation")
    await ctx.writer.ensure_status(service_imports, live, status)


async def _apply_service(ctx: ImportContext, message: pb.ResourceImport) -> Obj:
    services = ctx.caches.kind(SERVICES)
    desired = desired_service(message)
    live = services.get(desired["metadata"]["name"], message.namespace)
    if live is not None and services.owns(live):
        # ClusterIP is immutable: an import that turned Headless (or back) needs a new Service.
        live_headless = (live.get("spec") or {}).get("clusterIP") == "None"
        if live_headless != is_headless(message.service_import):
            await ctx.writer.delete(services, live)  # the cache hides it from now on: ensure creates anew
    return await ctx.writer.ensure(services, desired, import_name=message.import_name)
