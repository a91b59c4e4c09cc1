"""Hub state shaped as the Kubernetes objects users know (through mcapi.convert)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hub.clusterset.status import clusterset_status, member_health, with_global_addressing
from hub.engine.reports import cluster_statuses
from hub.errors import InvalidRequest
from mcapi import names
from mcapi.convert import (
    ConversionError,
    export_kind,
    import_kind,
    resource_export_from_cr,
    resource_export_to_cr,
    resource_import_to_cr,
)
from mcapi.crds.base import ObjectMeta
from mcapi.crds.clusterset import MemberClusterAnnounce
from mcapi.delivery import delivers_to
from mcapi.mchub.v1 import common_area_pb2 as pb

if TYPE_CHECKING:
    from hub.rest import RestHub


def _rfc3339(moment: Any) -> str:
    text: str = moment.isoformat(timespec="seconds")
    return text.replace("+00:00", "Z")


def verdict_name(verdict: pb.Verdict.ValueType) -> str:
    return pb.Verdict.Name(verdict).removeprefix("VERDICT_").capitalize()


def item_list(kind: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": f"{names.GROUP}/v1alpha1", "kind": kind, "items": items}


def clusterset(hub: RestHub) -> dict[str, Any]:
    cfg = hub.config
    return {
        "apiVersion": f"{names.GROUP}/v1alpha2",
        "kind": "ClusterSet",
        "metadata": {"name": cfg.cluster_set_id, "namespace": cfg.namespace},
        "spec": {"clusterID": cfg.leader_cluster_id, "leaders": [{"clusterID": cfg.leader_cluster_id}]},
        "status": _status(hub),
    }


def _status(hub: RestHub) -> dict[str, Any]:
    status = clusterset_status(list(hub.engine.index.members.values()), hub.now(), hub.config.disconnect_after)
    status = with_global_addressing(status, hub.engine.global_addressing(), hub.config.global_addressing, hub.now())
    if hub.engine.ended:  # what the dashboard shows of a deleted ClusterSet (REST answers 404)
        ended = {"type": "Ready", "status": "False", "reason": "ClusterSetDeleted", "message": hub.engine.ended}
        status["conditions"] = [{**ended, "lastTransitionTime": status["conditions"][0]["lastTransitionTime"]}]
    return status


def members(hub: RestHub) -> list[dict[str, Any]]:
    """MemberClusterAnnounces; `status` (not in Antrea's CRD) adds the hub's view of liveness."""
    now = hub.now()
    report = hub.engine.global_addressing()
    items = []
    for cluster_id, record in sorted(hub.engine.index.members.items()):
        announce = MemberClusterAnnounce(
            metadata=ObjectMeta(
                name=names.member_announce_name(cluster_id),
                namespace=hub.config.namespace,
                annotations={names.ANNOTATION_TOUCH_TS: _rfc3339(record.last_heartbeat)},
                creation_timestamp=record.joined,
            ),
            cluster_id=cluster_id,
            cluster_set_id=record.cluster_set_id,
            leader_cluster_id=record.leader_cluster_id,
        ).to_dict()
        health = member_health(record, now, hub.config.disconnect_after)
        addressing = report.by_cluster.get(cluster_id)
        announce["status"] = {
            "connected": health.connected,
            "heartbeatAgeSeconds": round(health.heartbeat_age, 3),
            "lastHeartbeat": _rfc3339(record.last_heartbeat),
            # What its announces say of its cluster (KEP-2149's ClusterProperties, its version).
            "kubernetesVersion": record.inventory.kubernetes_version,
            "properties": record.inventory.property_map,
            # Where NAT applies: a globally addressed member is reached through its global block.
            "globalCIDR": record.global_cidr,
            "globallyAddressed": bool(addressing and addressing.globally_addressed),
            "overlapsWith": list(report.overlaps.get(cluster_id, ())),
        }
        items.append(announce)
    return items


def export_item(export: pb.ResourceExport, namespace: str = names.DEFAULT_LEADER_NAMESPACE) -> dict[str, Any]:
    item = resource_export_to_cr(export, namespace).to_dict()
    if export.HasField("create_time"):
        item["metadata"]["creationTimestamp"] = _rfc3339(export.create_time.ToDatetime().replace(microsecond=0))
    return item


def exports(hub: RestHub, clusterID: str = "", kind: str = "", namespace: str = "") -> list[dict[str, Any]]:
    chosen = [
        export
        for _, export in sorted(hub.engine.index.exports.items())
        if (not clusterID or export.cluster_id == clusterID)
        and (not kind or export_kind(export) == kind)
        and (not namespace or export.namespace == namespace)
    ]
    return [export_item(e, hub.config.namespace) for e in chosen]


def import_item(hub: RestHub, imp: pb.ResourceImport) -> dict[str, Any]:
    item = resource_import_to_cr(imp, hub.config.namespace).to_dict()
    reports = hub.engine.import_status.get(imp.import_name, {})
    if reports:
        item["status"] = {"clusterStatuses": cluster_statuses(reports)}
    return item


def imports(hub: RestHub, clusterID: str = "", kind: str = "", namespace: str = "") -> list[dict[str, Any]]:
    chosen = [
        imp
        for _, imp in sorted(hub.engine.index.imports.items())
        if (not clusterID or delivers_to(imp, clusterID))
        and (not kind or import_kind(imp) == kind)
        and (not namespace or imp.namespace == namespace)
    ]
    return [import_item(hub, i) for i in chosen]


def admin_export_from_body(body: Any, leader_cluster_id: str) -> pb.ResourceExport:
    """An admin's ResourceExport (JSON) of an AntreaClusterNetworkPolicy, as a wire export."""
    if not isinstance(body, Mapping):
        raise InvalidRequest("the body must be a JSON object (a ResourceExport)")
    try:
        export = resource_export_from_cr(body)
    except ConversionError as exc:
        raise InvalidRequest(str(exc)) from exc
    if export.WhichOneof("payload") != "cluster_network_policy":
        raise InvalidRequest("the REST facade accepts only AntreaClusterNetworkPolicy exports")
    if not export.cluster_id:
        export.cluster_id = leader_cluster_id
    if not export.name:
        export.name = export.export_name
    return export
