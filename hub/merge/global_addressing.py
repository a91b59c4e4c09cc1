"""Global addressing of members whose ranges overlap (pure).

A ClusterSet may have a global CIDR (hub flag ``--global-cidr``). The hub gives every member a
block of it (``--global-block-prefix`` long, the lowest free one, kept for the member's life),
and decides from the members' ClusterInfo exports which members are *globally addressed*: those
whose Service or Pod CIDRs overlap another member's. Everyone reaches a globally addressed
member only through its block (its exported Services and Pods get addresses from it, its
Gateway translates them back, and its own cross-cluster traffic leaves SNATed to the block's
first address); a member whose ranges are distinct keeps direct routing. The verdicts are
stamped into every ClusterInfo import (hub.merge.cluster_info), so every member and agent of
the ClusterSet agrees on them.

A global CIDR that overlaps a member's own ranges cannot be routed by that member; then nobody
is globally addressed, and the leader's ClusterSet says why (``report``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from ipaddress import IPv4Network, ip_network

from mcapi.mchub.v1 import common_area_pb2 as pb

DEFAULT_BLOCK_PREFIX = 20
# A block needs the egress address and at least one more (network and broadcast addresses aside).
MAX_BLOCK_PREFIX = 29


class GlobalCIDRError(ValueError):
    """A global CIDR (or block size) the hub cannot allocate from."""


@dataclass(frozen=True)
class GlobalCIDR:
    """The ClusterSet's global CIDR and the size of the block each member gets."""

    network: IPv4Network
    block_prefix: int = DEFAULT_BLOCK_PREFIX

    @classmethod
    def parse(cls, text: str, block_prefix: int = DEFAULT_BLOCK_PREFIX) -> GlobalCIDR | None:
        """None for "" (no global addressing); GlobalCIDRError for anything unusable."""
        if not text.strip():
            return None
        try:
            network = ip_network(text.strip(), strict=True)
        except ValueError as err:
            raise GlobalCIDRError(f"global CIDR {text!r} is not a network address with a prefix: {err}") from None
        if not isinstance(network, IPv4Network):
            raise GlobalCIDRError(f"global CIDR {text!r} is not IPv4; only IPv4 is supported")
        if not network.prefixlen <= block_prefix <= MAX_BLOCK_PREFIX:
            raise GlobalCIDRError(
                f"global block prefix /{block_prefix} must be within /{network.prefixlen} (the global CIDR's) "
                f"and /{MAX_BLOCK_PREFIX}"
            )
        return cls(network, block_prefix)

    def __str__(self) -> str:
        return str(self.network)

    def holds(self, block: str) -> bool:
        """Whether ``block`` is one of this CIDR's blocks."""
        try:
            parsed = ip_network(block, strict=True)
        except ValueError:
            return False
        return (
            isinstance(parsed, IPv4Network) and parsed.prefixlen == self.block_prefix and parsed.subnet_of(self.network)
        )

    def allocate(self, current: str, taken: Iterable[str]) -> str:
        """The member's block: ``current`` while it is one of ours and no one else's, else the
        lowest free block; "" when every block is taken."""
        others = set(taken)
        if current and self.holds(current) and current not in others:
            return current
        for block in self.network.subnets(new_prefix=self.block_prefix):
            if str(block) not in others:
                return str(block)
        return ""


@dataclass(frozen=True)
class Addressing:
    """What the hub stamps into a member's ClusterInfo import and tells it in AnnounceResponse."""

    global_cidr: str = ""
    globally_addressed: bool = False


@dataclass(frozen=True)
class AddressingReport:
    """The verdicts, and what the leader's ClusterSet says about them."""

    by_cluster: dict[str, Addressing] = field(default_factory=dict)
    overlaps: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Members whose ranges overlap another's: cluster ID -> the others, sorted."""
    conflicts: tuple[str, ...] = ()
    """Sentences naming each member range the global CIDR overlaps (then nobody is globally addressed)."""
    without_block: tuple[str, ...] = ()
    """Overlapping members left direct because no block was left for them."""


def member_ranges(info: pb.ClusterInfo) -> list[tuple[str, IPv4Network]]:
    """A ClusterInfo's IPv4 ranges, labelled; ranges that do not parse are skipped (the hub
    refuses such exports, and an IPv6 range cannot overlap an IPv4 one)."""
    found: list[tuple[str, IPv4Network]] = []
    for what, texts in (("Service CIDR", [info.service_cidr]), ("Pod CIDR", list(info.pod_cidrs))):
        for text in texts:
            try:
                network = ip_network(text, strict=False) if text else None
            except ValueError:
                continue
            if isinstance(network, IPv4Network):
                found.append((what, network))
    return found


def _overlaps(infos: Mapping[str, pb.ClusterInfo]) -> dict[str, tuple[str, ...]]:
    ranges = {cid: [n for _, n in member_ranges(info)] for cid, info in infos.items()}
    found: dict[str, set[str]] = {}
    ordered = sorted(ranges)
    for i, a in enumerate(ordered):
        for b in ordered[i + 1 :]:
            if any(x.overlaps(y) for x in ranges[a] for y in ranges[b]):
                found.setdefault(a, set()).add(b)
                found.setdefault(b, set()).add(a)
    return {cid: tuple(sorted(others)) for cid, others in sorted(found.items())}


def _conflicts(infos: Mapping[str, pb.ClusterInfo], global_cidr: GlobalCIDR) -> tuple[str, ...]:
    found = []
    for cid, info in sorted(infos.items()):
        for what, network in member_ranges(info):
            if network.overlaps(global_cidr.network):
                found.append(f"cluster {cid}'s {what} {network} overlaps the global CIDR {global_cidr}")
    return tuple(found)


def report(
    infos: Mapping[str, pb.ClusterInfo], blocks: Mapping[str, str], global_cidr: GlobalCIDR | None
) -> AddressingReport:
    """Every member's addressing from the ClusterInfo exports (by cluster ID) and the blocks."""
    overlaps = _overlaps(infos)
    if global_cidr is None:
        return AddressingReport({}, overlaps)
    conflicts = _conflicts(infos, global_cidr)
    by_cluster: dict[str, Addressing] = {}
    without_block = []
    for cid, block in blocks.items():
        addressed = bool(block) and cid in overlaps and not conflicts
        by_cluster[cid] = Addressing(block, addressed)
    for cid in overlaps:
        if not blocks.get(cid):
            without_block.append(cid)
    return AddressingReport(by_cluster, overlaps, conflicts, tuple(sorted(without_block)))


def stamped(info: pb.ClusterInfo, addressing: Addressing | None) -> pb.ClusterInfo:
    """``info`` (a copy) as the hub imports it: with the member's block and verdict."""
    out = pb.ClusterInfo()
    out.CopyFrom(info)
    out.global_cidr = addressing.global_cidr if addressing else ""
    out.globally_addressed = addressing.globally_addressed if addressing else False
    return out
