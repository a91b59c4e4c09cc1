"""Rendering of the agent's nftables table (no kernel needed)."""

from __future__ import annotations

import json
from ipaddress import IPv4Address, IPv4Network
from typing import Any

from agent.linux.nft import render_table
from agent.state import DesiredDatapath, ReplyMarking, Role, SnatRule


def test_no_table_is_wanted_for_an_empty_datapath() -> None:
    assert render_table(DesiredDatapath(role=Role.GATEWAY)) is None


def test_the_gateway_table_snats_to_the_gateway_ip_and_clamps_mss() -> None:
    desired = DesiredDatapath(
        role=Role.GATEWAY,
        snat=SnatRule("mc-tun0", (IPv4Network("10.2.0.0/16"),), IPv4Address("198.18.1.1")),
        mss_clamp_interfaces=("mc-tun0",),
    )
    commands = render_table(desired)
    assert commands is not None
    rules = [c["add"]["rule"] for c in commands if "rule" in c["add"]]
    assert [r["chain"] for r in rules] == ["postrouting", "forward"]
    assert {"snat": {"addr": "198.18.1.1"}} in rules[0]["expr"]
    (the_set,) = [c["add"]["set"] for c in commands if "set" in c["add"]]
    assert the_set["elem"] == [{"prefix": {"addr": "10.2.0.0", "len": 16}}]


def test_another_node_binds_tunnel_traffic_to_its_own_source_ahead_of_other_nat_rules() -> None:
    desired = DesiredDatapath(role=Role.MEMBER, snat=SnatRule("mc-tun0", (IPv4Network("10.2.0.0/16"),), None))
    commands = render_table(desired)
    assert commands is not None
    (chain,) = [c["add"]["chain"] for c in commands if "chain" in c["add"]]
    # srcnat - 5: the first NAT binding of a connection holds, so a later masquerade rule
    # (the Node's, the CNI's, iptables' at srcnat) leaves the Pod's address alone; and after
    # the policy table's tagging (srcnat - 10), which reads the Pod's address.
    assert (chain["type"], chain["hook"], chain["prio"]) == ("nat", "postrouting", 95)
    (rule,) = [c["add"]["rule"] for c in commands if "rule" in c["add"]]
    assert {"snat": {"addr": {"payload": {"protocol": "ip", "field": "saddr"}}}} in rule["expr"]


def test_every_rule_carries_the_same_fingerprint_which_changes_with_the_content() -> None:
    def fingerprints(to: str) -> set[str]:
        desired = DesiredDatapath(
            role=Role.GATEWAY,
            snat=SnatRule("mc-tun0", (IPv4Network("10.2.0.0/16"),), IPv4Address(to)),
            mss_clamp_interfaces=("mc-tun0",),
        )
        commands = render_table(desired)
        assert commands is not None
        return {c["add"]["rule"]["comment"] for c in commands if "rule" in c["add"]}

    first, second = fingerprints("198.18.1.1"), fingerprints("198.18.1.2")
    assert len(first) == 1
    assert first != second


def _marking_rules(marking: ReplyMarking) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    commands = render_table(DesiredDatapath(role=Role.GATEWAY, reply_marking=marking))
    assert commands is not None
    objects = [c["add"] for c in commands if "rule" not in c["add"]]
    return objects, [c["add"]["rule"] for c in commands if "rule" in c["add"]]


GATEWAYS = (IPv4Address("198.18.3.1"), IPv4Address("198.18.2.1"))
CT_MARK, META_MARK = {"ct": {"key": "mark"}}, {"meta": {"key": "mark"}}


def test_the_gateway_marks_connections_from_remote_gateways_arriving_through_the_tunnel() -> None:
    objects, rules = _marking_rules(ReplyMarking(0x2000, GATEWAYS, ("mc-tun0",)))
    (the_set,) = [o["set"] for o in objects if "set" in o]
    assert (the_set["name"], the_set["elem"]) == ("remote_gateways", ["198.18.2.1", "198.18.3.1"])
    chains = {o["chain"]["name"]: o["chain"] for o in objects if "chain" in o}
    assert (chains["prerouting"]["hook"], chains["prerouting"]["prio"]) == ("prerouting", -150)  # mangle
    assert chains["unmark"]["hook"] == "postrouting"
    assert [r["chain"] for r in rules] == ["prerouting", "prerouting", "unmark"]
    mark_connection, restore, clear = (r["expr"] for r in rules)
    assert {"match": {"op": "==", "left": {"meta": {"key": "iifname"}}, "right": "mc-tun0"}} in mark_connection
    assert {"match": {"op": "==", "left": {"ct": {"key": "direction"}}, "right": "original"}} in mark_connection
    assert {
        "match": {"op": "==", "left": {"payload": {"protocol": "ip", "field": "saddr"}}, "right": "@remote_gateways"}
    } in mark_connection
    assert mark_connection[-1] == {"mangle": {"key": CT_MARK, "value": {"|": [CT_MARK, 0x2000]}}}
    # Only replies carry the mark into routing (``fwmark 0x2000/0x2000 lookup 28004``)...
    assert {"match": {"op": "==", "left": {"ct": {"key": "direction"}}, "right": "reply"}} in restore
    assert {"match": {"op": "==", "left": {"&": [CT_MARK, 0x2000]}, "right": 0x2000}} in restore
    assert restore[-1] == {"mangle": {"key": META_MARK, "value": {"|": [META_MARK, 0x2000]}}}
    # ...and no packet leaves with it, only our bit cleared.
    assert clear[-1] == {"mangle": {"key": META_MARK, "value": {"&": [META_MARK, 0xFFFFDFFF]}}}


def test_the_wireguard_gateway_marks_what_arrives_through_wireguard() -> None:
    _, rules = _marking_rules(ReplyMarking(0x2000, GATEWAYS, ("mc-wg0",)))
    assert {"match": {"op": "==", "left": {"meta": {"key": "iifname"}}, "right": "mc-wg0"}} in rules[0]["expr"]


def test_other_nodes_mark_forwarded_connections_from_remote_gateways_whatever_their_device() -> None:
    _, rules = _marking_rules(ReplyMarking(0x2000, GATEWAYS))
    mark_connection = rules[0]["expr"]
    assert not any("iifname" in json.dumps(e) for e in mark_connection)
    assert {
        "match": {"op": "!=", "left": {"fib": {"result": "type", "flags": ["daddr"]}}, "right": "local"}
    } in mark_connection


def test_a_configured_reply_mark_is_the_only_bit_touched() -> None:
    _, rules = _marking_rules(ReplyMarking(0x10, GATEWAYS, ("mc-tun0",)))
    assert rules[0]["expr"][-1] == {"mangle": {"key": CT_MARK, "value": {"|": [CT_MARK, 0x10]}}}
    assert rules[2]["expr"][-1] == {"mangle": {"key": META_MARK, "value": {"&": [META_MARK, 0xFFFFFFEF]}}}
