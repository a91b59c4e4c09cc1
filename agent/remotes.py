"""Validation of ClusterInfoImports: which remote clusters and CIDRs can be routed.

A globally addressed remote (its ranges overlap another member's) is routed by its global block
alone; any other by its Service CIDR (and Pod CIDRs with Pod-to-Pod connectivity).

Pure. Remote values come from other clusters, so nothing here raises: what cannot be
routed safely is left out with an Exclusion the kube wiring can publish. Conflicts
between two remote clusters are settled by cluster ID order (the smaller ID keeps its
CIDR), so every Node of every cluster reaches the same verdict.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network, ip_address, ip_network

from agent.inputs import RemoteCluster
from agent.state import Exclusion, ExclusionReason
from mcapi.global_addresses import egress_ip, parse_block


@dataclass(frozen=True)
class LocalAddressing:
    """The local facts a remote cluster must not collide with."""

    cluster_id: str
    cidrs: tuple[tuple[IPv4Network, str], ...]
    """Local CIDRs with a description ("local Service CIDR", ...)."""
    tunnel_endpoints: tuple[IPv4Address, ...]
    """Underlay addresses the tunnels use: this Node, the local Gateway."""
    wireguard_public_key: str | None = None


@dataclass(frozen=True)
class AcceptedRemote:
    """A remote cluster that will be routed, with the CIDRs that survived validation."""

    cluster_id: str
    gateway_ip: IPv4Address
    """The first of ``gateway_ips`` (the one a single-Gateway importer uses)."""
    cidrs: tuple[IPv4Network, ...]
    wireguard_public_key: str | None
    gateway_ips: tuple[IPv4Address, ...] = ()
    """Every usable gatewayIP, in the ClusterInfo's order (empty: just ``gateway_ip``)."""
    egress_ip: IPv4Address | None = None
    """A globally addressed remote's egress address (its traffic's source when it has one Gateway)."""

    @property
    def gateways(self) -> tuple[IPv4Address, ...]:
        return self.gateway_ips or (self.gateway_ip,)


def select_remotes(
    remotes: Iterable[RemoteCluster],
    local: LocalAddressing,
    *,
    pod_to_pod: bool,
    require_wireguard_key: bool,
) -> tuple[list[AcceptedRemote], list[Exclusion]]:
    """Split remote clusters into routable ones and exclusions (deterministic order)."""
    accepted: list[AcceptedRemote] = []
    exclusions: list[Exclusion] = []
    seen: set[str] = set()
    for remote in sorted(remotes, key=lambda r: r.cluster_id):
        cid = remote.cluster_id
        if cid == local.cluster_id:
            exclusions.append(Exclusion(cid, ExclusionReason.SELF_IMPORT, "ClusterInfoImport of the local cluster"))
            continue
        if cid in seen:
            exclusions.append(Exclusion(cid, ExclusionReason.DUPLICATE_CLUSTER, "cluster ID imported twice"))
            continue
        seen.add(cid)
        gateway_ips, gateway_exclusions = _gateway_ips(remote, local, accepted)
        if not gateway_ips:
            exclusions.extend(gateway_exclusions[:1])
            continue
        exclusions.extend(gateway_exclusions)  # a further Gateway unusable: the others still carry
        gateway_ip = gateway_ips[0]
        key = remote.wireguard_public_key or None
        if require_wireguard_key and (key is None or key == local.wireguard_public_key):
            why = "no WireGuard public key" if key is None else "same WireGuard public key as this Node"
            exclusions.append(Exclusion(cid, ExclusionReason.NO_WIREGUARD_KEY, why))
            continue
        if remote.global_cidr is not None:
            # Globally addressed: its own ranges overlap another member's; only its block is routed.
            wanted = [remote.global_cidr]
        else:
            wanted = [remote.service_cidr] if remote.service_cidr else []
            if pod_to_pod:
                wanted.extend(remote.pod_cidrs)
        cidrs, cidr_exclusions = _routable_cidrs(cid, wanted, gateway_ips, local, accepted)
        exclusions.extend(cidr_exclusions)
        if not cidrs:
            exclusions.append(Exclusion(cid, ExclusionReason.NO_ROUTABLE_CIDR, "no Service or Pod CIDR left to route"))
            continue
        block = parse_block(remote.global_cidr) if remote.global_cidr is not None else None
        egress = egress_ip(block) if block is not None and block in cidrs else None
        accepted.append(AcceptedRemote(cid, gateway_ip, tuple(cidrs), key, gateway_ips, egress))
    return accepted, exclusions


