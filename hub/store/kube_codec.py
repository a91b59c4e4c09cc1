"""Hub records <-> the CRs the kube store keeps in the leader Namespace.

Exports and imports use mcapi.convert (so kubectl shows what Antrea shows).
A member is a MemberClusterAnnounce `member-announce-from-<id>` whose
`touch-ts` annotation is the last heartbeat, as in Antrea; the hub adds when
the member first joined, which creationTimestamp cannot carry (the API server
sets it), and what the member says of its cluster (`mchub.antrea.io/cluster-inventory`,
JSON: its UID, Kubernetes version, ClusterProperties and control plane health).

What a real API server refuses is caught here, before any write of a batch: a label
value it would reject (an AntreaClusterNetworkPolicy's name may be 253 characters, a
label value at most 63) is left out (the spec says the same), and a CR too large for
etcd fails its batch as an InvalidRecord instead of being retried until the write timeout.
The hub's engine keeps such a batch from being made: `measured_cr` is the CR that check
measures (KubeStore.record_bytes), so the export is refused instead.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from hub.store.base import MemberRecord, StoreError
from hub.store.kube_authorship import stamp_digest
from hub.store.member_inventory import inventory_from_json, inventory_json
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
# What the member says of its cluster (hub.store.member_inventory), absent when it says nothing.
ANNOTATION_INVENTORY = "mchub.antrea.io/cluster-inventory"
# The member's block of the ClusterSet's global CIDR (absent: none), an mchub extension.
ANNOTATION_GLOBAL_CIDR = "mchub.antrea.io/global-cidr"
# Every ResourceImport the hub writes says which history wrote it: "<epoch>/<revision>/<changes>",
# where <changes> counts the import changes of that revision, so a follower replica (hub.replicas.kube_source)
# knows when it has seen a revision whole. A delete first stamps the CR with DELETING set, then
# deletes it: the DELETED event then names the revision that deleted it.
ANNOTATION_HUB_CHANGE = "mchub.antrea.io/change"
ANNOTATION_HUB_DELETING = "mchub.antrea.io/deleting"
# etcd takes at most 1.5 MiB per write (its default --max-request-bytes); the API server adds
# metadata (uid, timestamps, managedFields) and the status to what the hub sends: keep room.
MAX_CR_BYTES = 1_400_000
_LABEL_VALUE = re.compile(r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?")


class InvalidRecord(StoreError, ValueError):
    """A record the kube store cannot turn into a CR (nothing of its batch was written)."""


def _rfc3339(moment: datetime) -> str:
    if moment.tzinfo is None:
        raise InvalidRecord(f"time {moment!r} has no timezone; the store keeps UTC times")
    return moment.astimezone(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _parse_time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def is_label_value(value: str) -> bool:
    return len(value) <= 63 and _LABEL_VALUE.fullmatch(value) is not None


def cr_bytes(cr: dict[str, Any]) -> int:
    """The size of a CR as the hub sends it: compact JSON."""
    return len(json.dumps(cr, separators=(",", ":")).encode())


def _with_label_values(cr: dict[str, Any]) -> dict[str, Any]:
    meta = cr.get("metadata") or {}
    labels = meta.get("labels")
    if labels:
        meta["labels"] = {key: value for key, value in labels.items() if is_label_value(value)}
    return cr


def storable(cr: dict[str, Any], size: int | None = None) -> dict[str, Any]:
    """`cr`, unless it is too large for etcd (InvalidRecord); `size` is its cr_bytes when known."""
    size = cr_bytes(cr) if size is None else size
    if size > MAX_CR_BYTES:
        meta = cr.get("metadata") or {}
        raise InvalidRecord(
            f"{cr.get('kind')} {meta.get('name')!r} is too large for a Kubernetes object "
            f"({size} bytes as JSON, at most {MAX_CR_BYTES})"
        )
    return cr


def _export_cr(export: object, namespace: str) -> dict[str, Any]:
    if not isinstance(export, pb.ResourceExport):
        raise InvalidRecord(f"an export must be a ResourceExport message, not {type(export).__name__}")
    try:
        # The digest tells the hub's ResourceExports from a person's (hub.store.kube_authorship).
        return _with_label_values(stamp_digest(resource_export_to_cr(export, namespace).to_dict()))
    except ConversionError as exc:
        raise InvalidRecord(str(exc)) from exc


def _import_cr(imp: object, namespace: str, stamp: str | None) -> dict[str, Any]:
    if not isinstance(imp, pb.ResourceImport):
        raise InvalidRecord(f"an import must be a ResourceImport message, not {type(imp).__name__}")
    try:
        cr = _with_label_values(resource_import_to_cr(imp, namespace).to_dict())
    except ConversionError as exc:
        raise InvalidRecord(str(exc)) from exc
    return cr if stamp is None else stamped(cr, stamp)


def export_to_cr(export: object, namespace: str) -> dict[str, Any]:
    return storable(_export_cr(export, namespace))


def import_to_cr(imp: object, namespace: str, stamp: str | None = None) -> dict[str, Any]:
    """The ResourceImport CR of `imp`; with its change `stamp` when given (the size check counts it)."""
    return storable(_import_cr(imp, namespace, stamp))


def measured_cr(
    record: object, namespace: str, kind: type[pb.ResourceExport] | type[pb.ResourceImport]
) -> dict[str, Any]:
    """The CR of `record`, a `kind` (InvalidRecord if it is not one), as the size check counts it
    (not checked): an import with the widest change stamp, since the one it will carry is known
    only when its batch is written (`stamped` then puts the real one in its place, no longer)."""
    if kind is pb.ResourceImport:
        return _import_cr(record, namespace, _WIDEST_STAMP)
    return _export_cr(record, namespace)


def member_to_cr(member: object, namespace: str) -> dict[str, Any]:
    if not isinstance(member, MemberRecord):
        raise InvalidRecord(f"a member must be a MemberRecord, not {type(member).__name__}")
    annotations = {
        names.ANNOTATION_TOUCH_TS: _rfc3339(member.last_heartbeat),
        ANNOTATION_JOINED: _rfc3339(member.joined),
        # Always written ("" for none): the store writes members with a merge patch.
        ANNOTATION_GLOBAL_CIDR: member.global_cidr,
    }
    inventory = inventory_json(member.inventory)
    if inventory:
        annotations[ANNOTATION_INVENTORY] = inventory
    return MemberClusterAnnounce(
        metadata=ObjectMeta(
            name=names.member_announce_name(member.cluster_id),
            namespace=namespace,
            annotations=annotations,
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
        inventory=inventory_from_json(str(annotations.get(ANNOTATION_INVENTORY) or ""), str(obj.get("clusterID", ""))),
        global_cidr=str(annotations.get(ANNOTATION_GLOBAL_CIDR) or ""),
    )


def change_stamp(epoch: str, revision: int, changes: int) -> str:
    return f"{epoch}/{revision}/{changes}"


def read_change_stamp(obj: dict[str, Any]) -> tuple[str, int, int] | None:
    """(epoch, revision, changes) of a ResourceImport the hub wrote; None for one it did not."""
    text = ((obj.get("metadata") or {}).get("annotations") or {}).get(ANNOTATION_HUB_CHANGE, "")
    epoch, _, rest = str(text).partition("/")
    revision, _, changes = rest.partition("/")
    if not epoch or not revision.isdigit() or not changes.isdigit():
        return None
    return epoch, int(revision), int(changes)


def is_being_deleted(obj: dict[str, Any]) -> bool:
    return ANNOTATION_HUB_DELETING in ((obj.get("metadata") or {}).get("annotations") or {})


def stamped(cr: dict[str, Any], stamp: str) -> dict[str, Any]:
    meta = cr.setdefault("metadata", {})
    meta["annotations"] = {**(meta.get("annotations") or {}), ANNOTATION_HUB_CHANGE: stamp}
    return cr


# An epoch is a uuid4's 32 hex digits; a revision or a count of changes fits in 20 digits.
_WIDEST_STAMP = change_stamp("f" * 32, 10**20 - 1, 10**20 - 1)


def deleting_patch(stamp: str) -> dict[str, Any]:
    """The merge patch that marks a ResourceImport as deleted at `stamp`, just before the delete."""
    return {"metadata": {"annotations": {ANNOTATION_HUB_CHANGE: stamp, ANNOTATION_HUB_DELETING: "true"}}}


def clearing_deleting_mark(cr: dict[str, Any]) -> dict[str, Any]:
    """The merge patch of a put: also removes a delete's mark left by a delete that failed midway."""
    meta = dict(cr.get("metadata") or {})
    meta["annotations"] = {**(meta.get("annotations") or {}), ANNOTATION_HUB_DELETING: None}
    return {**cr, "metadata": meta}
