"""Which ClusterSet the hub serves: the leader ClusterSet CR's, else the hub's configuration (pure).

The user guide's "Initialize ClusterSet" creates, in the leader Namespace, a ClusterSet named
after the ClusterSet ID whose ``spec.clusterID`` and ``spec.leaders[0].clusterID`` name the
leader cluster. When that CR exists the hub serves the ClusterSet it describes; the
ConfigMap (``--clusterset-id``, ``--leader-cluster-id``) is the fallback until it does. Every
disagreement is kept as a sentence: the hub logs it and writes it into the ClusterSet's status
(hub.clusterset.status), so it is never silently ignored.

Which CR: the one named like the configured ClusterSet ID; else the only ClusterSet of the
Namespace (Antrea allows one per Namespace). Several, none with the configured name: the hub
follows none of them and says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from hub.errors import quote
from mcapi import names

CONFIG_SOURCE = "the hub's configuration (ConfigMap mchub-hub-config, --clusterset-id/--leader-cluster-id)"


@dataclass(frozen=True)
class ClusterSetIdentity:
    cluster_set_id: str
    leader_cluster_id: str
    # The CR followed ("" when none): its name is the ClusterSet ID.
    followed: str = ""
    mismatches: tuple[str, ...] = ()


def _live(obj: Mapping[str, Any]) -> bool:
    return not (obj.get("metadata") or {}).get("deletionTimestamp")


def choose(clustersets: Sequence[Mapping[str, Any]], configured: str) -> tuple[Mapping[str, Any] | None, str]:
    """The ClusterSet CR to follow, and why none is followed when several are there."""
    live = [c for c in clustersets if _live(c)]
    for candidate in live:
        if (candidate.get("metadata") or {}).get("name") == configured:
            return candidate, ""
    if len(live) == 1:
        return live[0], ""
    if len(live) > 1:
        found = ", ".join(sorted(quote(str((c.get("metadata") or {}).get("name"))) for c in live))
        return None, (
            f"the leader Namespace holds {len(live)} ClusterSets ({found}) and none is named like the "
            f"configured ClusterSet ID {quote(configured)}: the hub follows none; keep one ClusterSet per Namespace"
        )
    return None, ""


def identity(
    clustersets: Sequence[Mapping[str, Any]], configured_set: str, configured_leader: str
) -> ClusterSetIdentity:
    """What the hub serves, given the leader Namespace's ClusterSets and its configuration."""
    chosen, ambiguity = choose(clustersets, configured_set)
    if chosen is None:
        return ClusterSetIdentity(configured_set, configured_leader, mismatches=(ambiguity,) if ambiguity else ())
    name = str((chosen.get("metadata") or {}).get("name") or "")
    spec = chosen.get("spec") or {}
    own = str(spec.get("clusterID") or "")
    leaders = [str((leader or {}).get("clusterID") or "") for leader in spec.get("leaders") or []]
    mismatches: list[str] = []
    leader = own or (leaders[0] if leaders else "") or configured_leader
    if not names.is_valid_cluster_id(leader):
        mismatches.append(f"ClusterSet {quote(name)} names the leader {quote(leader)}, not a DNS-1123 label")
        leader = configured_leader
    if len(leaders) != 1:
        mismatches.append(f"ClusterSet {quote(name)} has {len(leaders)} leaders; a ClusterSet has exactly one")
    elif own and leaders[0] != own:
        mismatches.append(
            f"ClusterSet {quote(name)} says spec.clusterID {quote(own)} but spec.leaders[0].clusterID "
            f"{quote(leaders[0])}: in the leader's ClusterSet both name the leader; the hub takes spec.clusterID"
        )
    if name != configured_set:
        mismatches.append(
            f"the ClusterSet CR is {quote(name)} but {CONFIG_SOURCE} says ClusterSet ID {quote(configured_set)}: "
            "the hub serves the CR's"
        )
    if leader != configured_leader:
        mismatches.append(
            f"ClusterSet {quote(name)} names the leader cluster {quote(leader)} but {CONFIG_SOURCE} says "
            f"{quote(configured_leader)}: the hub serves the CR's"
        )
    return ClusterSetIdentity(name, leader, followed=name, mismatches=tuple(mismatches))
