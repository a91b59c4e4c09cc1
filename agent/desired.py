"""compute_desired: inputs + config -> the desired datapath of one Node. Pure.

Gateway Node (VXLAN): one route per remote CIDR via the remote Gateway IP through the
tunnel device, permanent neighbour/FDB entries for each remote Gateway, /32 routes to
the remote Gateway IPs for the replies of connections that came in through the tunnel
(marked, see agent.state.ReplyMarking), SNAT to the local Gateway IP.
Gateway Node (WireGuard): the same routes through the WireGuard device, whose peers
are the remote Gateways (allowed IPs: their CIDRs and Gateway IP, which is the inner
source of SNATed traffic); the VXLAN device stays for the local Nodes' tunnels.
Other Nodes: the remote CIDRs via the local Gateway's internalIP through the tunnel
device, and the remote Gateway IPs the same way for the replies of connections from
them (which the Gateway handed over through the primary CNI); no SNAT (the Gateway
does it).

Overlapping ranges (hub.merge.global_addressing): a globally addressed remote is routed by
its global block instead of its CIDRs (agent.remotes). When the local cluster is globally
addressed, its Gateway SNATs to its egress address (the block's first host address) instead of
the Gateway IP, so replies come back through the tunnel whatever the ranges, and translates
its exported Pods' global addresses to the Pods (GlobalDnat).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace
from ipaddress import IPv4Address, IPv4Network, collapse_addresses, ip_address, ip_network

from agent.config import AgentConfig
from agent.errors import InvalidInputsError
from agent.inputs import AgentInputs
from agent.policy.state import PolicyDatapath
from agent.remotes import AcceptedRemote, LocalAddressing, select_remotes
from agent.state import (
    RULE_PRIORITY,
    DesiredDatapath,
    GlobalDnat,
    PolicyRule,
    ProbeTarget,
    ReplyMarking,
    Role,
    Route,
    RouteTable,
    SnatRule,
    TunnelDevice,
    TunnelPeer,
    WireGuardDevice,
    WireGuardPeer,
)
from agent.tunnel_mac import gateway_tunnel_mac, node_tunnel_mac
from mcapi.global_addresses import egress_ip, parse_block


def _rules(reply_mark: int) -> tuple[PolicyRule, ...]:
    return (
        PolicyRule(RULE_PRIORITY[RouteTable.REPLY], RouteTable.REPLY, fwmark=reply_mark),
        PolicyRule(RULE_PRIORITY[RouteTable.REMOTE], RouteTable.REMOTE),
    )


def compute_desired(inputs: AgentInputs, config: AgentConfig) -> DesiredDatapath:
    """The datapath this Node should have. Raises InvalidInputsError on bad local inputs."""
    if not config.enable_gateway:
        return DesiredDatapath(role=Role.DISABLED)
    if inputs.gateway is None:
        return DesiredDatapath(role=Role.NO_GATEWAY)
    node_ip = _local_ip(inputs.node.internal_ip, f"Node {inputs.node.name} internalIP")
    gateway_ip = _local_ip(inputs.gateway.gateway_ip, "Gateway gatewayIP")
    gateway_internal_ip = _local_ip(inputs.gateway.internal_ip, "Gateway internalIP")
    is_gateway = inputs.gateway.node_name == inputs.node.name
    role = Role.GATEWAY if is_gateway else Role.MEMBER
    use_wireguard = config.wireguard_enabled
    if use_wireguard and is_gateway and not inputs.wireguard_public_key:
        raise InvalidInputsError("trafficEncryptionMode is wireGuard but this Node has no WireGuard key")

    local = LocalAddressing(
        cluster_id=inputs.cluster.cluster_id,
        cidrs=_local_cidrs(inputs),
        tunnel_endpoints=tuple(dict.fromkeys((node_ip, gateway_ip, gateway_internal_ip))),
        wireguard_public_key=inputs.wireguard_public_key,
    )
    accepted, exclusions = select_remotes(
        inputs.remotes,
        local,
        pod_to_pod=config.enable_pod_to_pod_connectivity,
        # Other Nodes never talk WireGuard; only the Gateway needs the peers' keys.
        require_wireguard_key=use_wireguard and is_gateway,
    )
    if not accepted:
        return DesiredDatapath(role=role, exclusions=tuple(exclusions))

    own_mac = gateway_tunnel_mac(gateway_ip) if is_gateway else node_tunnel_mac(node_ip)
    tunnel = TunnelDevice(
        config.tunnel.interface, config.tunnel.vni, config.tunnel.port, own_mac, node_ip, config.tunnel.mtu
    )
    mark, remote_gateways = config.tunnel.reply_mark, tuple(sorted(r.gateway_ip for r in accepted))
    common = DesiredDatapath(
        role=role,
        tunnel=tunnel,
        rules=_rules(mark),
        remote_clusters=tuple(r.cluster_id for r in accepted),
        exclusions=tuple(exclusions),
    )
    if not is_gateway:
        # A candidate that is not the Gateway probes it (its internalIP), for the member to replace
        # it as soon as it stops answering (mcapi.gateway_nodes); keyed by our own cluster ID.
        local_probe = (ProbeTarget(inputs.cluster.cluster_id, gateway_internal_ip, by_kernel=True),)
        return replace(
            common,
            probe_targets=local_probe if inputs.node.gateway_candidate else (),
            tunnel_peers=(TunnelPeer(gateway_internal_ip, gateway_tunnel_mac(gateway_ip)),),
            routes=_routes(accepted, tunnel.name, via=lambda _r: gateway_internal_ip),
            # From any device: the Gateway hands cross-cluster traffic over through the primary CNI.
            reply_marking=ReplyMarking(mark, remote_gateways),
            mss_clamp_interfaces=(tunnel.name,),
            snat=_snat(accepted, tunnel.name, None),
        )
    probes = tuple(ProbeTarget(r.cluster_id, r.gateway_ip) for r in accepted)
    block = _local_block(inputs)
    # A globally addressed cluster's traffic leaves as its egress address: its own ranges are
    # not unique in the ClusterSet, its global block is (and is routed back to this Gateway).
    source = egress_ip(block) if block is not None else gateway_ip
    common = replace(common, global_dnat=_global_dnat(inputs, block))
    if use_wireguard:
        wg = config.wireguard
        device = WireGuardDevice(wg.interface, wg.port, tuple(_wireguard_peer(r, wg.port) for r in accepted))
        return replace(
            common,
            wireguard=device,
            routes=_routes(accepted, wg.interface, via=lambda _r: None),
            snat=_snat(accepted, wg.interface, source),
            reply_marking=ReplyMarking(mark, remote_gateways, (wg.interface,)),
            mss_clamp_interfaces=(tunnel.name, wg.interface),
            probe_targets=probes,
        )
    return replace(
        common,
        policy=_policy(inputs, config, remote_gateways),
        tunnel_peers=tuple(TunnelPeer(r.gateway_ip, gateway_tunnel_mac(r.gateway_ip)) for r in accepted),
        routes=_routes(accepted, tunnel.name, via=lambda r: r.gateway_ip),
        snat=_snat(accepted, tunnel.name, source),
        reply_marking=ReplyMarking(mark, remote_gateways, (tunnel.name,)),
        mss_clamp_interfaces=(tunnel.name,),
        probe_targets=probes,
    )


def _policy(
    inputs: AgentInputs, config: AgentConfig, remote_gateways: tuple[IPv4Address, ...]
) -> PolicyDatapath | None:
    """Only the VXLAN Gateway: identities ride in the VNI between Gateways, which WireGuard
    does not have, and every cross-cluster packet passes the active Gateway."""
    compiled = inputs.policy
    if not config.enable_stretched_network_policy or compiled is None:
        return None
    tunnel = config.tunnel
    return PolicyDatapath(
        tunnel_interface=tunnel.interface,
        tunnel_port=tunnel.port,
        tunnel_vni=tunnel.vni,
        remote_gateways=remote_gateways,
        pod_identities=compiled.pod_identities,
        identity_ids=compiled.identity_ids,
        ingress=compiled.ingress,
        egress=compiled.egress,
    )


def _routes(
    accepted: Sequence[AcceptedRemote],
    device: str,
    via: Callable[[AcceptedRemote], IPv4Address | None],
) -> tuple[Route, ...]:
    routes: list[Route] = []
    for remote in accepted:
        hop = via(remote)
        routes.extend(Route(cidr, RouteTable.REMOTE, device, hop) for cidr in remote.cidrs)
        routes.append(Route(IPv4Network(remote.gateway_ip), RouteTable.REPLY, device, hop))
    return tuple(routes)


def _snat(accepted: Iterable[AcceptedRemote], device: str, to: IPv4Address | None) -> SnatRule:
    # Collapsed because an nftables interval set refuses overlapping elements.
    destinations = tuple(collapse_addresses(c for r in accepted for c in r.cidrs))
    return SnatRule(device, destinations, to)


def _wireguard_peer(remote: AcceptedRemote, port: int) -> WireGuardPeer:
    assert remote.wireguard_public_key is not None  # select_remotes required it
    allowed = tuple(collapse_addresses([*remote.cidrs, IPv4Network(remote.gateway_ip)]))
    return WireGuardPeer(remote.wireguard_public_key, remote.gateway_ip, port, allowed)


def _local_ip(text: str, what: str) -> IPv4Address:
    try:
        parsed = ip_address(text)
    except ValueError as err:
        raise InvalidInputsError(f"{what} {text!r} is not an IP address") from err
    if not isinstance(parsed, IPv4Address):
        raise InvalidInputsError(f"{what} {text} is not IPv4; only IPv4 Gateways are supported")
    return parsed


def _local_block(inputs: AgentInputs) -> IPv4Network | None:
    """The local global block while the cluster is globally addressed."""
    text = inputs.cluster.global_cidr
    if text is None:
        return None
    block = parse_block(text)
    if block is None:
        raise InvalidInputsError(f"local global CIDR {text!r} is not an IPv4 network of at least 4 addresses")
    return block


def _global_dnat(inputs: AgentInputs, block: IPv4Network | None) -> GlobalDnat | None:
    if block is None or not inputs.cluster.global_pods:
        return None
    mappings = []
    for global_text, pod_text in inputs.cluster.global_pods:
        global_ip = _local_ip(global_text, "global Pod address")
        pod_ip = _local_ip(pod_text, f"Pod address of {global_ip}")
        if global_ip not in block:
            raise InvalidInputsError(f"global Pod address {global_ip} is outside the local global CIDR {block}")
        mappings.append((global_ip, pod_ip))
    return GlobalDnat(tuple(sorted(mappings)))


def _local_cidrs(inputs: AgentInputs) -> tuple[tuple[IPv4Network, str], ...]:
    found: list[tuple[IPv4Network, str]] = []
    labelled = [(inputs.cluster.service_cidr, "local Service CIDR")] if inputs.cluster.service_cidr else []
    labelled += [(inputs.cluster.global_cidr, "local global CIDR")] if inputs.cluster.global_cidr else []
    labelled += [(c, "local Pod CIDR") for c in inputs.cluster.pod_cidrs]
    labelled += [(c, f"Node {inputs.node.name} Pod CIDR") for c in inputs.node.pod_cidrs]
    for text, what in labelled:
        if text is None:
            continue
        try:
            parsed = ip_network(text, strict=False)
        except ValueError as err:
            raise InvalidInputsError(f"{what} {text!r} is not a CIDR") from err
        if isinstance(parsed, IPv4Network):  # an IPv6 local range cannot collide with IPv4 routes
            found.append((parsed, what))
    return tuple(found)
