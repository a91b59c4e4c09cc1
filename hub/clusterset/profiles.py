"""Each member as a ClusterProfile (KEP-4322, cluster-inventory-api v0.1), computed from what the hub
knows of it (pure).

The hub is the ClusterSet's cluster manager: every member has a ClusterProfile named after its
cluster ID in the leader Namespace, labelled ``x-k8s.io/cluster-manager: mchub`` with
``spec.clusterManager.name`` mchub. Its status:

- ``ControlPlaneHealthy``: True while the member announces (at most ``disconnect_after`` since
  the last) and found its API server ready; False, reason ``Disconnected``, when its announces
  stopped; False, reason ``ControlPlaneNotReady``, with the member's words, when its API server
  is not ready; ``lastTransitionTime`` moves only when the status flips;
- ``version.kubernetes``: the member's API server version;
- ``properties``: the member's ClusterProperties. A property's ``lastObservedTime`` is when the
  hub first saw it with its current value: it is not moved by every announce (that would write
  every profile at every heartbeat).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime

from hub.clusterset.status import member_health
from hub.store.base import MemberRecord
from kube.conditions import Status, format_time, set_condition
from kube.resources import Obj
from mcapi.crds import CONDITION_CONTROL_PLANE_HEALTHY, LABEL_CLUSTER_MANAGER
from mcapi.resources import CLUSTER_PROFILES

# The cluster manager's name, in the label and spec.clusterManager.name of every profile it keeps.
CLUSTER_MANAGER = "mchub"
REASON_HEALTHY = "Healthy"
REASON_DISCONNECTED = "Disconnected"
REASON_NOT_READY = "ControlPlaneNotReady"


@dataclass(frozen=True)
class DesiredProfile:
    """A ClusterProfile without its status (what ``kube.apply.ensure`` writes), and its status."""

    object: Obj
    status: Obj

    @property
    def name(self) -> str:
        return str(self.object["metadata"]["name"])


def profile_object(cluster_id: str, namespace: str) -> Obj:
    return {
        "apiVersion": CLUSTER_PROFILES.api_version,
        "kind": CLUSTER_PROFILES.kind,
        "metadata": {"name": cluster_id, "namespace": namespace, "labels": {LABEL_CLUSTER_MANAGER: CLUSTER_MANAGER}},
        "spec": {"displayName": cluster_id, "clusterManager": {"name": CLUSTER_MANAGER}},
    }


def _health(member: MemberRecord, now: datetime, disconnect_after: float) -> tuple[Status, str, str]:
    health = member_health(member, now, disconnect_after)
    if not health.connected:
        return (
            "False",
            REASON_DISCONNECTED,
            f"The member has not announced for {int(health.heartbeat_age)}s (it is Disconnected after "
            f"{int(disconnect_after)}s); last announce {format_time(member.last_heartbeat)}.",
        )
    if member.inventory.control_plane_healthy is False:
        why = member.inventory.control_plane_message or "its API server is not ready"
        return "False", REASON_NOT_READY, f"The member found its API server not ready: {why}"
    return "True", REASON_HEALTHY, "The member announces to the hub and its API server is ready."


def _properties(member: MemberRecord, now: datetime, current: list[Obj]) -> list[Obj]:
    seen = {str(p.get("name")): p for p in current if isinstance(p, dict)}
    out: list[Obj] = []
    for name, value in member.inventory.properties:
        before = seen.get(name)
        held = before is not None and before.get("value") == value and before.get("lastObservedTime")
        observed = before["lastObservedTime"] if held and before is not None else format_time(now)
        out.append({"name": name, "value": value, "lastObservedTime": observed})
    return out


def profile_status(member: MemberRecord, now: datetime, disconnect_after: float, current: Obj | None) -> Obj:
    """The profile's status, starting from ``current`` (not modified): its transition and observation
    times stay where nothing changed."""
    current = current or {}
    conditions = copy.deepcopy([c for c in current.get("conditions") or [] if isinstance(c, dict)])
    status, reason, message = _health(member, now, disconnect_after)
    set_condition(conditions, CONDITION_CONTROL_PLANE_HEALTHY, status, reason, message, now=now)
    version = member.inventory.kubernetes_version
    return {
        "conditions": conditions,
        "version": {"kubernetes": version} if version else None,
        "properties": _properties(member, now, list(current.get("properties") or [])) or None,
    }


def desired_profile(
    member: MemberRecord, namespace: str, now: datetime, disconnect_after: float, current: Obj | None
) -> DesiredProfile:
    """The profile of ``member``; ``current``: the profile as it is now (None: none yet)."""
    status = profile_status(member, now, disconnect_after, (current or {}).get("status"))
    return DesiredProfile(profile_object(member.cluster_id, namespace), status)


def is_ours(profile: Obj) -> bool:
    """A profile this manager keeps (by its label; others' profiles are never touched)."""
    labels = (profile.get("metadata") or {}).get("labels") or {}
    return labels.get(LABEL_CLUSTER_MANAGER) == CLUSTER_MANAGER
