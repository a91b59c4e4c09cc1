"""MultiClusterConfig: the options of ConfigMap ``antrea-mc-controller-config``
(key ``controller_manager_config.yaml``), parsed and validated once.

Faithful to Antrea's type (multicluster.crd.antrea.io/v1alpha1): ``serviceCIDR``,
``podCIDRs``, ``gatewayIPPrecedence``, ``endpointIPType``,
``enableStretchedNetworkPolicy`` and the controller's ``metrics``, ``health``
and ``webhook`` blocks; beyond Antrea, ``gatewayMode`` (``active-active``: every eligible
Gateway candidate carries traffic at once). Unknown fields (``leaderElection`` from older releases,
typos) do not fail the load; they are listed in ``warnings``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from mcapi.names import GROUP, MC_CONTROLLER_CONFIG_KEY, MC_CONTROLLER_CONFIGMAP

CONFIG_API_VERSION = f"{GROUP}/v1alpha1"
CONFIG_KIND = "MultiClusterConfig"

GATEWAY_IP_PRECEDENCES = ("private", "public", "internal", "external")
ENDPOINT_IP_TYPES = ("ClusterIP", "PodIP")
GatewayIPPrecedence = Literal["private", "public", "internal", "external"]
EndpointIPType = Literal["ClusterIP", "PodIP"]
GATEWAY_MODES = ("single-active", "active-active")
GatewayMode = Literal["single-active", "active-active"]


class ConfigError(ValueError):
    """The MultiClusterConfig cannot be used; the message says which field and why."""


class _Section(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)


class ControllerMetrics(_Section):
    bind_address: str = Field(
        default="0", alias="bindAddress", description='Prometheus metrics address; "0" disables serving.'
    )


class ControllerHealth(_Section):
    health_probe_bind_address: str = Field(
        default=":8080", alias="healthProbeBindAddress", description='Health probe address; "0" or "" disables.'
    )


class ControllerWebhook(_Section):
    port: int | None = Field(default=None, ge=1, le=65535, description="Webhook server port.")
    host: str = ""
    cert_dir: str = Field(default="", alias="certDir")


def _check_cidr(value: str, field: str) -> str:
    try:
        ipaddress.ip_network(value, strict=False)  # host bits allowed, as Go's net.ParseCIDR
    except ValueError:
        raise ValueError(f"invalid CIDR string {value!r} in {field}") from None
    return value


class MultiClusterConfig(_Section):
    """The validated configuration of a multi-cluster controller (member or leader)."""

    api_version: str = Field(default=CONFIG_API_VERSION, alias="apiVersion")
    kind: str = CONFIG_KIND
    metrics: ControllerMetrics = Field(default_factory=ControllerMetrics)
    health: ControllerHealth = Field(default_factory=ControllerHealth)
    webhook: ControllerWebhook = Field(default_factory=ControllerWebhook)
    service_cidr: str = Field(
        default="",
        alias="serviceCIDR",
        description="ClusterIP range of the cluster; empty means discover it.",
    )
    pod_cidrs: tuple[str, ...] = Field(
        default=(),
        alias="podCIDRs",
        description="Pod CIDRs of the cluster; empty disables Pod-to-Pod connectivity.",
    )
    gateway_ip_precedence: GatewayIPPrecedence = Field(
        default="internal",
        alias="gatewayIPPrecedence",
        description="Which Node IP a Gateway uses as tunnel endpoint.",
    )
    endpoint_ip_type: EndpointIPType = Field(
        default="ClusterIP",
        alias="endpointIPType",
        description="Endpoints of multi-cluster Services: the exported Service's ClusterIP or the Pod IPs.",
    )
    enable_stretched_network_policy: bool = Field(default=False, alias="enableStretchedNetworkPolicy")
    gateway_mode: GatewayMode = Field(
        default="single-active",
        alias="gatewayMode",
        description="single-active: one Gateway Node at a time (Antrea); active-active: every eligible candidate.",
    )
    warnings: tuple[str, ...] = Field(default=(), exclude=True, description="Ignored unknown fields.")

    @field_validator("api_version")
    @classmethod
    def _known_api_version(cls, value: str) -> str:
        if value != CONFIG_API_VERSION:
            raise ValueError(f"apiVersion must be {CONFIG_API_VERSION}, not {value!r}")
        return value

    @field_validator("kind")
    @classmethod
    def _known_kind(cls, value: str) -> str:
        if value != CONFIG_KIND:
            raise ValueError(f"kind must be {CONFIG_KIND}, not {value!r}")
        return value

    @field_validator("service_cidr")
    @classmethod
    def _valid_service_cidr(cls, value: str) -> str:
        return _check_cidr(value, "serviceCIDR") if value else value

    @field_validator("pod_cidrs", mode="before")
    @classmethod
    def _valid_pod_cidrs(cls, value: Any) -> Any:
        if value is None:
            return ()
        if not isinstance(value, list | tuple):
            raise ValueError("podCIDRs must be a list of CIDR strings")
        # The shipped ConfigMap has `podCIDRs: [""]`; empty entries mean "unset".
        return tuple(_check_cidr(str(v), "podCIDRs") for v in value if v not in ("", None))

    @field_validator("gateway_ip_precedence", mode="before")
    @classmethod
    def _known_precedence(cls, value: Any) -> Any:
        return _choice(value, GATEWAY_IP_PRECEDENCES, "gatewayIPPrecedence", default="internal")

    @field_validator("endpoint_ip_type", mode="before")
    @classmethod
    def _known_endpoint_ip_type(cls, value: Any) -> Any:
        return _choice(value, ENDPOINT_IP_TYPES, "endpointIPType", default="ClusterIP")

    @field_validator("gateway_mode", mode="before")
    @classmethod
    def _known_gateway_mode(cls, value: Any) -> Any:
        return _choice(value, GATEWAY_MODES, "gatewayMode", default="single-active")

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        return data


def _choice(value: Any, allowed: tuple[str, ...], field: str, default: str) -> str:
    if value in (None, ""):
        return default
    if value not in allowed:
        raise ValueError(f"invalid {field} {value!r}: allowed values are {', '.join(allowed)}")
    return str(value)


def _unknown_fields(model: type[BaseModel], data: Mapping[str, Any], prefix: str = "") -> list[str]:
    unknown: list[str] = []
    by_key = {f.alias or n: f for n, f in model.model_fields.items()} | dict(model.model_fields)
    for key, value in data.items():
        field = by_key.get(key)
        if field is None or key == "warnings":
            unknown.append(f"{prefix}{key}")
            continue
        nested = field.annotation
        if isinstance(nested, type) and issubclass(nested, _Section) and isinstance(value, Mapping):
            unknown.extend(_unknown_fields(nested, value, f"{prefix}{key}."))
    return unknown


def _drop(data: Mapping[str, Any], paths: list[str]) -> dict[str, Any]:
    result = dict(data)
    for path in paths:
        head, _, rest = path.partition(".")
        if not rest:
            result.pop(head, None)
        elif isinstance(result.get(head), Mapping):
            result[head] = _drop(result[head], [rest])
    return result


def parse_multicluster_config(yaml_text: str) -> MultiClusterConfig:
    """Parse and validate the text of ``controller_manager_config.yaml``.

    Raises ConfigError naming the field and the problem (a bad CIDR, a value
    outside an enum with the allowed ones listed, bad YAML).
    """
    try:
        loaded = yaml.safe_load(yaml_text) if yaml_text.strip() else {}
    except yaml.YAMLError as err:
        raise ConfigError(f"{MC_CONTROLLER_CONFIG_KEY} is not valid YAML: {err}") from None
    if loaded is None:
        loaded = {}
    if not isinstance(loaded, Mapping):
        raise ConfigError(f"{MC_CONTROLLER_CONFIG_KEY} must be a YAML mapping, not {type(loaded).__name__}")
    unknown = _unknown_fields(MultiClusterConfig, loaded)
    data = _drop(loaded, unknown)
    try:
        config = MultiClusterConfig.model_validate(data)
    except ValidationError as err:
        raise ConfigError(_describe(err)) from None
    warnings = tuple(f"unknown field {path!r} ignored" for path in unknown)
    return config.model_copy(update={"warnings": warnings})


def parse_configmap_data(data: Mapping[str, str]) -> MultiClusterConfig:
    """The MultiClusterConfig in a ConfigMap's ``data``; defaults when the key is absent."""
    return parse_multicluster_config(data.get(MC_CONTROLLER_CONFIG_KEY, ""))


def _describe(err: ValidationError) -> str:
    problems = []
    for item in err.errors():
        where = ".".join(str(p) for p in item["loc"]) or "config"
        message = str(item["msg"]).removeprefix("Value error, ")
        problems.append(f"{where}: {message}")
    return f"invalid {MC_CONTROLLER_CONFIGMAP} {MC_CONTROLLER_CONFIG_KEY}: " + "; ".join(problems)
