"""Overlap of imported clusters' ranges with ours and with each other's, pure.

Every ClusterInfoImport gets a verdict: the CIDRs of its Service CIDR and Pod CIDRs that
overlap the local Service/Pod CIDRs or another import's. Each side of a conflict between
two imports is flagged (as MCS flags every exporter of a conflict); the message says which
cluster keeps its routes: the agent settles such conflicts by cluster ID order (the
smaller ID keeps its CIDR, agent/remotes.py), so every Node reaches the same verdict.

A globally addressed cluster (the hub stamps ``globallyAddressed`` and its ``globalCIDR`` into
its import: hub.merge.global_addressing) is routed by its global block alone, so its overlaps
are resolved: its import says so (False/GloballyAddressed, naming the overlaps), and an
overlap of another import with it is none.
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
REASON_GLOBALLY_ADDRESSED = "GloballyAddressed"

Network = IPv4Network | IPv6Network


@dataclass(frozen=True)
class Ranges:
    """One cluster's ranges: the local one (cluster_id may be "") or an import's spec."""

    cluster_id: str
    service_cidr: str = ""
    pod_cidrs: tuple[str, ...] = ()
    global_cidr: str = ""
    """The global block it is reached through, while globally addressed ("" otherwise)."""

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
    block = str(spec.get("globalCIDR") or "") if spec.get("globallyAddressed") is True else ""
    return Ranges(str(spec.get("clusterID") or ""), str(spec.get("serviceCIDR") or ""), pods, block)


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
                if other_name == name or other.global_cidr:
                    continue  # a globally addressed cluster's ranges are not routed here
                for other_kind, other_network in other.labelled():
                    if _overlap(network, other_network):
                        keeper = min(ranges.cluster_id, other.cluster_id)
                        problems.append(
                            f"{kind} {network} overlaps cluster {other.cluster_id}'s {other_kind} {other_network}"
                            f" (cluster {keeper} keeps the route)"
                        )
                        kinds.add(kind)
        verdicts[name] = _verdict(problems, kinds) if not ranges.global_cidr else _resolved(problems, ranges)
    return verdicts


def _resolved(problems: Sequence[str], ranges: Ranges) -> OverlapVerdict:
    overlaps = ("; ".join(problems) + ": ") if problems else ""
    return OverlapVerdict(
        "False",
        REASON_GLOBALLY_ADDRESSED,
        f"{overlaps}cluster {ranges.cluster_id} is globally addressed: it is reached through its global CIDR "
        f"{ranges.global_cidr}, not its own ranges.",
    )


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
