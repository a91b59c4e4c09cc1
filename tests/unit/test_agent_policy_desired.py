"""compute_desired with stretched NetworkPolicy: only the active VXLAN Gateway enforces (pure)."""

from __future__ import annotations

from dataclasses import replace
from ipaddress import IPv4Address

from agent.config import AgentConfig, TrafficEncryptionMode
from agent.desired import compute_desired
from agent.policy.state import CompiledPolicy
from tests.unit.test_agent_desired import inputs_for

POLICY = CompiledPolicy(pod_identities=((IPv4Address("10.1.1.10"), 7),), identity_ids=(7,))
STRETCHED = AgentConfig(enable_gateway=True, enable_stretched_network_policy=True)


def test_the_vxlan_gateway_gets_the_policy_table_with_its_tunnel_and_remote_gateways() -> None:
    desired = compute_desired(replace(inputs_for("east-a"), policy=POLICY), STRETCHED)
    assert desired.policy is not None
    assert desired.policy.tunnel_interface == "mc-tun0"
    assert (desired.policy.tunnel_vni, desired.policy.tunnel_port) == (1702, 4798)
    assert desired.policy.remote_gateways == (IPv4Address("198.19.2.1"), IPv4Address("198.19.3.1"))
    assert desired.policy.pod_identities == POLICY.pod_identities


def test_other_nodes_and_a_disabled_feature_get_no_policy_table() -> None:
    assert compute_desired(replace(inputs_for("east-b"), policy=POLICY), STRETCHED).policy is None
    plain = AgentConfig(enable_gateway=True)
    assert compute_desired(replace(inputs_for("east-a"), policy=POLICY), plain).policy is None
    assert compute_desired(inputs_for("east-a"), STRETCHED).policy is None


def test_wireguard_carries_no_identity_so_the_gateway_enforces_nothing() -> None:
    wireguard = replace(STRETCHED, traffic_encryption_mode=TrafficEncryptionMode.WIREGUARD)
    assert compute_desired(replace(inputs_for("east-a"), policy=POLICY), wireguard).policy is None
