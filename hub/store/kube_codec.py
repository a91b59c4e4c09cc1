"""Hub records <-> the CRs the kube store keeps in the leader Namespace.

Exports and imports use mcapi.convert (so kubectl shows what Antrea shows).
A member is a MemberClusterAnnounce `member-announce-from-<id>` whose
`touch-ts` annotation is the last heartbeat, as in Antrea; the hub adds when
the member first joined, which creationTimestamp cannot carry (the API server
sets it).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from hub.store.base import MemberRecord, StoreError
from mcapi import names
from mcapi.convert import (
    ConversionError,
    resource_export_from_cr,
    resource_export_to_cr,
    resource_import_from_cr,
    resource_import_to_cr,
)
from mcapi.crds.base import ObjectMeta
from mcapi.crds.clusterset import MemberClusterAnnounce
from mcapi.mchub.v1 import common_area_pb2 as pb

ANNOTATION_JOINED = "multicluster.antrea.io/joined"


class InvalidRecord(StoreError, ValueError):
    """A record the kube store cannot turn into a CR (nothing of its batch was written)."""


def _rfc3339(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise InvalidRecord(f"time {moment!r} has no timezone; the store keeps UTC times")
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def export_to_cr(export: object, namespace: str) -> dict[str, Any]:
    if not isinstance(export, pb.ResourceExport):
        raise InvalidRecord(f"an export must be a ResourceExport message, not {type(export).__name__}")
    try:
        return resource_export_to_cr(export, namespace).to_dict()
    except ConversionError as exc:
        raise InvalidRecord(str(exc)) from exc


def import_to_cr(imp: object, namespace: str) -> dict[str, Any]:
    if not isinstance(imp, pb.ResourceImport):
        raise InvalidRecord(f"an import must be a ResourceImport message, not {type(imp).__name__}")
    try:
        return resource_import_to_cr(imp, namespace).to_dict()
    except ConversionError as exc:
        raise InvalidRecord(str(exc)) from exc


def member_to_cr(member: object, namespace: str) -> dict[str, Any]:
    if not isinstance(member, MemberRecord):
        raise InvalidRecord(f"a member must be a MemberRecord, not {type(member).__name__}")
    return MemberClusterAnnounce(
        metadata=ObjectMeta(
            name=names.member_announce_name(member.cluster_id),
            namespace=namespace,
            annotations={
                names.ANNOTATION_TOUCH_TS: _rfc3339(member.last_heartbeat),
                ANNOTATION_JOINED: _rfc3339(member.joined),
            },
        ),
        cluster_id=member.cluster_id,
        cluster_set_id=member.cluster_set_id,
        leader_cluster_id=member.leader_cluster_id,
    ).to_dict()


def export_from_cr(obj: dict[str, Any]) -> pb.ResourceExport:
    return resource_export_from_cr(obj)


def import_from_cr(obj: dict[str, Any]) -> pb.ResourceImport:
    return resource_import_from_cr(obj)


def member_from_cr(obj: dict[str, Any]) -> MemberRecord:
    meta = obj.get("metadata", {})
    annotations = meta.get("annotations") or {}
    created = meta.get("creationTimestamp") or annotations.get(names.ANNOTATION_TOUCH_TS)
    heartbeat = annotations.get(names.ANNOTATION_TOUCH_TS) or created
    joined = annotations.get(ANNOTATION_JOINED) or created
    if not heartbeat or not joined:
        raise InvalidRecord(f"MemberClusterAnnounce {meta.get('name')!r} has no heartbeat time")
    return MemberRecord(
        cluster_id=str(obj.get("clusterID", "")),
        cluster_set_id=str(obj.get("clusterSetID", "")),
        leader_cluster_id=str(obj.get("leaderClusterID", "")),
        joined=_parse_time(joined),
        last_heartbeat=_parse_time(heartbeat),
    )
