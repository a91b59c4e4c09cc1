"""The member-side ClusterSet status, as Antrea's member controller reports it (a pure function).

- ``conditions``: one ``Ready``: True when the hub session is connected; otherwise False,
  reason ``Disconnected``, message "Disconnected from leader" and why; or, when the hub refused
  the cluster's ID (KEP-2149), reason ``ClusterIDInUse`` (another cluster is the member of that
  ID) or ``ClusterIDImmutable`` (this cluster is a member under another ID), with the hub's words.
- ``clusterStatuses``: one entry, the leader, with ``Ready`` (True, or False/Disconnected
  with the session's error) and ``IsLeader`` True.
- ``totalClusters`` is 1 (the member counts itself, as Antrea's does); ``readyClusters`` is
  1 while the leader is connected, else 0; ``observedGeneration`` is the ClusterSet's generation.

Conditions follow the metav1 rule (lastTransitionTime moves only when status flips), so a
status recomputed with nothing new equals the one written and is not written again.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import datetime

from kube.conditions import set_condition
from kube.resources import Obj
from mcapi.crds import CLUSTER_IS_LEADER, CLUSTER_READY, CLUSTER_SET_READY

REASON_DISCONNECTED = "Disconnected"
DISCONNECTED_MESSAGE = "Disconnected from leader"


@dataclass(frozen=True)
class LeaderLink:
    """What the member knows of its leader right now."""

    leader_cluster_id: str
    connected: bool
    why: str = ""  # why not connected, a sentence ("" when connected or unknown)
    # False while a new hub session has had no answer yet (neither connected nor failed):
    # nothing new is known, so the status written before (e.g. by the previous process) stays.
    settled: bool = True
    # The kind of the hub's refusal of who we are, when it named one (mcapi.names REASON_CLUSTER_ID_*).
    reason: str = ""


def _disconnected_message(why: str) -> str:
    return f"{DISCONNECTED_MESSAGE}: {why}" if why else DISCONNECTED_MESSAGE


def _leader_entry(current: list[Obj], link: LeaderLink, now: datetime) -> Obj:
    existing = next((c for c in current if c.get("clusterID") == link.leader_cluster_id), None)
    conditions: list[Obj] = copy.deepcopy(list((existing or {}).get("conditions") or []))
    if link.connected:
        set_condition(conditions, CLUSTER_READY, "True", now=now)
    else:
        set_condition(conditions, CLUSTER_READY, "False", link.reason or REASON_DISCONNECTED, link.why, now=now)
    set_condition(conditions, CLUSTER_IS_LEADER, "True", now=now)
    return {"clusterID": link.leader_cluster_id, "conditions": conditions}


def desired_status(current: Obj | None, generation: int | None, link: LeaderLink, now: datetime) -> Obj:
    """The status a member writes on its ClusterSet, starting from ``current`` (not modified)."""
    current = current or {}
    conditions: list[Obj] = copy.deepcopy(list(current.get("conditions") or []))
    # Only the Ready condition is ours; anything else in the list is dropped, as Antrea rewrites it whole.
    conditions = [c for c in conditions if c.get("type") == CLUSTER_SET_READY][:1]
    if link.connected:
        set_condition(conditions, CLUSTER_SET_READY, "True", now=now)
    elif link.reason:
        set_condition(conditions, CLUSTER_SET_READY, "False", link.reason, link.why, now=now)
    else:
        set_condition(
            conditions, CLUSTER_SET_READY, "False", REASON_DISCONNECTED, _disconnected_message(link.why), now=now
        )
    status: Obj = {
        "totalClusters": 1,
        "readyClusters": 1 if link.connected else 0,
        "conditions": conditions,
        "clusterStatuses": [_leader_entry(list(current.get("clusterStatuses") or []), link, now)],
    }
    if generation is not None:
        status["observedGeneration"] = generation
    return status


def status_differs(current: Obj | None, desired: Obj) -> bool:
    """True when writing ``desired`` would change the object's status."""
    return (current or {}) != desired


def status_merge_patch(current: Obj | None, desired: Obj) -> Obj:
    """The merge patch of ``status`` that turns ``current`` into exactly ``desired`` (other keys removed)."""
    patch: Obj = {key: None for key in (current or {}) if key not in desired}
    patch.update(desired)
    return patch
