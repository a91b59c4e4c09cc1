"""Deterministic MAC addresses of the VXLAN devices.

One VXLAN device per Node carries L3 packets to many peers: a route's next hop is the
peer's underlay IP (``onlink``), a permanent neighbour entry on the device maps that IP
to a MAC, and a permanent FDB entry maps the MAC to the peer's underlay IP (the outer
destination). The receiving VXLAN device accepts only frames addressed to its own MAC
(and drops frames whose source MAC is its own), so every sender must know the
receiver's MAC without asking it. Hence the MACs are derived from public facts:

* the active Gateway's device uses ``0e:67`` + its Gateway IP, which both remote
  Gateways (ClusterInfoImport) and local Nodes (Gateway CR) know;
* any other Node's device uses ``0e:6e`` + its InternalIP (nobody sends to it).

``0e`` is a locally administered unicast first octet; ``67``/``6e`` are 'g'/'n'.
When the Gateway moves, both Nodes' devices change MAC and the peers' entries follow.
"""

from __future__ import annotations

from ipaddress import IPv4Address

_GATEWAY_OUI = (0x0E, 0x67)
_NODE_OUI = (0x0E, 0x6E)


def gateway_tunnel_mac(gateway_ip: IPv4Address) -> str:
    """The MAC of the active Gateway's tunnel device, derived from its Gateway IP."""
    return _format(_GATEWAY_OUI, gateway_ip)


def node_tunnel_mac(internal_ip: IPv4Address) -> str:
    """The MAC of a non-Gateway Node's tunnel device, derived from its InternalIP."""
    return _format(_NODE_OUI, internal_ip)


def _format(prefix: tuple[int, int], ip: IPv4Address) -> str:
    return ":".join(f"{b:02x}" for b in (*prefix, *ip.packed))
