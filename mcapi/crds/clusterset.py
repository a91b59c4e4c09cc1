"""ClusterSet, ClusterClaim and MemberClusterAnnounce (multicluster.crd.antrea.io)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from mcapi.crds.base import AGE_COLUMN, Int32, Int64, KubeModel, KubeObject, PrinterColumn
from mcapi.crds.conditions import AntreaCondition
from mcapi.names import GROUP

# ClusterSet condition types (v1alpha2).
CLUSTER_SET_READY = "Ready"
CLUSTER_READY = "Ready"
CLUSTER_IS_LEADER = "IsLeader"  # member side
CLUSTER_CONNECTED = "ClusterConnected"  # leader side

# Well-known ClusterClaim names; v1alpha1 spelled the ClusterSet one with a capital S.
WELL_KNOWN_CLAIM_ID = "id.k8s.io"
WELL_KNOWN_CLAIM_CLUSTER_SET = "clusterset.k8s.io"
WELL_KNOWN_CLAIM_CLUSTER_SET_V1ALPHA1 = "clusterSet.k8s.io"

_CLUSTER_SET_COLUMNS = (
    PrinterColumn(
        "Leader Cluster Namespace", ".spec.namespace", "string", "The leader cluster Namespace for the ClusterSet"
    ),
    PrinterColumn("Total Clusters", ".status.totalClusters", "string", "Total number of clusters in the ClusterSet"),
    PrinterColumn("Ready Clusters", ".status.readyClusters", "string", "Number of ready clusters in the ClusterSet"),
    AGE_COLUMN,
)


# Versions of one CRD convert with strategy None: the apiserver only rewrites apiVersion and
# prunes the object against the schema of every version it passes through (the stored one
# included). So each version's schema keeps the fields the other version's objects carry:
# a legacy (v1alpha1) object read as v1alpha2 or stored keeps members[] and serviceAccount,
# and a v1alpha2 object written back through v1alpha1 keeps clusterID.
_LEGACY = "Legacy (v1alpha1) field, kept so objects written in either version lose nothing."


class MemberClusterV1alpha1(KubeModel):
    """A leader or member cluster in a v1alpha1 ClusterSet."""

    cluster_id: str = Field(default="", alias="clusterID")
    server: str = ""
    secret: str = ""
    service_account: str = Field(default="", alias="serviceAccount")


class LeaderClusterInfo(KubeModel):
    """A leader cluster as the members know it."""

    cluster_id: str = Field(default="", alias="clusterID", description="Identify a leader cluster in the ClusterSet.")
    server: str = Field(default="", description="API server endpoint of the leader cluster.")
    secret: str = Field(default="", description="Secret in the member cluster holding the token to access the leader.")
    service_account: str = Field(
        default="",
        alias="serviceAccount",
        description="Deprecated: the leader ServiceAccount the member's token belongs to (informational).",
    )


class ClusterSetSpecV1alpha2(KubeModel):
    cluster_id: str = Field(alias="clusterID", description="ClusterID identifies the local cluster.")
    leaders: list[LeaderClusterInfo] = Field(min_length=1, max_length=1)
    namespace: str = Field(default="", description="The leader cluster Namespace; set in a member cluster.")
    members: list[MemberClusterV1alpha1] = Field(default_factory=list, description=_LEGACY)


class ClusterStatus(KubeModel):
    """The conditions of one cluster of the ClusterSet."""

    cluster_id: str = Field(default="", alias="clusterID")
    conditions: list[AntreaCondition] = Field(default_factory=list)


class ClusterSetStatus(KubeModel):
    total_clusters: Int32 | None = Field(default=None, alias="totalClusters")
    ready_clusters: Int32 | None = Field(default=None, alias="readyClusters")
    conditions: list[AntreaCondition] = Field(default_factory=list)
    cluster_statuses: list[ClusterStatus] = Field(default_factory=list, alias="clusterStatuses")
    observed_generation: Int64 | None = Field(default=None, alias="observedGeneration")


class ClusterSet(KubeObject):
    """ClusterSet represents a ClusterSet (v1alpha2, the storage version)."""

    GROUP: ClassVar[str] = GROUP
    VERSION: ClassVar[str] = "v1alpha2"
    KIND: ClassVar[str] = "ClusterSet"
    PLURAL: ClassVar[str] = "clustersets"
    NAMESPACED: ClassVar[bool] = True
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = _CLUSTER_SET_COLUMNS
    STATUS_SUBRESOURCE: ClassVar[bool] = True

    spec: ClusterSetSpecV1alpha2
    status: ClusterSetStatus | None = None


class ClusterSetSpecV1alpha1(KubeModel):
    leaders: list[MemberClusterV1alpha1] = Field(min_length=1, max_length=1)
    members: list[MemberClusterV1alpha1] = Field(default_factory=list)
    namespace: str = ""
    cluster_id: str = Field(
        default="", alias="clusterID", description="The local cluster, as v1alpha2 says it (optional here)."
    )


class ClusterSetV1alpha1(KubeObject):
    """ClusterSet as the legacy (v1alpha1) API spells it, with members[]."""

    GROUP: ClassVar[str] = GROUP
    VERSION: ClassVar[str] = "v1alpha1"
    KIND: ClassVar[str] = "ClusterSet"
    PLURAL: ClassVar[str] = "clustersets"
    NAMESPACED: ClassVar[bool] = True
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = _CLUSTER_SET_COLUMNS
    STATUS_SUBRESOURCE: ClassVar[bool] = True
    STORAGE: ClassVar[bool] = False

    spec: ClusterSetSpecV1alpha1
    status: ClusterSetStatus | None = None


class ClusterClaimV1alpha1(KubeObject):
    """ClusterClaim (legacy v1alpha1): the claim's name is a field, not metadata.name."""

    GROUP: ClassVar[str] = GROUP
    VERSION: ClassVar[str] = "v1alpha1"
    KIND: ClassVar[str] = "ClusterClaim"
    PLURAL: ClassVar[str] = "clusterclaims"
    NAMESPACED: ClassVar[bool] = True
    STORAGE: ClassVar[bool] = False

    name: str = ""
    value: str = ""


