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

Active-active (``gatewayMode``, AgentInputs.active_active; not with WireGuard): every Gateway CR
is a Gateway. Other Nodes spread the remote CIDRs over them (SpreadRoutes); each Gateway sends
to the remote Gateway it is paired with (agent.pairing) and SNATs to its own gatewayIP, even
when globally addressed; replies to a remote Gateway (or a one-Gateway remote's egress address)
go back through the local Gateway that remote Gateway is paired with.

Arrivals (agent.state.ArrivalReturn): on a Gateway, replies of what arrived through its own
tunnel go straight back to the sender, and an arrival the cluster's Nodes would answer through
another local Gateway (the two ends' Gateway sets differ for a moment) is masqueraded to this
Node's address. A Node that stopped being a Gateway while it runs retires (``retiring``): for
``tunnel.retireSeconds`` it sends as other Nodes do and still takes, masqueraded, what remote
Gateways send it before they learn of the change.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from ipaddress import IPv4Address, IPv4Network, collapse_addresses, ip_address, ip_network

from agent.config import AgentConfig
from agent.errors import InvalidInputsError
from agent.inputs import ActiveGateway, AgentInputs
from agent.pairing import pair
from agent.policy.state import PolicyDatapath
from agent.remotes import AcceptedRemote, LocalAddressing, select_remotes
from agent.state import (
    RULE_PRIORITY,
    ArrivalReturn,
    DesiredDatapath,
    GlobalDnat,
    PolicyRule,
    ProbeTarget,
    ReplyMarking,
    Role,
    Route,
    RouteTable,
    SnatRule,
    SpreadRoutes,
    TunnelDevice,
    TunnelPeer,
    WireGuardDevice,
    WireGuardPeer,
)
from agent.tunnel_mac import gateway_tunnel_mac, node_tunnel_mac
from mcapi.global_addresses import egress_ip, parse_block


def _rules(reply_mark: int, spread: bool) -> tuple[PolicyRule, ...]:
    rules = (
        PolicyRule(RULE_PRIORITY[RouteTable.REPLY], RouteTable.REPLY, fwmark=reply_mark),
        PolicyRule(RULE_PRIORITY[RouteTable.REMOTE], RouteTable.REMOTE),
    )
    return (*rules, PolicyRule(RULE_PRIORITY[RouteTable.SPREAD], RouteTable.SPREAD)) if spread else rules


def _takes_arrivals(
    desired: DesiredDatapath,
    config: AgentConfig,
    accepted: Sequence[AcceptedRemote],
    node_ip: IPv4Address,
    masquerade_from: Callable[[IPv4Address], bool],
    *,
    wireguard: str | None = None,
) -> DesiredDatapath:
    """``desired`` taking what remote Gateways send this Node through its tunnel (the WireGuard
    device ``wireguard`` when given): each connection's replies go straight back (table RETURN),
    and those the cluster's Nodes would answer through another local Gateway (``masquerade_from``,
    given the remote Gateway) are masqueraded to ``node_ip`` (agent.state.ArrivalReturn)."""
    assert desired.tunnel is not None
    device = wireguard or desired.tunnel.name
    # A sender's address -> the remote Gateway it comes from: each Gateway from its gatewayIP, and
    # a globally addressed remote with one Gateway from its egress address too.
    senders = {ip: ip for r in accepted for ip in r.gateways}
    senders |= {r.egress_ip: r.gateway_ip for r in accepted if r.egress_ip is not None and len(r.gateways) == 1}
    arrival = ArrivalReturn(
        config.tunnel.return_mark,
        device,
        tuple(sorted(senders)),
        tuple(sorted(ip for ip, gateway in senders.items() if masquerade_from(gateway))),
        node_ip,
    )
    rule = PolicyRule(RULE_PRIORITY[RouteTable.RETURN], RouteTable.RETURN, fwmark=config.tunnel.return_mark)
    # A WireGuard device is point to point: its peers' allowed IPs choose the peer, not a next hop.
    back = tuple(
        Route(IPv4Network(ip), RouteTable.RETURN, device, None if wireguard else senders[ip]) for ip in sorted(senders)
    )
    return replace(desired, arrival_return=arrival, rules=(rule, *desired.rules), routes=(*desired.routes, *back))


Unreachable = tuple[str, IPv4Address]
"""A Gateway this Node's probes found unreachable: (cluster ID, the address it is probed at)."""


@dataclass(frozen=True)
class _LocalGateway:
    node_name: str
    gateway_ip: IPv4Address
    internal_ip: IPv4Address
    handing_over: bool = False


def compute_desired(
    inputs: AgentInputs,
    config: AgentConfig,
    unreachable: Collection[Unreachable] = (),
    retiring: IPv4Address | None = None,
) -> DesiredDatapath:
    """The datapath this Node should have. Raises InvalidInputsError on bad local inputs.

    ``unreachable``: the Gateways this Node's own probes found unreachable, as (cluster ID,
    address): a remote cluster's by gatewayIP, our own cluster's by internalIP. In active-active
    mode this Node stops using them at once, before any ClusterInfo or Gateway CR says so: a
    Gateway pairs with another of the remote's Gateways, and replies and spread flows leave
    through the local Gateways still answering. Every Node of an active-active cluster probes
    its own cluster's Gateways, so when one fails the remote's Nodes reach the same verdict and
    both ends re-pair alike (agent.pairing). A verdict only one end reaches (its probes lost on
    one path) is not shared: the flows it moves arrive at a Gateway the other end's Nodes do not
    pair them with, which masquerades them so their replies still come back to it (below). A set
    is never emptied (when none answers, all
    stay, as without verdicts), so a single Gateway stays in use.

    ``retiring``: the gatewayIP this Node had as a Gateway until a moment ago. It sends as any
    other Node, and still takes what remote Gateways send it, through its VXLAN tunnel or its
    WireGuard device (Role.RETIRING):
    they learn of the change through the hub after this cluster's Nodes have.
    """
    if not config.enable_gateway:
        return DesiredDatapath(role=Role.DISABLED)
    use_wireguard = config.wireguard_enabled
    # Active-active needs one WireGuard key per Gateway in the ClusterInfo: WireGuard stays single.
    spread = inputs.active_active and not use_wireguard
    gateways = _local_gateways(inputs.carrying_gateways(wireguard=use_wireguard))
    if not gateways:
        return DesiredDatapath(role=Role.NO_GATEWAY)
    own_cluster = inputs.cluster.cluster_id
    # The local Gateways this Node sends through; every one of them is still probed and peered.
    answering = tuple(g for g in gateways if (own_cluster, g.internal_ip) not in unreachable) or gateways
    node_ip = _local_ip(inputs.node.internal_ip, f"Node {inputs.node.name} internalIP")
    me = next((g for g in gateways if g.node_name == inputs.node.name), None)
    role = Role.GATEWAY if me is not None else Role.MEMBER
    if use_wireguard and me is not None and not inputs.wireguard_public_key:
        raise InvalidInputsError("trafficEncryptionMode is wireGuard but this Node has no WireGuard key")

    endpoints = [node_ip, *(ip for g in gateways for ip in (g.gateway_ip, g.internal_ip))]
    local = LocalAddressing(
        cluster_id=inputs.cluster.cluster_id,
        cidrs=_local_cidrs(inputs),
        tunnel_endpoints=tuple(dict.fromkeys(endpoints)),
        wireguard_public_key=inputs.wireguard_public_key,
    )
    accepted, exclusions = select_remotes(
        inputs.remotes,
        local,
        pod_to_pod=config.enable_pod_to_pod_connectivity,
        # Other Nodes never talk WireGuard; only the Gateway needs the peers' keys.
        require_wireguard_key=use_wireguard and me is not None,
    )
    if not accepted:
        return DesiredDatapath(role=role, exclusions=tuple(exclusions))

    own_mac = gateway_tunnel_mac(me.gateway_ip) if me is not None else node_tunnel_mac(node_ip)
    tunnel = TunnelDevice(
        config.tunnel.interface, config.tunnel.vni, config.tunnel.port, own_mac, node_ip, config.tunnel.mtu
    )
    mark = config.tunnel.reply_mark
    remote_gateways = tuple(sorted(ip for r in accepted for ip in r.gateways))
    remote_peers = tuple(TunnelPeer(ip, gateway_tunnel_mac(ip)) for ip in remote_gateways)
    local_gateway_ips = tuple(g.gateway_ip for g in answering)
    by_gateway_ip = {g.gateway_ip: g for g in answering}

    def reply_hop(remote_gateway: IPv4Address) -> _LocalGateway:
        """The local Gateway that the remote Gateway sends to, and so its replies go back through."""
        return by_gateway_ip[pair(remote_gateway, local_gateway_ips)]

    common = DesiredDatapath(
        role=role,
        tunnel=tunnel,
        rules=_rules(mark, spread),
        remote_clusters=tuple(r.cluster_id for r in accepted),
        exclusions=tuple(exclusions),
    )
    local_peers = tuple(TunnelPeer(g.internal_ip, gateway_tunnel_mac(g.gateway_ip)) for g in gateways if g is not me)
    if me is None:
        # A candidate that is not a Gateway probes them (their internalIPs), for the member to
        # replace one as soon as it stops answering (mcapi.gateway_nodes); keyed by our own cluster ID.
        # With active-active Gateways every Node does, to spread around a silent one at once.
        local_probes = tuple(ProbeTarget(inputs.cluster.cluster_id, g.internal_ip, by_kernel=True) for g in gateways)
        member = replace(
            common,
            probe_targets=local_probes if inputs.node.gateway_candidate or spread else (),
            tunnel_peers=local_peers,
            routes=_reply_routes(accepted, tunnel.name, lambda ip: reply_hop(ip).internal_ip),
            # From any device: the Gateway hands cross-cluster traffic over through the primary CNI.
            reply_marking=ReplyMarking(mark, remote_gateways),
            mss_clamp_interfaces=(tunnel.name,),
            snat=_snat(accepted, tunnel.name, None),
        )
        if spread:
            hops = tuple(g.internal_ip for g in answering)
            egress = _egress_routes(accepted, tunnel.name, lambda ip: reply_hop(ip).internal_ip)
            member = replace(
                member,
                routes=(*egress, *member.routes),
                spread=SpreadRoutes(tunnel.name, hops, _destinations(accepted)),
            )
        else:
            only = gateways[0].internal_ip
            member = replace(member, routes=(*_remote_routes(accepted, tunnel.name, lambda _r: only), *member.routes))
        if retiring is None or retiring in {g.gateway_ip for g in gateways}:
            return member
        if use_wireguard:
            # Still the WireGuard peer remote Gateways know (its key is the one their ClusterInfo
            # has until the hub brings them the new one): every arrival is masqueraded.
            wg = config.wireguard
            member = replace(
                member,
                role=Role.RETIRING,
                wireguard=_wireguard_device(wg.interface, wg.port, accepted),
                mss_clamp_interfaces=(tunnel.name, wg.interface),
                global_dnat=_global_dnat(inputs, _local_block(inputs)),
            )
            return _takes_arrivals(member, config, accepted, node_ip, lambda _ip: True, wireguard=wg.interface)
        # Still the tunnel endpoint remote Gateways know, and its ClusterSet policy (which turns
        # their identity VNIs into ours): every arrival is masqueraded, as no Node pairs with it.
        member = replace(
            member,
            role=Role.RETIRING,
            tunnel=replace(tunnel, mac=gateway_tunnel_mac(retiring)),
            tunnel_peers=(*remote_peers, *local_peers),
            policy=_policy(inputs, config, remote_gateways),
            global_dnat=_global_dnat(inputs, _local_block(inputs)),
        )
        return _takes_arrivals(member, config, accepted, node_ip, lambda _ip: True)
    # The remote Gateway this one sends to (and is probed): the one it is paired with among those
    # answering; the others it found unreachable are probed on standby, to take them back.
    paired = {r.cluster_id: pair(me.gateway_ip, _answering(r, unreachable)) for r in accepted}
    probes = tuple(ProbeTarget(r.cluster_id, paired[r.cluster_id]) for r in accepted)
    probes += tuple(
        ProbeTarget(r.cluster_id, ip, standby=True)
        for r in accepted
        for ip in r.gateways
        if ip != paired[r.cluster_id] and (r.cluster_id, ip) in unreachable
    )
    if spread:  # the other local Gateways, by their kernels, as a candidate does
        probes += tuple(
            ProbeTarget(inputs.cluster.cluster_id, g.internal_ip, by_kernel=True) for g in gateways if g is not me
        )
    block = _local_block(inputs)
    # A globally addressed cluster's traffic leaves as its egress address: its own ranges are
    # not unique in the ClusterSet, its global block is (and is routed back to this Gateway).
    # Active-active Gateways each keep their own gatewayIP instead: one egress address would
    # bring every reply back through whichever Gateway the remote pairs with, not the sender.
    source = egress_ip(block) if block is not None and not spread else me.gateway_ip
    common = replace(
        common, global_dnat=_global_dnat(inputs, block), probe_targets=probes, reports_reachability=me is gateways[0]
    )
    if use_wireguard:
        wg = config.wireguard
        routes = _remote_routes(accepted, wg.interface, lambda _r: None)
        encrypted = replace(
            common,
            wireguard=_wireguard_device(wg.interface, wg.port, accepted),
            routes=(*routes, *_reply_routes(accepted, wg.interface, lambda _ip: None)),
            snat=_snat(accepted, wg.interface, source),
            reply_marking=ReplyMarking(mark, remote_gateways, (wg.interface,)),
            mss_clamp_interfaces=(tunnel.name, wg.interface),
        )
        # WireGuard Gateways are single-active: only a drain's handing over masquerades arrivals.
        return _takes_arrivals(
            encrypted, config, accepted, node_ip, lambda _ip: me.handing_over, wireguard=wg.interface
        )

    def reply_via(remote_gateway: IPv4Address) -> IPv4Address:
        # Straight back when the remote Gateway sends to us; else through the local one it sends to.
        hop = reply_hop(remote_gateway)
        return remote_gateway if hop is me else hop.internal_ip

    routes = _remote_routes(accepted, tunnel.name, lambda r: paired[r.cluster_id])
    if spread:
        routes += _egress_routes(accepted, tunnel.name, reply_via)
    gateway = replace(
        common,
        policy=_policy(inputs, config, remote_gateways),
        tunnel_peers=(*remote_peers, *local_peers),
        routes=(*routes, *_reply_routes(accepted, tunnel.name, reply_via)),
        snat=_snat(accepted, tunnel.name, source),
        # Active-active: a reply may also come from a Pod here whose request another local Gateway
        # handed over through the primary CNI, so from any device, as on other Nodes.
        reply_marking=ReplyMarking(mark, remote_gateways, () if spread else (tunnel.name,)),
        mss_clamp_interfaces=(tunnel.name,),
    )
    # Handing over (a drain), every arrival: the Gateway is about to move, and with it the replies.
    return _takes_arrivals(gateway, config, accepted, node_ip, lambda ip: me.handing_over or reply_hop(ip) is not me)


def _answering(remote: AcceptedRemote, unreachable: Collection[Unreachable]) -> tuple[IPv4Address, ...]:
    """The remote's Gateways this Node has no unreachable verdict on (all of them if none is left)."""
    return tuple(ip for ip in remote.gateways if (remote.cluster_id, ip) not in unreachable) or remote.gateways


def _local_gateways(gateways: Sequence[ActiveGateway]) -> tuple[_LocalGateway, ...]:
    """The Gateways' addresses, validated, by gatewayIP (the order every Node and cluster agrees on)."""
    found = [
        _LocalGateway(
            g.node_name,
            _local_ip(g.gateway_ip, f"Gateway {g.node_name} gatewayIP"),
            _local_ip(g.internal_ip, f"Gateway {g.node_name} internalIP"),
            g.handing_over,
        )
        for g in gateways
    ]
    return tuple(sorted(found, key=lambda g: g.gateway_ip))


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


def _remote_routes(
    accepted: Sequence[AcceptedRemote],
    device: str,
    via: Callable[[AcceptedRemote], IPv4Address | None],
) -> tuple[Route, ...]:
    return tuple(Route(cidr, RouteTable.REMOTE, device, via(remote)) for remote in accepted for cidr in remote.cidrs)


def _reply_routes(
    accepted: Sequence[AcceptedRemote],
    device: str,
    via: Callable[[IPv4Address], IPv4Address | None],
) -> tuple[Route, ...]:
    """A /32 to every remote Gateway in table REPLY, for the replies of connections from it."""
    ips = sorted({ip for remote in accepted for ip in remote.gateways})
    return tuple(Route(IPv4Network(ip), RouteTable.REPLY, device, via(ip)) for ip in ips)


def _egress_routes(
    accepted: Sequence[AcceptedRemote],
    device: str,
    via: Callable[[IPv4Address], IPv4Address | None],
) -> tuple[Route, ...]:
    """Active-active: replies to a globally addressed remote's egress address (its traffic's source
    while it has one Gateway) go back through the local Gateway that remote Gateway sends to, like
    replies to a Gateway IP (a /32 in table REMOTE, before the block's route)."""
    return tuple(
        Route(IPv4Network(r.egress_ip), RouteTable.REMOTE, device, via(r.gateway_ip))
        for r in accepted
        if r.egress_ip is not None and len(r.gateways) == 1
    )


def _destinations(accepted: Iterable[AcceptedRemote]) -> tuple[IPv4Network, ...]:
    return tuple(cidr for r in accepted for cidr in r.cidrs)


def _snat(accepted: Iterable[AcceptedRemote], device: str, to: IPv4Address | None) -> SnatRule:
    # Collapsed because an nftables interval set refuses overlapping elements.
    destinations = tuple(collapse_addresses(c for r in accepted for c in r.cidrs))
    return SnatRule(device, destinations, to)


def _wireguard_device(name: str, port: int, accepted: Sequence[AcceptedRemote]) -> WireGuardDevice:
    """The WireGuard device with a peer for every remote that published a key (a Node that is not
    the Gateway accepts remotes without one, for its own routes through the Gateway)."""
    return WireGuardDevice(name, port, tuple(_wireguard_peer(r, port) for r in accepted if r.wireguard_public_key))


def _wireguard_peer(remote: AcceptedRemote, port: int) -> WireGuardPeer:
    # A WireGuard cluster has one Gateway (the member keeps it single-active): its first.
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
