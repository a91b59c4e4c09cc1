"""Parsing the agent's multicluster config from YAML."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent.config import AgentConfig, TrafficEncryptionMode, load_agent_config, parse_agent_config
from agent.errors import ConfigError


def test_an_empty_document_gives_antreas_defaults() -> None:
    config = parse_agent_config("")
    assert config == AgentConfig()
    assert not config.enable_gateway
    assert config.wireguard.port == 51821
    assert config.health.interval_seconds == 0.3  # mchub's: 3 misses at 300 ms move the Gateway in about a second
    assert config.health.miss_threshold == 3


def test_the_multicluster_section_is_picked_out_of_a_whole_antrea_agent_conf() -> None:
    text = """
featureGates:
  Multicluster: true
multicluster:
  enableGateway: true
  namespace: ""
  enablePodToPodConnectivity: true
  trafficEncryptionMode: "wireGuard"
  wireGuard:
    port: 51825
"""
    config = parse_agent_config(text)
    assert config.enable_gateway
    assert config.enable_pod_to_pod_connectivity
    assert config.traffic_encryption_mode is TrafficEncryptionMode.WIREGUARD
    assert config.wireguard_enabled
    assert config.wireguard.port == 51825


def test_our_own_tunnel_and_health_keys_are_read() -> None:
    text = """
enableGateway: true
tunnel: {vni: 99, port: 4900, interface: mc-t1}
health: {port: 6000, intervalSeconds: 0.25, missThreshold: 3}
wireGuard: {interface: mc-w1}
"""
    config = parse_agent_config(text)
    assert (config.tunnel.vni, config.tunnel.port, config.tunnel.interface) == (99, 4900, "mc-t1")
    assert (config.health.port, config.health.interval_seconds, config.health.miss_threshold) == (6000, 0.25, 3)
    assert config.wireguard.interface == "mc-w1"


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("enableGateway: yes-please", "multicluster.enableGateway"),
        ("multicluster: {trafficEncryptionMode: ipsec}", "trafficEncryptionMode"),
        ("wireGuard: {port: 70000}", "wireGuard.port"),
        ("wireGuard: {port: true}", "wireGuard.port"),
        ("tunnel: {vni: 0}", "tunnel.vni"),
        ("tunnel: {interface: eth0}", "tunnel.interface"),
        ("tunnel: {interface: mc-much-too-long-name}", "tunnel.interface"),
        ("tunnel: {replyMark: 0x3000}", "tunnel.replyMark"),
        ("tunnel: {replyMark: 0}", "tunnel.replyMark"),
        ("tunnel: {replyMark: 0x100000000}", "tunnel.replyMark"),
        ("tunnel: {replyMark: true}", "tunnel.replyMark"),
        ("health: {intervalSeconds: 0}", "health.intervalSeconds"),
        ("health: {missThreshold: 0}", "health.missThreshold"),
        ("enableGatway: true", "enableGatway"),
        ("- a list", "must be a mapping"),
        ("key: [unclosed", "not valid YAML"),
    ],
)
def test_invalid_values_raise_a_config_error_naming_the_key(text: str, names: str) -> None:
    with pytest.raises(ConfigError, match=names.replace(".", r"\.")):
        parse_agent_config(text)


def test_the_encryption_mode_is_case_insensitive_like_antreas() -> None:
    assert parse_agent_config("trafficEncryptionMode: wireguard").wireguard_enabled
    assert not parse_agent_config("trafficEncryptionMode: None").wireguard_enabled


def test_a_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_agent_config(tmp_path / "absent.yaml")


def test_a_file_is_loaded(tmp_path: Path) -> None:
    path = tmp_path / "agent.conf"
    path.write_text("multicluster:\n  enableGateway: true\n")
    assert load_agent_config(path).enable_gateway


def test_the_tunnel_mtu_is_automatic_unless_set() -> None:
    assert parse_agent_config("tunnel: {mtu: 0}").tunnel.mtu is None
    assert parse_agent_config("tunnel: {mtu: 1400}").tunnel.mtu == 1400
    with pytest.raises(ConfigError, match=r"tunnel\.mtu"):
        parse_agent_config("tunnel: {mtu: 100}")


def test_the_reply_mark_is_one_bit_0x2000_by_default() -> None:
    assert parse_agent_config("").tunnel.reply_mark == 0x2000
    assert parse_agent_config("tunnel: {replyMark: 0x10000}").tunnel.reply_mark == 0x10000
    assert parse_agent_config("tunnel: {replyMark: 0x80000000}").tunnel.reply_mark == 0x80000000
