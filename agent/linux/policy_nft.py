"""The Gateway's policy table ``ip mchub_policy``: label identities on the wire and the
ClusterSet-scoped rules, rendered as nft text and replaced atomically.

Why skb->priority carries the identity between the inner packet and its VXLAN packet:
the Gateway SNATs cross-cluster traffic to its Gateway IP, so by the time the VXLAN
device builds the outer packet the inner source Pod is gone; the identity must be taken
from the inner packet before SNAT and travel with the skb into the outer packet's OUTPUT
hook. Of what survives the VXLAN encapsulation and decapsulation in one namespace (the
kernel scrubs conntrack and the dst, not the mark or the priority), the packet mark is
what policy routing reads: the outer packet is routed with the inner packet's mark, so 24
bits of identity in it would meet every ``ip rule fwmark`` on the Node (ours, Cilium's,
...) and the primary CNI's mark bits (Calico's 0xffff0000, kube-proxy's 0xc000). The
priority is read by nothing but qdiscs, and is reset to the TOS's by ip_forward, which
the inner packet has already passed on the way out and passes only after our prerouting
verdict on the way in. tests/datapath/test_policy_identity_wire.py proves both directions.

Chains:

* ``tag`` (postrouting, priority 90: before the SNAT at 100): an inner packet leaving
  through the tunnel gets ``IDENTITY_TAG | id`` as its priority, by its source Pod IP.
* ``vni_out`` (output): the VXLAN packet to a remote Gateway gets the identity as its VNI
  (0: none), from the priority through a map, and its priority cleared. nft 1.0.6 cannot
  assign a meta key to a raw payload field directly; through a typed map it can.
* ``vni_in`` (prerouting, raw): a VXLAN packet from a remote Gateway has its VNI turned
  into the priority (a map again) and rewritten to the device's VNI, so the ordinary
  VXLAN device accepts it; the decapsulated packet keeps the priority.
* ``ingress`` (prerouting, -50: after kube-proxy's DNAT, so a Service's traffic shows its
  backend Pod): a new connection arriving through the tunnel walks the Tier chains.
* ``egress`` (forward): a new connection leaving through the tunnel walks the Tier chains.

A Tier chain holds its rules in order; Allow accepts, Drop drops, Reject answers (TCP
reset, else ICMP admin-prohibited), Pass returns to the next Tier; what no rule matches
is left alone. Sets are keyed by identity (classid values) and Pod IP (ingress); egress
destinations are ``address . protocol . port`` concatenations, so a rule to a Service meets
its ClusterIP and its backends on the Service's ports only, never a backend Pod's other ports.

Idempotence as agent/linux/nft.py: every rule's comment starts with the fingerprint of the
whole table; a live table with the same rules is left alone, otherwise it is deleted and
written again in one ``nft -f -`` transaction.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from typing import Any, NamedTuple

from agent.errors import NftablesError
from agent.linux.netns import run_command
from agent.linux.nft import list_table
from agent.linux.ownership import NFT_FAMILY, NFT_POLICY_TABLE
from agent.policy.model import Action, PortMatch
from agent.policy.state import (
    NO_IDENTITY_VNI,
    CompiledRule,
    IngressRule,
    PolicyDatapath,
    ServiceDestination,
    TierRules,
    tagged_priority,
)

_FINGERPRINT = "@FINGERPRINT@"
_PRIO_TAG = 90  # srcnat - 10
_PRIO_RAW = -300
_PRIO_INGRESS = -50  # dstnat + 50
_PRIO_FILTER = 0
_VNI = "@th,96,24"  # the VXLAN network identifier: UDP header (8 bytes) + flags (4)
_SERVICE_SET_TYPE = "type ipv4_addr . inet_proto . inet_service"
# A Service is an address with a protocol and a port (as Antrea matches toServices); the key is
# read after kube-proxy's DNAT, and ``th dport`` sits at the same offset for TCP, UDP and SCTP.
_SERVICE_KEY = "ip daddr . meta l4proto . th dport"
_VERDICT = {Action.ALLOW: "accept", Action.DROP: "drop", Action.REJECT: "jump reject_packet", Action.PASS: "return"}


def classid(priority: int) -> str:
    return f"{priority >> 16:x}:{priority & 0xFFFF:x}"


class RenderedTable(NamedTuple):
    """The nft text that creates the whole table, its number of rules and the fingerprint
    every rule's comment starts with (what the reconcile compares with the live table)."""

    text: str
    rules: int
    fingerprint: str


