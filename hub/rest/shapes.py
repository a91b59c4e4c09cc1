"""Hub state shaped as the Kubernetes objects users know (TEMPORARY: convert pending)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from google.protobuf.json_format import MessageToDict, ParseDict

from hub.clusterset import clusterset_status
from hub.errors import InvalidRequest
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb

if TYPE_CHECKING:
    from hub.app import HubApp


def verdict_name(verdict: int) -> str:
    return pb.Verdict.Name(verdict).removeprefix("VERDICT_").capitalize()  # type: ignore[arg-type]


def item_list(kind: str, items: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": f"{names.GROUP}/v1alpha1", "kind": kind, "items": items}


def clusterset(hub: HubApp) -> dict[str, Any]:
    cfg = hub.config
    return {
        "apiVersion": f"{names.GROUP}/v1alpha2",
        "kind": "ClusterSet",
        "metadata": {"name": cfg.cluster_set_id, "namespace": names.DEFAULT_LEADER_NAMESPACE},
        "spec": {"clusterID": cfg.leader_cluster_id, "leaders": [{"clusterID": cfg.leader_cluster_id}]},
        "status": clusterset_status(list(hub.engine.index.members.values()), hub._clock(), cfg.disconnect_after),
    }


def members(hub: HubApp) -> list[dict[str, Any]]:
    return []


def export_item(export: pb.ResourceExport) -> dict[str, Any]:
    return MessageToDict(export)


def exports(hub: HubApp, **filters: str) -> list[dict[str, Any]]:
    return [export_item(e) for e in hub.engine.index.exports.values()]


def imports(hub: HubApp, **filters: str) -> list[dict[str, Any]]:
    return [MessageToDict(i) for i in hub.engine.index.imports.values()]


def admin_export_from_body(body: Any) -> pb.ResourceExport:
    try:
        return ParseDict(body, pb.ResourceExport())
    except Exception as exc:
        raise InvalidRequest(str(exc)) from exc
