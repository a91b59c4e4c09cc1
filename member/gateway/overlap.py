"""Overlap of imported clusters' ranges with ours and with each other's, pure.

Every ClusterInfoImport gets a verdict: the CIDRs of its Service CIDR and Pod CIDRs that
overlap the local Service/Pod CIDRs or another import's. Each side of a conflict between
two imports is flagged (as MCS flags every exporter of a conflict); the message says which
cluster keeps its routes: the agent settles such conflicts by cluster ID order (the
smaller ID keeps its CIDR, agent/remotes.py), so every Node reaches the same verdict.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network, IPv6Network, ip_network
from typing import Any

CONDITION_CIDR_CONFLICT = "CIDRConflict"
REASON_SERVICE_CIDR_OVERLAP = "ServiceCIDROverlap"
REASON_POD_CIDR_OVERLAP = "PodCIDROverlap"
REASON_SERVICE_AND_POD_CIDR_OVERLAP = "ServiceAndPodCIDROverlap"
REASON_NO_OVERLAP = "NoOverlap"

Network = IPv4Network | IPv6Network


@dataclass(frozen=True)
class Ranges:
    """One cluster's ranges: the local one (cluster_id may be "") or an import's spec."""

    cluster_id: str
    service_cidr: str = ""
    pod_cidrs: tuple[str, ...] = ()

    def labelled(self) -> list[tuple[str, Network]]:
        found: list[tuple[str, Network]] = []
        for kind, texts in (("Service CIDR", (self.service_cidr,)), ("Pod CIDR", self.pod_cidrs)):
            for text in texts:
                network = _network(text)
                if network is not None:
                    found.append((kind, network))
        return found


@dataclass(frozen=True)
class OverlapVerdict:
    status: str
    """"True" when some range overlaps, else "False"."""
    reason: str
    message: str


def _network(text: str) -> Network | None:
    if not text:
        return None
    try:
        return ip_network(text.strip(), strict=False)
    except ValueError:
        return None


def _overlap(a: Network, b: Network) -> bool:
    if isinstance(a, IPv4Network) and isinstance(b, IPv4Network):
        return a.overlaps(b)
    if isinstance(a, IPv6Network) and isinstance(b, IPv6Network):
        return a.overlaps(b)
    return False


def ranges_from_import(obj: Mapping[str, Any]) -> Ranges:
    spec = obj.get("spec") or {}
    pods = tuple(str(c) for c in spec.get("podCIDRs") or [] if c)
    return Ranges(str(spec.get("clusterID") or ""), str(spec.get("serviceCIDR") or ""), pods)


def find_overlaps(local: Ranges, imports: Mapping[str, Ranges]) -> dict[str, OverlapVerdict]:
    """A verdict per import name (every import gets one)."""
    verdicts: dict[str, OverlapVerdict] = {}
    for name, ranges in sorted(imports.items()):
        problems: list[str] = []
        kinds: set[str] = set()
        for kind, network in ranges.labelled():
            for local_kind, local_network in local.labelled():
                if _overlap(network, local_network):
                    problems.append(f"{kind} {network} overlaps the local {local_kind} {local_network}")
                    kinds.add(kind)
            for other_name, other in sorted(imports.items()):
                if other_name == name:
                    continue
                for other_kind, other_network in other.labelled():
                    if _overlap(network, other_network):
                        keeper = min(ranges.cluster_id, other.cluster_id)
                        problems.append(
                            f"{kind} {network} overlaps cluster {other.cluster_id}'s {other_kind} {other_network}"
                            f" (cluster {keeper} keeps the route)"
                        )
                        kinds.add(kind)
        verdicts[name] = _verdict(problems, kinds)
    return verdicts


def _verdict(problems: Sequence[str], kinds: set[str]) -> OverlapVerdict:
    if not problems:
        return OverlapVerdict("False", REASON_NO_OVERLAP, "No overlap with the local cluster or other imports.")
    if kinds == {"Service CIDR"}:
        reason = REASON_SERVICE_CIDR_OVERLAP
    elif kinds == {"Pod CIDR"}:
        reason = REASON_POD_CIDR_OVERLAP
    else:
        reason = REASON_SERVICE_AND_POD_CIDR_OVERLAP
    return OverlapVerdict("True", reason, "; ".join(problems) + ".")
