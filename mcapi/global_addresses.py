"""A member's global addresses, as it records them for itself and its agents.

The hub gives every member a block of the ClusterSet's global CIDR and says whether the member
is globally addressed (its ranges overlap another member's). A globally addressed member gives
each exported Service (endpointIPType ClusterIP) one address of its block and each exported Pod
endpoint (PodIP, Headless) one; other members reach them only there. The first host address of
the block is the member's *egress* address: its Gateway SNATs the member's cross-cluster traffic
to it, so replies come back through the tunnel whatever the ranges.

The member writes all of it into the ConfigMap ``mchub-global-addresses`` of its Namespace: it
is the allocation record the member reads back when it starts (allocations survive restarts) and
what the agent on the Gateway reads (its egress address, and the Pod addresses it translates).
Keys, each readable with kubectl:

* ``globalCIDR``: the block ("" when none); ``globallyAddressed``: "true" or "false";
* ``egressIP``: the block's first host address, while globally addressed ("" otherwise);
* ``services``: one ``<namespace>/<name>=<global IP>`` per line;
* ``pods``: one ``<pod IP>=<global IP>`` per line.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from ipaddress import IPv4Address, IPv4Network, ip_address, ip_network

CONFIGMAP = "mchub-global-addresses"
KEY_BLOCK = "globalCIDR"
KEY_GLOBALLY_ADDRESSED = "globallyAddressed"
KEY_EGRESS_IP = "egressIP"
KEY_SERVICES = "services"
KEY_PODS = "pods"


def parse_block(text: str) -> IPv4Network | None:
    """The block as a network; None for "" or anything that is not an IPv4 network of >= 4 addresses."""
    try:
        network = ip_network(text.strip(), strict=True) if text.strip() else None
    except ValueError:
        return None
    return network if isinstance(network, IPv4Network) and network.num_addresses >= 4 else None


def egress_ip(block: IPv4Network) -> IPv4Address:
    """The member's egress address: the block's first host address."""
    return block.network_address + 1


def assignable(block: IPv4Network) -> Iterator[IPv4Address]:
    """The block's addresses for Services and Pods, lowest first: neither its network and
    broadcast addresses nor the egress address."""
    first, last = int(block.network_address) + 2, int(block.broadcast_address) - 1
    return (IPv4Address(n) for n in range(first, last + 1))


def _lines(entries: Mapping[str, str]) -> str:
    return "".join(f"{key}={value}\n" for key, value in sorted(entries.items()))


def _entries(text: str, *, keys_are_ips: bool) -> dict[str, str]:
    """``key=IPv4`` lines; lines that do not read so are skipped (the writer never makes them)."""
    found: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.strip().partition("=")
        if not sep or not _is_ipv4(value) or (keys_are_ips and not _is_ipv4(key)) or not key:
            continue
        found[key] = value
    return found


def _is_ipv4(text: str) -> bool:
    try:
        return isinstance(ip_address(text), IPv4Address)
    except ValueError:
        return False


@dataclass(frozen=True)
class GlobalAddresses:
    """One member's global addressing and allocations."""

    block: str = ""
    globally_addressed: bool = False
    services: Mapping[str, str] = field(default_factory=dict)
    """``<namespace>/<name>`` of an exported Service -> its global IP."""
    pods: Mapping[str, str] = field(default_factory=dict)
    """Pod IP of an exported endpoint -> its global IP."""

    @property
    def network(self) -> IPv4Network | None:
        return parse_block(self.block)

    @property
    def egress_ip(self) -> str:
        network = self.network
        return str(egress_ip(network)) if network is not None else ""

    def to_data(self) -> dict[str, str]:
        return {
            KEY_BLOCK: self.block,
            KEY_GLOBALLY_ADDRESSED: "true" if self.globally_addressed else "false",
            KEY_EGRESS_IP: self.egress_ip if self.globally_addressed else "",
            KEY_SERVICES: _lines(self.services),
            KEY_PODS: _lines(self.pods),
        }

    @classmethod
    def from_data(cls, data: Mapping[str, object] | None) -> GlobalAddresses:
        """What a ConfigMap's data says; anything unreadable counts as absent."""
        data = data or {}
        block = str(data.get(KEY_BLOCK) or "")
        return cls(
            block=block if parse_block(block) is not None else "",
            globally_addressed=str(data.get(KEY_GLOBALLY_ADDRESSED, "")).strip().lower() == "true",
            services=_entries(str(data.get(KEY_SERVICES) or ""), keys_are_ips=False),
            pods=_entries(str(data.get(KEY_PODS) or ""), keys_are_ips=True),
        )
