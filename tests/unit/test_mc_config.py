from __future__ import annotations

import pytest

from mcapi.config import ConfigError, MultiClusterConfig, parse_configmap_data, parse_multicluster_config
from mcapi.names import MC_CONTROLLER_CONFIG_KEY

# The ConfigMap Antrea ships in antrea-multicluster-member.yml.
SHIPPED = """
apiVersion: multicluster.crd.antrea.io/v1alpha1
kind: MultiClusterConfig
health:
  healthProbeBindAddress: :8080
metrics:
  bindAddress: "0"
webhook:
  port: 9443
leaderElection:
  leaderElect: false
serviceCIDR: ""
podCIDRs:
  - ""
gatewayIPPrecedence: "private"
endpointIPType: "ClusterIP"
enableStretchedNetworkPolicy: false
"""


def test_the_shipped_config_loads_with_a_warning_for_the_retired_field() -> None:
    config = parse_multicluster_config(SHIPPED)
    assert config.gateway_ip_precedence == "private"
    assert config.endpoint_ip_type == "ClusterIP"
    assert config.pod_cidrs == ()
    assert config.webhook.port == 9443
    assert config.health.health_probe_bind_address == ":8080"
    assert config.warnings == ("unknown field 'leaderElection' ignored",)


def test_an_empty_config_means_the_defaults() -> None:
    config = parse_multicluster_config("")
    assert config == MultiClusterConfig()
    assert config.gateway_ip_precedence == "internal"
    assert config.endpoint_ip_type == "ClusterIP"
    assert config.enable_stretched_network_policy is False


def test_the_user_guide_examples_parse() -> None:
    config = parse_multicluster_config(
        "apiVersion: multicluster.crd.antrea.io/v1alpha1\nkind: MultiClusterConfig\n"
        'podCIDRs:\n  - "10.10.1.1/16"\nenableStretchedNetworkPolicy: true\nendpointIPType: PodIP\n'
        "gatewayIPPrecedence: external\nserviceCIDR: 10.96.0.0/12\n"
    )
    assert config.pod_cidrs == ("10.10.1.1/16",)
    assert config.enable_stretched_network_policy is True
    assert config.endpoint_ip_type == "PodIP"
    assert config.gateway_ip_precedence == "external"
    assert config.service_cidr == "10.96.0.0/12"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("podCIDRs: [10.10a.0.0/16]", "invalid CIDR string '10.10a.0.0/16' in podCIDRs"),
        ("serviceCIDR: 10.96.0.0/33", "invalid CIDR string '10.96.0.0/33' in serviceCIDR"),
        ("endpointIPType: None", "allowed values are ClusterIP, PodIP"),
        ("gatewayIPPrecedence: nearest", "allowed values are private, public, internal, external"),
        ("kind: ClusterSet", "kind must be MultiClusterConfig"),
        ("apiVersion: v1", "apiVersion must be multicluster.crd.antrea.io/v1alpha1"),
        ("webhook:\n  port: 0", "webhook.port"),
        ("- a list", "must be a YAML mapping"),
        ("podCIDRs: [", "not valid YAML"),
    ],
)
def test_bad_values_raise_a_config_error_naming_the_problem(text: str, expected: str) -> None:
    with pytest.raises(ConfigError, match=expected.replace("[", r"\[").replace(".", r"\.")):
        parse_multicluster_config(text)


def test_unknown_nested_fields_are_warnings_not_errors() -> None:
    config = parse_multicluster_config("health:\n  healthProbeBindAdress: ':9090'\nfoo: 1\n")
    assert set(config.warnings) == {
        "unknown field 'health.healthProbeBindAdress' ignored",
        "unknown field 'foo' ignored",
    }


def test_the_config_is_read_from_the_configmap_key() -> None:
    config = parse_configmap_data({MC_CONTROLLER_CONFIG_KEY: "endpointIPType: PodIP"})
    assert config.endpoint_ip_type == "PodIP"
    assert parse_configmap_data({}) == MultiClusterConfig()


def test_to_dict_writes_the_kubernetes_spelling_and_reparses() -> None:
    config = parse_multicluster_config(SHIPPED)
    data = config.to_dict()
    assert data["gatewayIPPrecedence"] == "private"
    assert "warnings" not in data
    assert MultiClusterConfig.model_validate(data) == config.model_copy(update={"warnings": ()})
