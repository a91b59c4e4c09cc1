"""Rendering of the Gateway's policy table ``ip mchub_policy`` (no kernel needed)."""

from __future__ import annotations

from ipaddress import IPv4Address

from agent.linux.policy_nft import render_policy_table
from agent.policy.model import Action, PortMatch
from agent.policy.state import EgressRule, IngressRule, PolicyDatapath, ServiceDestination, TierRules

POD, OTHER = IPv4Address("10.1.1.10"), IPv4Address("10.1.2.10")


def datapath(*ingress: TierRules[IngressRule], egress: tuple[TierRules[EgressRule], ...] = ()) -> PolicyDatapath:
    return PolicyDatapath(
        tunnel_interface="mc-tun0",
        tunnel_port=4798,
        tunnel_vni=1702,
        remote_gateways=(IPv4Address("198.18.2.1"),),
        pod_identities=((POD, 7), (OTHER, 0x123456)),
        identity_ids=(7, 0x123456),
        ingress=ingress,
        egress=egress,
    )


def lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


def test_identities_are_tagged_before_snat_written_into_the_vni_and_recovered_on_arrival() -> None:
    text = render_policy_table(datapath()).text
    assert "10.1.1.10 : 6d00:7" in text and "10.1.2.10 : 6d12:3456" in text
    assert "6d00:7 : 7" in text and "7 : 6d00:7" in text
    body = lines(text)
    tag = next(line for line in body if "@pod_identity" in line and "meta priority set" in line)
    assert tag.startswith('oifname "mc-tun0" meta priority set ip saddr map @pod_identity')
    assert "type filter hook postrouting priority 90; policy accept;" in body
    assert any(line.startswith("ip daddr @remote_gateways udp dport 4798 @th,96,24 set 0 ") for line in body)
    assert any("@th,96,24 set meta priority map @identity_vni meta priority set none" in line for line in body)
    rx = [line for line in body if line.startswith("ip saddr @remote_gateways udp dport 4798")]
    assert [r.split(" comment")[0].split("4798 ")[1] for r in rx] == [
        "meta priority set none",
        "meta priority set @th,96,24 map @vni_identity",
        "@th,96,24 set 1702",
    ]


def test_tiers_are_chains_jumped_in_order_and_actions_become_verdicts() -> None:
    app = TierRules(
        "application",
        250,
        (
            IngressRule(Action.PASS, (7,), (POD,), (), "ACNP a ingress[0] r0"),
            IngressRule(
                Action.DROP, (7, 8), (POD,), (PortMatch("tcp", 80, 90), PortMatch("udp")), "ACNP a ingress[1] r1"
            ),
        ),
    )
    top = TierRules("emergency", 50, (IngressRule(Action.REJECT, (8,), (OTHER,), (), "ACNP b ingress[0] r0"),))
    body = lines(render_policy_table(datapath(top, app)).text)
    jumps = [line.split(" comment")[0] for line in body if line.startswith('iifname "mc-tun0" ct state new jump')]
    assert jumps == [
        'iifname "mc-tun0" ct state new jump in_emergency',
        'iifname "mc-tun0" ct state new jump in_application',
    ]
    rules = [line.split(" comment")[0] for line in body if line.startswith("meta priority @in_")]
    assert rules == [
        "meta priority @in_emergency_0_src ip daddr @in_emergency_0_dst jump reject_packet",
        "meta priority @in_application_0_src ip daddr @in_application_0_dst return",
        "meta priority @in_application_1_src ip daddr @in_application_1_dst meta l4proto tcp th dport 80-90 drop",
        "meta priority @in_application_1_src ip daddr @in_application_1_dst meta l4proto udp drop",
    ]


def test_egress_rules_match_pod_sources_and_service_address_protocol_and_port_leaving_through_the_tunnel() -> None:
    services = (
        ServiceDestination(OTHER, "tcp", 8080),
        ServiceDestination(IPv4Address("10.96.0.9"), "udp", 53),
        ServiceDestination(IPv4Address("10.96.0.9"), "sctp", 9),
    )
    tier = TierRules("application", 250, (EgressRule(Action.ALLOW, (POD,), services, "ACNP e egress[0] r"),))
    text = render_policy_table(datapath(egress=(tier,))).text
    body = lines(text)
    assert any(line.startswith('oifname "mc-tun0" ct state new jump eg_application') for line in body)
    rules = [line.split(" comment")[0] for line in body if line.startswith("ip saddr @eg_application_0_src")]
    assert rules == ["ip saddr @eg_application_0_src ip daddr . meta l4proto . th dport @eg_application_0_dst accept"]
    dst = text.split("set eg_application_0_dst {", 1)[1].split("\n\t}", 1)[0]
    assert lines(dst) == [
        "type ipv4_addr . inet_proto . inet_service",
        "elements = { 10.1.2.10 . tcp . 8080, 10.96.0.9 . udp . 53, 10.96.0.9 . sctp . 9 }",
    ]


def test_every_rule_carries_a_fingerprint_of_the_whole_table() -> None:
    first = render_policy_table(datapath()).text
    second = render_policy_table(
        datapath(TierRules("application", 250, (IngressRule(Action.DROP, (7,), (POD,), (), "x"),)))
    )
    fingerprints = {line.split('comment "')[1].split(" ")[0].rstrip('"') for line in lines(first) if "comment" in line}
    assert len(fingerprints) == 1
    assert fingerprints.pop() not in second
