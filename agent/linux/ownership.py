"""How the agent marks what it creates, so that it removes exactly that and nothing else.

* links: named by the config (``mc`` prefix) and tagged with an ``ifalias`` below;
* routes: only in the agent's own tables (agent.state.RouteTable), protocol ROUTE_PROTOCOL;
* policy rules: protocol ROUTE_PROTOCOL at the priorities of agent.state.RULE_PRIORITY;
* nftables: one table of its own, ``ip mchub``, replaced atomically as a whole;
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

# Our devices carry no real address, but IPv4 reverse-path filtering drops every packet
# that arrives on an address-less device whenever rp_filter is on (the kernel's
# "last resort" case), and hosts often set conf.all.rp_filter. So each device gets one
# anchor address: link-local (never routed), scope host (never chosen as a source).
ANCHOR_ADDRESSES: Final = {ALIAS_TUNNEL: "169.254.109.1", ALIAS_WIREGUARD: "169.254.109.2"}
