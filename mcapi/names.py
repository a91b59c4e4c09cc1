"""Names, labels and annotations users of Antrea Multi-cluster know.

Every generated object name in the ClusterSet is derived here, so the hub,
the member and the CLI cannot disagree.
"""

from __future__ import annotations

import hashlib
import re

GROUP = "multicluster.crd.antrea.io"
MCS_GROUP = "multicluster.x-k8s.io"
ABOUT_GROUP = "about.k8s.io"
DEFAULT_LEADER_NAMESPACE = "antrea-multicluster"
DEFAULT_MEMBER_NAMESPACE = "kube-system"

# Kinds as ResourceExport/ResourceImport spec.kind spell them.
KIND_SERVICE = "Service"
KIND_ENDPOINTS = "Endpoints"
KIND_SERVICE_IMPORT = "ServiceImport"
KIND_CLUSTER_INFO = "ClusterInfo"
KIND_ACNP = "AntreaClusterNetworkPolicy"
KIND_LABEL_IDENTITY = "LabelIdentity"

# Annotations.
ANNOTATION_GATEWAY = "multicluster.antrea.io/gateway"
ANNOTATION_GATEWAY_IP = "multicluster.antrea.io/gateway-ip"
ANNOTATION_IMPORTED_SERVICE = "multicluster.antrea.io/imported-service"
ANNOTATION_IMPORTED_ACNP = "multicluster.antrea.io/imported-acnp"
ANNOTATION_CLUSTER_ID = "multicluster.antrea.io/cluster-id"
ANNOTATION_TOUCH_TS = "touch-ts"
ANNOTATION_CREATED_BY_ANTCTL = "multicluster.antrea.io/created-by-antctl"
# On a Node: the agent's WireGuard public key, which the member copies into the Gateway.
ANNOTATION_WIREGUARD_PUBLIC_KEY = "multicluster.antrea.io/wireguard-public-key"
# On the shadow Service of an export of a globally addressed member: its global address.
ANNOTATION_GLOBAL_ADDRESS = "mchub.antrea.io/global-address"

# Labels on ResourceExports.
LABEL_SOURCE_NAME = "sourceName"
LABEL_SOURCE_NAMESPACE = "sourceNamespace"
LABEL_SOURCE_CLUSTER_ID = "sourceClusterID"
LABEL_SOURCE_KIND = "sourceKind"

# MCS EndpointSlice labels.
LABEL_MCS_SERVICE_NAME = "multicluster.kubernetes.io/service-name"
LABEL_MCS_SOURCE_CLUSTER = "multicluster.kubernetes.io/source-cluster"

FINALIZER_RESOURCE_EXPORT = "resourceexport.antrea.io/finalizer"

# ClusterInfoImport condition the agent on the Gateway Node writes from its probes.
CONDITION_GATEWAY_REACHABLE = "GatewayReachable"

IMPORTED_PREFIX = "antrea-mc-"

# gRPC metadata naming the calling member where several share one token.
CLUSTER_ID_METADATA = "mchub-cluster-id"
# Trailing metadata of a hub refusal a member acts on by kind, and those kinds: another cluster
# holds the cluster ID (KEP-2149 uniqueness), or this cluster joined under another ID (immutability).
REFUSAL_REASON_METADATA = "mchub-reason"
REASON_CLUSTER_ID_IN_USE = "ClusterIDInUse"
REASON_CLUSTER_ID_IMMUTABLE = "ClusterIDImmutable"
# Initial metadata of an Export stream whose hub takes several upserts in one request (ExportUpserts).
EXPORT_BATCHES_METADATA = "mchub-export-batches"
LABEL_IDENTITY_MAX_ID = 16777214

_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def is_dns1123_label(value: str) -> bool:
    """RFC 1123 label: what Kubernetes accepts as a Namespace or Service name."""
    # fullmatch: a pattern's "$" would also match before a final newline.
    return len(value) <= 63 and bool(_DNS1123_LABEL.fullmatch(value))


def is_dns1123_subdomain(value: str) -> bool:
    return len(value) <= 253 and bool(_DNS1123_SUBDOMAIN.fullmatch(value))


def is_valid_cluster_id(value: str) -> bool:
    """Cluster IDs become parts of object names, so they must be DNS-1123 labels."""
    return is_dns1123_label(value)


def service_export_name(cluster_id: str, namespace: str, name: str) -> str:
    return f"{cluster_id}-{namespace}-{name}-service"


def endpoints_export_name(cluster_id: str, namespace: str, name: str) -> str:
    return f"{cluster_id}-{namespace}-{name}-endpoints"


def cluster_info_export_name(cluster_id: str) -> str:
    return f"{cluster_id}-clusterinfo"


def label_hash(normalized_label: str) -> str:
    """Antrea names a label identity by the first 16 hex digits of its SHA-1."""
    return hashlib.sha1(normalized_label.encode()).hexdigest()[:16]


def label_identity_export_name(cluster_id: str, normalized_label: str) -> str:
    return f"{cluster_id}-{label_hash(normalized_label)}"


def service_import_name(namespace: str, name: str) -> str:
    return f"{namespace}-{name}-service"


def endpoints_import_name(namespace: str, name: str) -> str:
    return f"{namespace}-{name}-endpoints"


def cluster_info_import_name(cluster_id: str) -> str:
    return f"{cluster_id}-clusterinfo"


def acnp_import_name(name: str) -> str:
    return f"{name}-antreaclusternetworkpolicy"


def label_identity_import_name(normalized_label: str) -> str:
    return label_hash(normalized_label)


def imported_object_name(name: str) -> str:
    """The Service/Endpoints a member creates for an imported Service."""
    return f"{IMPORTED_PREFIX}{name}"


def member_announce_name(cluster_id: str) -> str:
    return f"member-announce-from-{cluster_id}"


def is_dash_prefix(a: str, b: str) -> bool:
    """True when one cluster ID is a dash-prefix of the other (`east` vs `east-1`).

    Such IDs make export names ambiguous (`east-1-ns-x-service` could be
    cluster `east` exporting Namespace `1-ns`), so the hub refuses the second.
    """
    return a != b and (b.startswith(a + "-") or a.startswith(b + "-"))


# The multi-cluster controller's ConfigMap and the key holding its MultiClusterConfig.
MC_CONTROLLER_CONFIGMAP = "antrea-mc-controller-config"
MC_CONTROLLER_CONFIG_KEY = "controller_manager_config.yaml"

# Set by the hub's kube store on ResourceExports: when the hub first accepted the
# export (RFC 3339, nanoseconds; oldest wins a conflict) and its exact verdict
# (a mchub.v1.Verdict name). status.conditions carries the same, Antrea-shaped.
ANNOTATION_EXPORT_CREATE_TIME = "multicluster.antrea.io/export-create-time"
ANNOTATION_EXPORT_VERDICT = "multicluster.antrea.io/export-verdict"
# The importing clusters a Service export with cluster selectors reaches (comma-separated).
ANNOTATION_EXPORT_CLUSTERS = "mchub.antrea.io/export-clusters"

GATEWAY_HEALTH_PORT = 51822
"""The agent's default health port (``health.port``): UDP probes between Gateways, and TCP SYNs
whose RST shows a Node's kernel answering (kube.kernel_probe)."""