class ClusterClaim(KubeObject):
    """ClusterClaim (v1alpha2): metadata.name is the well-known claim name."""

    GROUP: ClassVar[str] = GROUP
    VERSION: ClassVar[str] = "v1alpha2"
    KIND: ClassVar[str] = "ClusterClaim"
    PLURAL: ClassVar[str] = "clusterclaims"
    NAMESPACED: ClassVar[bool] = True
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("Value", ".value", "string", "Value of the ClusterClaim"),
        AGE_COLUMN,
    )

    value: str
    # The v1alpha1 spelling of the claim's name. The apiserver stores v1alpha1 claims as
    # v1alpha2: without it here, it is pruned from storage and from both versions' reads, and
    # the legacy guide's claims (or Antrea v1alpha1 claims kept across an upgrade) claim nothing.
    name: str = Field(default="", description=_LEGACY + " The claim's name; metadata.name in v1alpha2.")


class MemberClusterAnnounce(KubeObject):
    """A member's announcement in the leader Namespace, named
    ``member-announce-from-<clusterID>``; annotation ``touch-ts`` is the heartbeat."""

    GROUP: ClassVar[str] = GROUP
    VERSION: ClassVar[str] = "v1alpha1"
    KIND: ClassVar[str] = "MemberClusterAnnounce"
    PLURAL: ClassVar[str] = "memberclusterannounces"
    NAMESPACED: ClassVar[bool] = True
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("Cluster ID", ".clusterID", "string", "Cluster ID of the member cluster"),
        PrinterColumn("ClusterSet ID", ".clusterSetID", "string", "ClusterSet ID"),
        AGE_COLUMN,
    )

    cluster_id: str = Field(default="", alias="clusterID", description="Cluster ID of the member cluster.")
    cluster_set_id: str = Field(default="", alias="clusterSetID", description="ClusterSet this member belongs to.")
    leader_cluster_id: str = Field(
        default="", alias="leaderClusterID", description="Leader cluster this member has selected."
    )