def render_policy_table(policy: PolicyDatapath) -> RenderedTable:
    out: list[str] = []
    rules = 0

    def rule(line: str, origin: str = "") -> None:
        nonlocal rules
        rules += 1
        comment = f"{_FINGERPRINT} {origin}".strip().replace('"', "'")[:120]
        out.append(f'\t\t{line} comment "{comment}"')

    tun, port = f'"{policy.tunnel_interface}"', policy.tunnel_port
    out.append(f"table {NFT_FAMILY} {NFT_POLICY_TABLE} {{")
    out += _named("set remote_gateways", "type ipv4_addr", [str(ip) for ip in policy.remote_gateways])
    out += _named(
        "map pod_identity",
        "type ipv4_addr : classid",
        [f"{ip} : {classid(tagged_priority(i))}" for ip, i in policy.pod_identities if i],
    )
    out += _named(
        "map identity_vni",
        f"typeof meta priority : {_VNI}",
        [f"{classid(tagged_priority(i))} : {i}" for i in policy.identity_ids],
    )
    out += _named(
        "map vni_identity",
        f"typeof {_VNI} : meta priority",
        [f"{i} : {classid(tagged_priority(i))}" for i in policy.identity_ids],
    )
    sets: list[str] = []
    tier_chains: list[str] = []

    out.append(_chain_head("tag", "postrouting", _PRIO_TAG))
    rule(f"oifname {tun} meta priority set ip saddr map @pod_identity")
    out.append("\t}")
    out.append(_chain_head("vni_out", "output", _PRIO_FILTER))
    to_remote = f"ip daddr @remote_gateways udp dport {port}"
    rule(f"{to_remote} {_VNI} set {NO_IDENTITY_VNI}")
    rule(f"{to_remote} {_VNI} set meta priority map @identity_vni meta priority set none")
    out.append("\t}")
    out.append(_chain_head("vni_in", "prerouting", _PRIO_RAW))
    from_remote = f"ip saddr @remote_gateways udp dport {port}"
    rule(f"{from_remote} meta priority set none")
    rule(f"{from_remote} meta priority set {_VNI} map @vni_identity")
    rule(f"{from_remote} {_VNI} set {policy.tunnel_vni}")
    out.append("\t}")
    directions: tuple[tuple[str, str, int, str, Sequence[TierRules[Any]]], ...] = (
        ("in", "prerouting", _PRIO_INGRESS, f"iifname {tun}", policy.ingress),
        ("eg", "forward", _PRIO_FILTER, f"oifname {tun}", policy.egress),
    )
    for direction, hook, prio, arrival, tiers in directions:
        names = _chain_names(direction, tiers)
        out.append(_chain_head("ingress" if direction == "in" else "egress", hook, prio))
        for tier, name in zip(tiers, names, strict=True):
            if tier.rules:
                rule(f"{arrival} ct state new jump {name}", f"tier {tier.tier}")
        out.append("\t}")
        for tier, name in zip(tiers, names, strict=True):
            if not tier.rules:
                continue
            chain = [f"\tchain {name} {{"]
            out_len = len(out)
            for index, compiled in enumerate(tier.rules):
                rule_sets, match = _rule_sets(f"{name}_{index}", compiled)
                sets += rule_sets
                for l4 in _l4_matches(compiled.ports):
                    rule(" ".join(p for p in (match, l4, _VERDICT[compiled.action]) if p), compiled.origin)
            tier_chains += chain + out[out_len:] + ["\t}"]
            del out[out_len:]
    out += sets + tier_chains
    out.append("\tchain reject_packet {")
    rule("meta l4proto tcp reject with tcp reset")
    rule("reject with icmp type admin-prohibited")
    out.append("\t}")
    out.append("}")
    body = "\n".join(out) + "\n"
    fingerprint = "mchub:" + hashlib.sha256(body.encode()).hexdigest()[:16]
    return RenderedTable(body.replace(_FINGERPRINT, fingerprint), rules, fingerprint)


