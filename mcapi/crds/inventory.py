"""Cluster Inventory API (multicluster.x-k8s.io, KEP-4322): ClusterProfile v1alpha1, namespaced,
in the shape of kubernetes-sigs/cluster-inventory-api v0.1.x.

A cluster manager keeps one ClusterProfile per cluster it manages, in a Namespace that stands for
its ClusterSet (labelled ``multicluster.x-k8s.io/clusterset``). mchub's hub is such a manager: it
fills ``status`` from each member's announces (health, Kubernetes version) and ClusterProperties.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ConfigDict, Field

from mcapi.crds.base import PRESERVE_UNKNOWN, KubeModel, KubeObject, KubeTime
from mcapi.crds.conditions import Condition
from mcapi.names import MCS_GROUP

# The label naming the cluster manager on each of its ClusterProfiles, and the one naming the
# ClusterSet on the Namespace that holds them.
LABEL_CLUSTER_MANAGER = "x-k8s.io/cluster-manager"
LABEL_CLUSTER_SET = "multicluster.x-k8s.io/clusterset"
CONDITION_CONTROL_PLANE_HEALTHY = "ControlPlaneHealthy"


def _list_map(*keys: str) -> dict[str, Any]:
    return {"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)}


class ClusterManager(KubeModel):
    """Which cluster manager owns the ClusterProfile. Immutable."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "ClusterManager is immutable"}]
        },
    )

    name: str = Field(description="The name of the cluster manager.")


class ClusterProfileSpec(KubeModel):
    display_name: str = Field(default="", alias="displayName", description="A human-readable name of the cluster.")
    cluster_manager: ClusterManager = Field(alias="clusterManager")


class ClusterVersion(KubeModel):
    kubernetes: str = Field(default="", description="The Kubernetes version of the cluster.")


class Property(KubeModel):
    """One property of the cluster: a ClusterProperty of it (KEP-2149) or the manager's own."""

    name: str = Field(min_length=1, max_length=253)
    value: str = Field(min_length=1, max_length=1024)
    last_observed_time: KubeTime | None = Field(
        default=None,
        alias="lastObservedTime",
        description="When the property was last observed on the cluster (not when the profile was updated).",
    )


class NamedExtension(KubeModel):
    name: str
    extension: dict[str, Any] = Field(json_schema_extra=PRESERVE_UNKNOWN)


class AccessCluster(KubeModel):
    """clientcmd v1 Cluster: how to reach the cluster's API server."""

    server: str
    tls_server_name: str = Field(default="", alias="tls-server-name")
    insecure_skip_tls_verify: bool | None = Field(default=None, alias="insecure-skip-tls-verify")
    certificate_authority: str = Field(default="", alias="certificate-authority")
    certificate_authority_data: str = Field(
        default="", alias="certificate-authority-data", json_schema_extra={"format": "byte"}
    )
    proxy_url: str = Field(default="", alias="proxy-url")
    disable_compression: bool | None = Field(default=None, alias="disable-compression")
    extensions: list[NamedExtension] = Field(default_factory=list)


class AccessProvider(KubeModel):
    name: str
    cluster: AccessCluster | None = None


class ClusterProfileStatus(KubeModel):
    conditions: list[Condition] = Field(default_factory=list, json_schema_extra=_list_map("type"))
    version: ClusterVersion | None = None
    properties: list[Property] = Field(default_factory=list, json_schema_extra=_list_map("name"))
    access_providers: list[AccessProvider] = Field(
        default_factory=list, alias="accessProviders", json_schema_extra=_list_map("name")
    )
    credential_providers: list[AccessProvider] = Field(
        default_factory=list,
        alias="credentialProviders",
        description="Deprecated: use accessProviders.",
        json_schema_extra=_list_map("name"),
    )


class ClusterProfile(KubeObject):
    """ClusterProfile represents a single cluster in a multi-cluster deployment."""

    GROUP: ClassVar[str] = MCS_GROUP
    VERSION: ClassVar[str] = "v1alpha1"
    KIND: ClassVar[str] = "ClusterProfile"
    PLURAL: ClassVar[str] = "clusterprofiles"
    NAMESPACED: ClassVar[bool] = True
    STATUS_SUBRESOURCE: ClassVar[bool] = True

    spec: ClusterProfileSpec
    status: ClusterProfileStatus | None = None
