"""Who a member is (KEP-2149): what its announce says of its cluster, and the rules its cluster
ID follows.

An announce carries the cluster's UID (its kube-system Namespace's), its Kubernetes version, its
ClusterProperties and its control plane's health: the member's ClusterInventory, checked here
(INVALID_ARGUMENT when malformed). A cluster ID is unique in the ClusterSet: while a cluster is
the member of an ID, another cluster announcing it is refused (ALREADY_EXISTS,
ClusterIDInUse). And it is immutable while the cluster is a member: a cluster that is the
member of one ID and announces another is refused (FAILED_PRECONDITION, ClusterIDImmutable).
Both hold until the member leaves or the operator removes it. An announce without a UID (an
older member) is checked for neither.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from hub.errors import ClusterIDImmutable, ClusterIDInUse, InvalidRequest, quote
from hub.store.base import ClusterInventory, MemberRecord
from mcapi import names
from mcapi.cluster_selection import MAX_VALUE_CHARS
from mcapi.mchub.v1 import common_area_pb2 as pb

# What one announce may carry of ClusterProperties: the member's ClusterProfile holds them, and
# the kube store keeps them in an annotation of the MemberClusterAnnounce (256 KiB for all).
MAX_PROPERTIES = 128
MAX_PROPERTIES_BYTES = 64 * 1024
MAX_UID_CHARS = 128
MAX_VERSION_CHARS = 256
MAX_HEALTH_MESSAGE_CHARS = 1024


def inventory_of(req: pb.AnnounceRequest) -> ClusterInventory:
    """The announce's ClusterInventory; InvalidRequest naming what is malformed."""
    problems: list[str] = []
    if len(req.cluster_uid) > MAX_UID_CHARS:
        problems.append(f"cluster_uid {quote(req.cluster_uid)} is longer than {MAX_UID_CHARS} characters")
    if len(req.kubernetes_version) > MAX_VERSION_CHARS:
        problems.append(f"kubernetes_version {quote(req.kubernetes_version)} is too long")
    properties = dict(req.properties)
    if len(properties) > MAX_PROPERTIES:
        problems.append(f"{len(properties)} ClusterProperties; at most {MAX_PROPERTIES}")
    size = sum(len(k.encode()) + len(v.encode()) for k, v in properties.items())
    if size > MAX_PROPERTIES_BYTES:
        problems.append(f"ClusterProperties of {size} bytes; at most {MAX_PROPERTIES_BYTES}")
    for name, value in sorted(properties.items()):
        if not names.is_dns1123_subdomain(name):
            problems.append(f"ClusterProperty name {quote(name)} is not a DNS-1123 subdomain")
        if not value or len(value) > MAX_VALUE_CHARS:
            problems.append(
                f"ClusterProperty {quote(name)} has a value of {len(value)} characters; 1..{MAX_VALUE_CHARS}"
            )
    if problems:
        raise InvalidRequest("the announce's cluster inventory is invalid: " + "; ".join(problems[:8]))
    health = req.control_plane if req.HasField("control_plane") else None
    return ClusterInventory(
        cluster_uid=req.cluster_uid,
        kubernetes_version=req.kubernetes_version,
        properties=tuple(sorted(properties.items())),
        control_plane_healthy=None if health is None else health.healthy,
        control_plane_message="" if health is None else health.message[:MAX_HEALTH_MESSAGE_CHARS],
    )


def _when(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def check_cluster_id(cluster_id: str, uid: str, members: Mapping[str, MemberRecord]) -> None:
    """Refuse a cluster that claims an ID another cluster holds, or that holds another ID."""
    if not uid:
        return
    holder = members.get(cluster_id)
    held_uid = holder.inventory.cluster_uid if holder is not None else ""
    if holder is not None and held_uid and held_uid != uid:
        raise ClusterIDInUse(
            f"cluster ID {quote(cluster_id)} is in use: another cluster (UID {quote(held_uid)}) has been the member "
            f"{quote(cluster_id)} since {_when(holder.joined)} (last announce {_when(holder.last_heartbeat)}); "
            "cluster IDs are unique in a ClusterSet: give this cluster another ID, or, if that cluster is gone, "
            f"remove the member first (mcctl delete member {cluster_id})"
        )
    for other in members.values():
        if other.cluster_id != cluster_id and other.inventory.cluster_uid == uid:
            raise ClusterIDImmutable(
                f"this cluster (UID {quote(uid)}) is the member {quote(other.cluster_id)} of the ClusterSet and "
                f"cannot announce itself as {quote(cluster_id)}: a cluster ID is immutable while the cluster is a "
                f"member; set its ID back to {quote(other.cluster_id)}, or have it leave the ClusterSet (delete "
                f"its ClusterSet) or be removed (mcctl delete member {other.cluster_id}) before it joins as "
                f"{quote(cluster_id)}"
            )
