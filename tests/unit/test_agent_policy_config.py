"""enableStretchedNetworkPolicy in the agent's multicluster section (Antrea's key)."""

from __future__ import annotations

import pytest

from agent.config import parse_agent_config
from agent.errors import ConfigError


def test_stretched_network_policy_is_off_by_default_and_on_when_asked() -> None:
    assert parse_agent_config("enableGateway: true").enable_stretched_network_policy is False
    text = "multicluster:\n  enableGateway: true\n  enableStretchedNetworkPolicy: true\n"
    assert parse_agent_config(text).enable_stretched_network_policy is True


def test_a_non_boolean_value_is_refused_with_its_key() -> None:
    with pytest.raises(ConfigError, match="enableStretchedNetworkPolicy"):
        parse_agent_config("enableStretchedNetworkPolicy: yes-please")
