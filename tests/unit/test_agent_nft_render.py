"""Rendering of the agent's nftables table (no kernel needed)."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network

from agent.linux.nft import render_table
from agent.state import DesiredDatapath, Role, SnatRule


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
