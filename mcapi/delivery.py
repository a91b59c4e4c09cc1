"""Which members receive an import: one rule for the hub, which filters what it sends, and for
the member, which checks what it is sent (an import may name other clusters after a change)."""

from __future__ import annotations

from mcapi.mchub.v1 import common_area_pb2 as pb


def delivers_to(imp: pb.ResourceImport, cluster_id: str) -> bool:
    """Whether the member cluster_id receives imp.

    An empty cluster_ids targets every member. A ClusterInfo import never goes
    back to the cluster it describes: a member needs only the others' gateways.
    """
    if imp.HasField("cluster_info") and imp.cluster_info.cluster_id == cluster_id:
        return False
    return not imp.cluster_ids or cluster_id in imp.cluster_ids


def delivers_to_all(imp: pb.ResourceImport) -> bool:
    """Whether every member receives imp, whoever it is (``delivers_to`` need not be asked per member)."""
    return not imp.cluster_ids and not imp.HasField("cluster_info")
