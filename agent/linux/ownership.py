"""How the agent marks what it creates, so that it removes exactly that and nothing else.

* links: named by the config (``mc`` prefix) and tagged with an ``ifalias`` below;
* routes: only in the agent's own tables (agent.state.RouteTable), protocol ROUTE_PROTOCOL;
* policy rules: protocol ROUTE_PROTOCOL at the priorities of agent.state.RULE_PRIORITY;
* nexthop objects (active-active, agent.linux.spread): protocol ROUTE_PROTOCOL, IDs from spread.GROUP_ID;
* nftables: tables of its own, ``ip mchub`` and ``ip mchub_policy``, each replaced atomically as a whole;
* packet and conntrack marks: two bits, REPLY_MARK and RETURN_MARK (configurable as
  ``tunnel.replyMark`` and ``tunnel.returnMark``);
* neighbour/FDB entries: only on the agent's own tunnel device.
"""

from __future__ import annotations

from typing import Final

ROUTE_PROTOCOL: Final = 109
"""rtnetlink protocol number of our routes and rules (unassigned in /etc/iproute2/rt_protos)."""

ALIAS_TUNNEL: Final = "mchub:tunnel"
ALIAS_WIREGUARD: Final = "mchub:wireguard"
ALIAS_PREFIX: Final = "mchub:"

NFT_FAMILY: Final = "ip"
NFT_TABLE: Final = "mchub"
NFT_POLICY_TABLE: Final = "mchub_policy"
"""The Gateway's ClusterSet policy table (agent/linux/policy_nft.py), apart from ``mchub`` so
that Pod and policy churn never rewrites the tunnel's SNAT and reply marking."""

# Our devices carry no real address, but IPv4 reverse-path filtering drops every packet
# that arrives on an address-less device whenever rp_filter is on (the kernel's
# "last resort" case), and hosts often set conf.all.rp_filter. So each device gets one
# anchor address: link-local (never routed), scope host (never chosen as a source).
ANCHOR_ADDRESSES: Final = {ALIAS_TUNNEL: "169.254.109.1", ALIAS_WIREGUARD: "169.254.109.2"}

REPLY_MARK: Final = 0x2000
"""The bit (of the packet mark and of the conntrack mark) that sends a reply back into the tunnel.

On the Gateway, a connection that arrives through our tunnel or WireGuard device from a
remote Gateway IP gets this bit in its conntrack mark; on other Nodes, a forwarded
connection from a remote Gateway IP (the Gateway handed it over through the primary
CNI) gets it too. Reply-direction packets of such connections copy the bit into their
packet mark in prerouting, and the policy rule ``fwmark 0x2000/0x2000 lookup 28004``
(agent.state.RULE_PRIORITY) routes them to the remote Gateway through the tunnel. The
bit is cleared from the packet mark in postrouting, so no packet leaves with it (the
VXLAN device would otherwise route its outer packet with it, back into itself).
Connections local Pods start towards a remote Gateway's address never carry it and
take the underlay like any other traffic.

0x2000 because the neighbours each use their own bits: kube-proxy 0x4000 (masquerade)
and 0x8000 (drop), Calico 0xffff0000, Cilium 0x0f00 (0x0200 among them), Flannel and
Antrea none in the host's mark, WireGuard's conventional fwmark 51820 (0xca6c, which
has 0x2000 clear; our wireguard-go sets no fwmark at all). Only this bit is read or
written, in both marks, with ``|``/``&``; every other bit passes through untouched.
"""

RETURN_MARK: Final = 0x1000
"""The bit (of the packet mark and of the conntrack mark) that sends a reply straight back to
the remote Gateway its connection came from (agent.state.ArrivalReturn, table RETURN).

Set in the conntrack mark of a connection that arrives through our tunnel from a remote
Gateway on a Node that takes such traffic (a Gateway, or one retiring); copied into the packet
mark of its replies and cleared in postrouting, as REPLY_MARK is. 0x1000 for the reasons given
for REPLY_MARK: no neighbour listed there uses it.
"""