def _named(head: str, kind: str, elements: Iterable[str]) -> list[str]:
    listed = list(elements)
    lines = [f"\t{head} {{", f"\t\t{kind}"]
    if listed:
        lines.append("\t\telements = { " + ", ".join(listed) + " }")
    return [*lines, "\t}"]


def _rule_sets(prefix: str, compiled: CompiledRule) -> tuple[list[str], str]:
    """The sets of one rule's sources and destinations (named ``<prefix>_src``, ``_dst``), and
    the match on them."""
    src, dst = f"{prefix}_src", f"{prefix}_dst"
    if isinstance(compiled, IngressRule):
        identities = [classid(tagged_priority(i)) for i in compiled.sources]
        sets = _named(f"set {src}", "type classid", identities)
        sets += _named(f"set {dst}", "type ipv4_addr", [str(a) for a in compiled.destinations])
        return sets, f"meta priority @{src} ip daddr @{dst}"
    sets = _named(f"set {src}", "type ipv4_addr", [str(a) for a in compiled.sources])
    sets += _named(f"set {dst}", _SERVICE_SET_TYPE, map(_service_element, compiled.destinations))
    return sets, f"ip saddr @{src} {_SERVICE_KEY} @{dst}"


def _service_element(destination: ServiceDestination) -> str:
    return f"{destination.address} . {destination.protocol} . {destination.port}"


def _chain_head(name: str, hook: str, prio: int) -> str:
    return f"\tchain {name} {{\n\t\ttype filter hook {hook} priority {prio}; policy accept;"


def _chain_names(direction: str, tiers: Sequence[TierRules[Any]]) -> list[str]:
    names: list[str] = []
    for tier in tiers:
        name = f"{direction}_" + re.sub(r"[^A-Za-z0-9_]", "_", tier.tier)
        while name in names:
            name += "_"
        names.append(name)
    return names


def _l4_matches(ports: tuple[PortMatch, ...]) -> list[str]:
    if not ports:
        return [""]
    found = []
    for port in ports:
        text = f"meta l4proto {port.protocol}"
        if port.port is not None:
            text += f" th dport {port.port}" + (
                f"-{port.end_port}" if port.end_port and port.end_port != port.port else ""
            )
        found.append(text)
    return found


async def reconcile_policy_nft(netns: str | None, policy: PolicyDatapath | None, changes: list[str]) -> None:
    """Make ``ip mchub_policy`` match ``policy`` (or absent)."""
    live = await _live_comments(netns)
    if policy is None:
        if live is not None:
            await _run(netns, f"delete table {NFT_FAMILY} {NFT_POLICY_TABLE}\n")
            changes.append(f"delete nft table {NFT_FAMILY} {NFT_POLICY_TABLE}")
        return
    text, count, fingerprint = render_policy_table(policy)
    if live is not None and len(live) == count and all(c.split(" ", 1)[0] == fingerprint for c in live):
        return
    # add + delete makes the delete valid whether or not the table exists; one transaction.
    head = f"table {NFT_FAMILY} {NFT_POLICY_TABLE}\ndelete table {NFT_FAMILY} {NFT_POLICY_TABLE}\n"
    await _run(netns, head + text)
    changes.append(f"write nft table {NFT_FAMILY} {NFT_POLICY_TABLE} ({count} rules)")


async def _live_comments(netns: str | None) -> list[str] | None:
    listed = await list_table(netns, NFT_POLICY_TABLE)
    return None if listed is None else [str(o["rule"].get("comment")) for o in listed if "rule" in o]


async def _run(netns: str | None, text: str) -> None:
    result = await run_command(netns, ["nft", "-f", "-"], stdin=text.encode())
    if not result.ok:
        raise NftablesError(result.describe())
