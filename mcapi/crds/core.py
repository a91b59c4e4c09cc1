"""The core/v1 types Antrea's CRDs embed (a Service spec, Endpoints subsets).

They belong to another API, so they are tolerant: fields not modelled here
are kept as they come, and their CRD schema preserves unknown fields.
"""

from __future__ import annotations

from pydantic import ConfigDict, Field

from mcapi.crds.base import Int32, IntOrString, KubeModel, ObjectReference

_FOREIGN = ConfigDict(extra="allow", json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})


class ServicePort(KubeModel):
    model_config = _FOREIGN

    name: str = ""
    protocol: str = ""
    app_protocol: str | None = Field(default=None, alias="appProtocol")
    port: Int32
    target_port: IntOrString | None = Field(default=None, alias="targetPort")
    node_port: Int32 | None = Field(default=None, alias="nodePort")


class ClientIPConfig(KubeModel):
    model_config = _FOREIGN

    timeout_seconds: Int32 | None = Field(default=None, alias="timeoutSeconds")


class SessionAffinityConfig(KubeModel):
    model_config = _FOREIGN

    client_ip: ClientIPConfig | None = Field(default=None, alias="clientIP")


class ServiceSpec(KubeModel):
    """core/v1 ServiceSpec, the fields multi-cluster Services care about."""

    model_config = _FOREIGN

    type: str = ""
    ports: list[ServicePort] = Field(default_factory=list)
    selector: dict[str, str] = Field(default_factory=dict)
    cluster_ip: str = Field(default="", alias="clusterIP")
    cluster_ips: list[str] = Field(default_factory=list, alias="clusterIPs")
    external_name: str = Field(default="", alias="externalName")
    session_affinity: str = Field(default="", alias="sessionAffinity")
    session_affinity_config: SessionAffinityConfig | None = Field(default=None, alias="sessionAffinityConfig")
    ip_families: list[str] = Field(default_factory=list, alias="ipFamilies")
    ip_family_policy: str = Field(default="", alias="ipFamilyPolicy")
    internal_traffic_policy: str = Field(default="", alias="internalTrafficPolicy")
    external_traffic_policy: str = Field(default="", alias="externalTrafficPolicy")
    traffic_distribution: str = Field(default="", alias="trafficDistribution")
    publish_not_ready_addresses: bool | None = Field(default=None, alias="publishNotReadyAddresses")


class EndpointAddress(KubeModel):
    model_config = _FOREIGN

    ip: str
    hostname: str = ""
    node_name: str = Field(default="", alias="nodeName")
    target_ref: ObjectReference | None = Field(default=None, alias="targetRef")


class EndpointPort(KubeModel):
    model_config = _FOREIGN

    name: str = ""
    port: Int32
    protocol: str = ""
    app_protocol: str | None = Field(default=None, alias="appProtocol")


class EndpointSubset(KubeModel):
    model_config = _FOREIGN

    addresses: list[EndpointAddress] = Field(default_factory=list)
    not_ready_addresses: list[EndpointAddress] = Field(default_factory=list, alias="notReadyAddresses")
    ports: list[EndpointPort] = Field(default_factory=list)
