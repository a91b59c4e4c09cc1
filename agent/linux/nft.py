"""The agent's nftables table (``table ip mchub``), rendered as nft JSON and applied atomically.

Contents: a ``nat postrouting`` chain that SNATs cross-cluster traffic leaving the
Gateway's tunnel to the Gateway IP (Antrea's Gateway behaviour; replies come back
addressed to it and conntrack undoes the SNAT) and, on other Nodes, binds it to its own
source address (agent.state.SnatRule says why), at srcnat - 5, ahead of the Node's
other NAT rules, since the first NAT binding of a connection is the one that holds; a ``forward`` chain clamping the
TCP MSS of SYNs entering our devices to the route MTU, because the tunnel's overhead
makes its MTU smaller than the Pods', and the reply marking (agent.state.ReplyMarking,
agent.linux.ownership.REPLY_MARK): a ``filter prerouting`` chain at mangle priority
(after conntrack, before DNAT/un-SNAT and the routing decision) that sets the bit in
the conntrack mark of connections arriving from a remote Gateway and copies it into
the packet mark of their replies, for the ``fwmark`` policy rule; and a ``filter
postrouting`` chain that clears the bit again from every packet's mark, because the
VXLAN device routes its outer packet with the inner packet's mark, which would lead
it back into the tunnel.

On a Node that takes what remote Gateways send it (agent.state.ArrivalReturn: a Gateway, or one
retiring), the same prerouting chain sets a second bit, RETURN_MARK, in the conntrack mark of
connections arriving through the tunnel from a remote Gateway's address, and copies it into their
replies' packet mark for table RETURN (straight back to the sender); the nat postrouting chain
masquerades such arrivals from the Gateways listed for it to the Node's own address as they leave
for the cluster, so their replies come back to this Node whichever Node answers.

On the Gateway of a globally addressed cluster, a ``nat prerouting`` chain at dstnat - 1
(before kube-proxy's DNAT, so the packet reaches kube-proxy as one for a Pod, which it leaves
alone) translates the global addresses of exported Pods to the Pods, through the map
``global_pods`` (agent.state.GlobalDnat). Replies are translated back by conntrack.

Idempotence: every rule carries the fingerprint of the whole rendered table as its
comment. If the live table has exactly the expected number of rules and all carry the
expected fingerprint, nothing is written; otherwise the table is deleted and rebuilt in
one ``nft -j -f -`` transaction, so no packet ever sees a half-written table.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from agent.errors import NftablesError
from agent.linux.netns import run_command
from agent.linux.ownership import NFT_FAMILY, NFT_TABLE
from agent.state import ArrivalReturn, DesiredDatapath, GlobalDnat, ReplyMarking

_SET = "remote_cidrs"
_GATEWAYS = "remote_gateways"
_GLOBAL_PODS = "global_pods"
_ARRIVALS = "arrival_gateways"
_MASQUERADED = "masqueraded_gateways"
_PRIO_MANGLE = -150
_PRIO_DSTNAT_FIRST = -101  # dstnat - 1: before kube-proxy's (and the CNI's) DNAT
# srcnat - 5: after the policy table tags packets with their Pod's identity (srcnat - 10,
# agent/linux/policy_nft.py), before iptables' and the CNI's nat POSTROUTING (srcnat).
_PRIO_SRCNAT_FIRST = 95
_PRIO_LAST = 300
_ALL_BITS = 0xFFFFFFFF


def render_table(desired: DesiredDatapath) -> list[dict[str, Any]] | None:
    """The nft JSON commands that create our table, or None when we want no table."""
    if (
        desired.snat is None
        and not desired.mss_clamp_interfaces
        and desired.reply_marking is None
        and desired.arrival_return is None
        and desired.global_dnat is None
    ):
        return None
    base = {"family": NFT_FAMILY, "table": NFT_TABLE}
    objects: list[dict[str, Any]] = []
    rules: list[dict[str, Any]] = []
    if desired.snat is not None or desired.arrival_return is not None:
        objects.append(_chain(base, "postrouting", "nat", "postrouting", _PRIO_SRCNAT_FIRST))
    if desired.reply_marking is not None or desired.arrival_return is not None:
        objects.append(_chain(base, "prerouting", "filter", "prerouting", _PRIO_MANGLE))
        objects.append(_chain(base, "unmark", "filter", "postrouting", _PRIO_LAST))
    if desired.snat is not None:
        snat = desired.snat
        elements = [{"prefix": {"addr": str(n.network_address), "len": n.prefixlen}} for n in snat.destinations]
        objects.append({"set": {**base, "name": _SET, "type": "ipv4_addr", "flags": ["interval"], "elem": elements}})
        to = str(snat.to_address) if snat.to_address is not None else {"payload": {"protocol": "ip", "field": "saddr"}}
        rules.append(
            {
                **base,
                "chain": "postrouting",
                "expr": [
                    _match({"meta": {"key": "oifname"}}, snat.out_interface),
                    _match({"payload": {"protocol": "ip", "field": "daddr"}}, f"@{_SET}"),
                    {"snat": {"addr": to}},
                ],
            }
        )
    if desired.mss_clamp_interfaces:
        objects.append(_chain(base, "forward", "filter", "forward", -150))
        names = sorted(desired.mss_clamp_interfaces)
        rules.append(
            {
                **base,
                "chain": "forward",
                "expr": [
                    _match({"meta": {"key": "oifname"}}, {"set": names} if len(names) > 1 else names[0]),
                    {"match": {"op": "in", "left": {"payload": {"protocol": "tcp", "field": "flags"}}, "right": "syn"}},
                    {
                        "mangle": {
                            "key": {"tcp option": {"name": "maxseg", "field": "size"}},
                            "value": {"rt": {"key": "mtu"}},
                        }
                    },
                ],
            }
        )
    if desired.reply_marking is not None:
        _reply_marking(base, desired.reply_marking, objects, rules)
    if desired.arrival_return is not None:
        _arrival_return(base, desired.arrival_return, objects, rules)
    if desired.global_dnat is not None:
        _global_dnat(base, desired.global_dnat, objects, rules)
    fingerprint = _fingerprint(objects, rules)
    commands: list[dict[str, Any]] = [{"add": {"table": {"family": NFT_FAMILY, "name": NFT_TABLE}}}]
    commands += [{"add": o} for o in objects]
    commands += [{"add": {"rule": {**r, "comment": fingerprint}}} for r in rules]
    return commands


def _reply_marking(
    base: dict[str, str], marking: ReplyMarking, objects: list[dict[str, Any]], rules: list[dict[str, Any]]
) -> None:
    bit, ct_mark = marking.mark, {"ct": {"key": "mark"}}
    the_set: dict[str, Any] = {**base, "name": _GATEWAYS, "type": "ipv4_addr"}
    if marking.remote_gateways:
        the_set["elem"] = [str(ip) for ip in sorted(marking.remote_gateways)]
    objects.append({"set": the_set})
    if marking.arrival_interfaces:
        names = sorted(marking.arrival_interfaces)
        arrival = _match({"meta": {"key": "iifname"}}, {"set": names} if len(names) > 1 else names[0])
    else:
        # Forwarded only: a connection from a remote Gateway's Node to this Node itself
        # (a NodePort, before kube-proxy's DNAT) came over the underlay and replies that way.
        arrival = {"match": {"op": "!=", "left": {"fib": {"result": "type", "flags": ["daddr"]}}, "right": "local"}}
    rules.append(
        {
            **base,
            "chain": "prerouting",
            "expr": [
                _match({"ct": {"key": "direction"}}, "original"),
                _match({"payload": {"protocol": "ip", "field": "saddr"}}, f"@{_GATEWAYS}"),
                arrival,
                {"mangle": {"key": ct_mark, "value": {"|": [ct_mark, bit]}}},
            ],
        }
    )
    _mark_replies(base, bit, rules)


def _mark_replies(base: dict[str, str], bit: int, rules: list[dict[str, Any]]) -> None:
    """Replies of connections with ``bit`` in their conntrack mark get it in their packet mark
    (prerouting, before the routing decision), and no packet leaves with it (postrouting)."""
    ct_mark, meta_mark = {"ct": {"key": "mark"}}, {"meta": {"key": "mark"}}
    rules.append(
        {
            **base,
            "chain": "prerouting",
            "expr": [
                _match({"ct": {"key": "direction"}}, "reply"),
                _match({"&": [ct_mark, bit]}, bit),
                {"mangle": {"key": meta_mark, "value": {"|": [meta_mark, bit]}}},
            ],
        }
    )
    rules.append(
        {
            **base,
            "chain": "unmark",
            "expr": [
                _match({"&": [meta_mark, bit]}, bit),
                {"mangle": {"key": meta_mark, "value": {"&": [meta_mark, _ALL_BITS ^ bit]}}},
            ],
        }
    )


def _arrival_return(
    base: dict[str, str], arrival: ArrivalReturn, objects: list[dict[str, Any]], rules: list[dict[str, Any]]
) -> None:
    bit, ct_mark = arrival.mark, {"ct": {"key": "mark"}}
    saddr = {"payload": {"protocol": "ip", "field": "saddr"}}
    tunnel_in = _match({"meta": {"key": "iifname"}}, arrival.tunnel_interface)
    for name, members in ((_ARRIVALS, arrival.senders), (_MASQUERADED, arrival.masquerade_from)):
        the_set: dict[str, Any] = {**base, "name": name, "type": "ipv4_addr"}
        if members:
            the_set["elem"] = [str(ip) for ip in sorted(members)]
        objects.append({"set": the_set})
    rules.append(
        {
            **base,
            "chain": "prerouting",
            "expr": [
                _match({"ct": {"key": "direction"}}, "original"),
                _match(saddr, f"@{_ARRIVALS}"),
                tunnel_in,
                {"mangle": {"key": ct_mark, "value": {"|": [ct_mark, bit]}}},
            ],
        }
    )
    _mark_replies(base, bit, rules)
    # Leaving for the cluster (not back into the tunnel): its reply comes back to this Node.
    rules.append(
        {
            **base,
            "chain": "postrouting",
            "expr": [
                tunnel_in,
                {"match": {"op": "!=", "left": {"meta": {"key": "oifname"}}, "right": arrival.tunnel_interface}},
                _match(saddr, f"@{_MASQUERADED}"),
                {"snat": {"addr": str(arrival.masquerade_to)}},
            ],
        }
    )


def _global_dnat(
    base: dict[str, str], dnat: GlobalDnat, objects: list[dict[str, Any]], rules: list[dict[str, Any]]
) -> None:
    the_map: dict[str, Any] = {**base, "name": _GLOBAL_PODS, "type": "ipv4_addr", "map": "ipv4_addr"}
    if dnat.mappings:
        the_map["elem"] = [[str(global_ip), str(pod_ip)] for global_ip, pod_ip in dnat.mappings]
    objects.append({"map": the_map})
    objects.append(_chain(base, "global_dnat", "nat", "prerouting", _PRIO_DSTNAT_FIRST))
    daddr = {"payload": {"protocol": "ip", "field": "daddr"}}
    translate = {"dnat": {"addr": {"map": {"key": daddr, "data": f"@{_GLOBAL_PODS}"}}}}
    rules.append({**base, "chain": "global_dnat", "expr": [translate]})


async def reconcile_nft(netns: str | None, desired: DesiredDatapath, changes: list[str]) -> None:
    """Make our table match ``desired`` (or absent)."""
    commands = render_table(desired)
    live = await list_table(netns, NFT_TABLE)
    if commands is None:
        if live is not None:
            await _run(netns, [{"delete": {"table": {"family": NFT_FAMILY, "name": NFT_TABLE}}}])
            changes.append(f"delete nft table {NFT_FAMILY} {NFT_TABLE}")
        return
    expected = [c["add"]["rule"]["comment"] for c in commands if "rule" in c["add"]]
    if live is not None and sorted(_live_rule_comments(live)) == sorted(expected):
        return
    table = {"table": {"family": NFT_FAMILY, "name": NFT_TABLE}}
    # add+delete makes the delete valid whether or not the table exists; all one transaction.
    await _run(netns, [{"add": table}, {"delete": table}, *commands])
    changes.append(f"write nft table {NFT_FAMILY} {NFT_TABLE} ({len(expected)} rules)")


async def remove_nft(netns: str | None, changes: list[str]) -> None:
    if await list_table(netns, NFT_TABLE) is not None:
        await _run(netns, [{"delete": {"table": {"family": NFT_FAMILY, "name": NFT_TABLE}}}])
        changes.append(f"delete nft table {NFT_FAMILY} {NFT_TABLE}")


async def list_table(netns: str | None, table: str) -> list[dict[str, Any]] | None:
    """The objects of the table ``ip <table>`` as ``nft -j`` lists them; None when there is no such table."""
    result = await run_command(netns, ["nft", "-j", "list", "table", NFT_FAMILY, table])
    if not result.ok:
        if b"No such file or directory" in result.stderr:
            return None
        raise NftablesError(result.describe())
    try:
        listed: list[dict[str, Any]] = json.loads(result.stdout)["nftables"]
    except (ValueError, KeyError) as err:
        raise NftablesError(f"unreadable nft -j output: {err}") from err
    return listed


def _live_rule_comments(listed: list[dict[str, Any]]) -> list[str]:
    return [str(o["rule"].get("comment")) for o in listed if "rule" in o]


async def _run(netns: str | None, commands: list[dict[str, Any]]) -> None:
    payload = json.dumps({"nftables": [{"metainfo": {"json_schema_version": 1}}, *commands]}).encode()
    result = await run_command(netns, ["nft", "-j", "-f", "-"], stdin=payload)
    if not result.ok:
        raise NftablesError(result.describe())


def _chain(base: dict[str, str], name: str, kind: str, hook: str, prio: int) -> dict[str, Any]:
    return {"chain": {**base, "name": name, "type": kind, "hook": hook, "prio": prio, "policy": "accept"}}


def _match(left: dict[str, Any], right: Any) -> dict[str, Any]:
    return {"match": {"op": "==", "left": left, "right": right}}


def _fingerprint(objects: list[dict[str, Any]], rules: list[dict[str, Any]]) -> str:
    digest = hashlib.sha256(json.dumps([objects, rules], sort_keys=True).encode()).hexdigest()
    return f"mchub:{digest[:16]}"
