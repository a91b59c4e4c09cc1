"""ClusterSet status as the leader reports it, computed from members (pure)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from hub.merge.global_addressing import AddressingReport, GlobalCIDR
from hub.store.base import MemberRecord
from kube.conditions import format_time


@dataclass(frozen=True)
class MemberHealth:
    cluster_id: str
    connected: bool
    heartbeat_age: float
    last_heartbeat: datetime


def member_health(member: MemberRecord, now: datetime, disconnect_after: float) -> MemberHealth:
    age = (now - member.last_heartbeat).total_seconds()
    return MemberHealth(member.cluster_id, age <= disconnect_after, max(age, 0.0), member.last_heartbeat)


def _condition(kind: str, status: str, reason: str, message: str, since: datetime) -> dict[str, Any]:
    return {
        "type": kind,
        "status": status,
        "reason": reason,
        "message": message,
        "lastTransitionTime": format_time(since),
    }


def clusterset_status(members: list[MemberRecord], now: datetime, disconnect_after: float) -> dict[str, Any]:
    """The leader's ClusterSet.status: totals, Ready, per-cluster ClusterConnected.

    Ready is True only when every member is connected; with no member at all
    it is Unknown/NoReadyCluster, as Antrea reports it.
    """
    health = [member_health(m, now, disconnect_after) for m in sorted(members, key=lambda m: m.cluster_id)]
    ready = sum(1 for h in health if h.connected)
    statuses = []
    for h in health:
        since = h.last_heartbeat if h.connected else h.last_heartbeat + timedelta(seconds=disconnect_after)
        statuses.append(
            {
                "clusterID": h.cluster_id,
                "conditions": [
                    _condition(
                        "ClusterConnected",
                        "True" if h.connected else "False",
                        "Connected" if h.connected else "Disconnected",
                        "" if h.connected else f"no announce for {int(h.heartbeat_age)}s",
                        since,
                    )
                ],
            }
        )
    if not health:
        overall = _condition("Ready", "Unknown", "NoReadyCluster", "no member has joined", now)
    elif ready == len(health):
        overall = _condition("Ready", "True", "AllClustersReady", "", now)
    elif ready == 0:
        overall = _condition("Ready", "False", "NoReadyCluster", "no member is connected", now)
    else:
        down = ", ".join(h.cluster_id for h in health if not h.connected)
        overall = _condition("Ready", "False", "NotAllClustersReady", f"disconnected: {down}", now)
    return {
        "totalClusters": len(health),
        "readyClusters": ready,
        "conditions": [overall],
        "clusterStatuses": statuses,
    }


# The leader ClusterSet's condition saying whether the CR and the hub's configuration agree.
CONFIG_MATCHES = "HubConfigMatches"


def with_mismatches(status: dict[str, Any], mismatches: tuple[str, ...] | list[str], now: datetime) -> dict[str, Any]:
    """`status` with the condition HubConfigMatches: True, or False with every mismatch
    (hub.clusterset.identity) in its message, so none is silently ignored."""
    if mismatches:
        check = _condition(CONFIG_MATCHES, "False", "ConfigMismatch", "; ".join(mismatches), now)
    else:
        check = _condition(CONFIG_MATCHES, "True", "ConfigMatches", "", now)
    return {**status, "conditions": [*status["conditions"], check]}


# The leader ClusterSet's condition about members whose ranges overlap (hub.merge.global_addressing).
GLOBAL_ADDRESSING = "GlobalAddressing"


def global_addressing_condition(
    report: AddressingReport, global_cidr: GlobalCIDR | None, now: datetime
) -> dict[str, Any] | None:
    """True while every member that overlaps another is globally addressed; False naming the
    members that cannot be (no global CIDR, one that overlaps a member's range, no block left);
    None when there is neither a global CIDR nor an overlap to speak of."""
    overlapping = ", ".join(report.overlaps)
    if global_cidr is None:
        if not report.overlaps:
            return None
        message = (
            f"the Service or Pod CIDRs of clusters {overlapping} overlap and the hub has no global CIDR "
            "(--global-cidr): their overlapping ranges are not routed"
        )
        return _condition(GLOBAL_ADDRESSING, "False", "OverlapWithoutGlobalCIDR", message, now)
    if report.conflicts:
        message = "; ".join(report.conflicts) + ": no member is globally addressed until it no longer does"
        return _condition(GLOBAL_ADDRESSING, "False", "GlobalCIDROverlapsMember", message, now)
    if report.without_block:
        message = (
            f"no global block of {global_cidr} (/{global_cidr.block_prefix}) is left for clusters "
            f"{', '.join(report.without_block)}, whose ranges overlap"
        )
        return _condition(GLOBAL_ADDRESSING, "False", "GlobalBlocksExhausted", message, now)
    addressed = [f"{cid} ({a.global_cidr})" for cid, a in sorted(report.by_cluster.items()) if a.globally_addressed]
    message = f"global CIDR {global_cidr}, /{global_cidr.block_prefix} blocks; " + (
        f"globally addressed: {', '.join(addressed)}" if addressed else "no member overlaps another"
    )
    return _condition(GLOBAL_ADDRESSING, "True", "GlobalCIDRInUse", message, now)


def with_global_addressing(
    status: dict[str, Any], report: AddressingReport, global_cidr: GlobalCIDR | None, now: datetime
) -> dict[str, Any]:
    """`status` with the condition GlobalAddressing, when there is one to give."""
    condition = global_addressing_condition(report, global_cidr, now)
    if condition is None:
        return status
    return {**status, "conditions": [*status["conditions"], condition]}