def _gateway_ips(
    remote: RemoteCluster, local: LocalAddressing, accepted: Sequence[AcceptedRemote]
) -> tuple[tuple[IPv4Address, ...], list[Exclusion]]:
    """The usable gatewayIPs (none: the first exclusion says why the cluster is left out); an
    unusable one besides usable ones is an exclusion naming it."""
    cid = remote.cluster_id
    if not remote.gateway_ips or not remote.gateway_ips[0]:
        return (), [Exclusion(cid, ExclusionReason.NO_GATEWAY_IP, "gatewayInfos is empty")]
    usable: list[IPv4Address] = []
    exclusions: list[Exclusion] = []
    for text in dict.fromkeys(remote.gateway_ips):
        found = _gateway_ip(cid, text, local, accepted)
        if isinstance(found, Exclusion):
            exclusions.append(Exclusion(found.cluster_id, found.reason, found.message, text) if usable else found)
        else:
            usable.append(found)
    return tuple(usable), exclusions


def _gateway_ip(
    cid: str, text: str, local: LocalAddressing, accepted: Sequence[AcceptedRemote]
) -> IPv4Address | Exclusion:
    try:
        parsed = ip_address(text)
    except ValueError:
        return Exclusion(cid, ExclusionReason.INVALID_GATEWAY_IP, f"gatewayIP {text!r} is not an IP address")
    if not isinstance(parsed, IPv4Address):
        return Exclusion(cid, ExclusionReason.UNSUPPORTED_IP_FAMILY, f"gatewayIP {text} is not IPv4")
    if parsed in local.tunnel_endpoints:
        return Exclusion(cid, ExclusionReason.GATEWAY_IP_CONFLICT, f"gatewayIP {parsed} is a local address")
    for cidr, what in local.cidrs:
        if parsed in cidr:
            return Exclusion(cid, ExclusionReason.GATEWAY_IP_CONFLICT, f"gatewayIP {parsed} is inside {what} {cidr}")
    for other in accepted:
        if parsed in other.gateways:
            msg = f"gatewayIP {parsed} is also cluster {other.cluster_id}'s"
            return Exclusion(cid, ExclusionReason.GATEWAY_IP_CONFLICT, msg)
        inside = next((c for c in other.cidrs if parsed in c), None)
        if inside is not None:
            msg = f"gatewayIP {parsed} is inside cluster {other.cluster_id}'s CIDR {inside}"
            return Exclusion(cid, ExclusionReason.GATEWAY_IP_CONFLICT, msg)
    return parsed


def _routable_cidrs(
    cid: str,
    wanted: Sequence[str],
    gateway_ips: Sequence[IPv4Address],
    local: LocalAddressing,
    accepted: Sequence[AcceptedRemote],
) -> tuple[list[IPv4Network], list[Exclusion]]:
    cidrs: list[IPv4Network] = []
    exclusions: list[Exclusion] = []
    endpoints = (*local.tunnel_endpoints, *gateway_ips, *(ip for a in accepted for ip in a.gateways))
    for text in wanted:
        try:
            # strict=False: Antrea's own docs show "10.10.1.1/16"; the host bits are dropped.
            parsed = ip_network(text, strict=False)
        except ValueError:
            exclusions.append(Exclusion(cid, ExclusionReason.INVALID_CIDR, f"{text!r} is not a CIDR", text))
            continue
        if not isinstance(parsed, IPv4Network):
            exclusions.append(Exclusion(cid, ExclusionReason.UNSUPPORTED_IP_FAMILY, f"{text} is not IPv4", text))
            continue
        if parsed in cidrs:
            continue
        reason = _collision(parsed, endpoints, local, accepted)
        if reason is not None:
            exclusions.append(Exclusion(cid, reason[0], reason[1], str(parsed)))
            continue
        cidrs.append(parsed)
    return cidrs, exclusions


def _collision(
    cidr: IPv4Network,
    endpoints: Sequence[IPv4Address],
    local: LocalAddressing,
    accepted: Sequence[AcceptedRemote],
) -> tuple[ExclusionReason, str] | None:
    for local_cidr, what in local.cidrs:
        if cidr.overlaps(local_cidr):
            return ExclusionReason.OVERLAPS_LOCAL_CIDR, f"{cidr} overlaps {what} {local_cidr}"
    for endpoint in endpoints:
        if endpoint in cidr:
            # Routing it would send the tunnel's own outer packets into the tunnel.
            return ExclusionReason.CONTAINS_TUNNEL_ENDPOINT, f"{cidr} contains tunnel endpoint {endpoint}"
    for other in accepted:
        for other_cidr in other.cidrs:
            if cidr.overlaps(other_cidr):
                msg = f"{cidr} overlaps cluster {other.cluster_id}'s CIDR {other_cidr}"
                return ExclusionReason.OVERLAPS_REMOTE_CIDR, msg
    return None
