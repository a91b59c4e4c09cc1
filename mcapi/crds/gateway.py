"""Gateway, ClusterInfoImport and LabelIdentity (multicluster.crd.antrea.io/v1alpha1),
and ClusterInfo, the payload a member exports about its Gateway and network."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from mcapi.crds.base import AGE_COLUMN, KubeModel, KubeObject, PrinterColumn
from mcapi.crds.conditions import AntreaCondition
from mcapi.names import GROUP

CLUSTER_INFO_IMPORT_READY = "Ready"


class GatewayInfo(KubeModel):
    gateway_ip: str = Field(default="", alias="gatewayIP")


class WireGuardInfo(KubeModel):
    public_key: str = Field(default="", alias="publicKey", description="Public key of the WireGuard tunnel.")


class ClusterInfo(KubeModel):
    """A member cluster's Gateways and network, as every other member needs them."""

    cluster_id: str = Field(default="", alias="clusterID", description="ClusterID of the member cluster.")
    service_cidr: str = Field(
        default="", alias="serviceCIDR", description="ServiceCIDR is the IP ranges used by Service ClusterIP."
    )
    gateway_infos: list[GatewayInfo] = Field(default_factory=list, alias="gatewayInfos")
    pod_cidrs: list[str] = Field(default_factory=list, alias="podCIDRs", description="Pod IP address CIDRs.")
    wire_guard: WireGuardInfo | None = Field(default=None, alias="wireGuard")
    # mchub extensions (absent in Antrea), set by the hub in imports.
    global_cidr: str | None = Field(
        default=None,
        alias="globalCIDR",
        description="mchub: the member's block of the ClusterSet's global CIDR, set by the hub.",
    )
    globally_addressed: bool | None = Field(
        default=None,
        alias="globallyAddressed",
        description=(
            "mchub: true when the member's Service or Pod CIDRs overlap another member's: it is reached "
            "only through its global CIDR, and its own cross-cluster traffic leaves SNATed to that block."
        ),
    )


class Gateway(KubeObject):
    """Gateway includes information of a Multi-cluster Gateway (one per elected Node)."""

    GROUP: ClassVar[str] = GROUP
    VERSION: ClassVar[str] = "v1alpha1"
    KIND: ClassVar[str] = "Gateway"
    PLURAL: ClassVar[str] = "gateways"
    NAMESPACED: ClassVar[bool] = True
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("Gateway IP", ".gatewayIP", "string", "Cross-cluster tunnel IP"),
        PrinterColumn("Internal IP", ".internalIP", "string", "In-cluster tunnel IP"),
        AGE_COLUMN,
    )
    # Antrea's Gateway CRD declares a status subresource though the kind has no status.
    STATUS_SUBRESOURCE: ClassVar[bool] = True

    gateway_ip: str = Field(default="", alias="gatewayIP", description="Cross-cluster tunnel IP of the Gateway.")
    internal_ip: str = Field(default="", alias="internalIP", description="In-cluster tunnel IP of the Gateway.")
    service_cidr: str = Field(default="", alias="serviceCIDR", description="Service CIDR of the local member cluster.")
    wire_guard: WireGuardInfo | None = Field(default=None, alias="wireGuard")


class ClusterInfoImportStatus(KubeModel):
    conditions: list[AntreaCondition] = Field(default_factory=list)


class ClusterInfoImport(KubeObject):
    """Another member's ClusterInfo, imported into this member."""

    GROUP: ClassVar[str] = GROUP
    VERSION: ClassVar[str] = "v1alpha1"
    KIND: ClassVar[str] = "ClusterInfoImport"
    PLURAL: ClassVar[str] = "clusterinfoimports"
    NAMESPACED: ClassVar[bool] = True
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("Cluster ID", ".spec.clusterID", "string", "Member Cluster ID"),
        PrinterColumn("Service CIDR", ".spec.serviceCIDR", "string", "Service CIDR of the cluster"),
        AGE_COLUMN,
    )
    STATUS_SUBRESOURCE: ClassVar[bool] = True

    spec: ClusterInfo = Field(default_factory=ClusterInfo)
    status: ClusterInfoImportStatus | None = None


class LabelIdentitySpec(KubeModel):
    label: str = Field(
        default="",
        description="Normalized label identity: ns:<namespace labels>&pod:<pod labels>.",
    )
    id: int = Field(
        default=0,
        ge=0,
        le=2**32 - 1,
        json_schema_extra={"format": "int32"},
        description="ID allocated for the label identity by the leader cluster.",
    )


class LabelIdentity(KubeObject):
    """A label identity imported from the ClusterSet (cluster-scoped)."""

    GROUP: ClassVar[str] = GROUP
    VERSION: ClassVar[str] = "v1alpha1"
    KIND: ClassVar[str] = "LabelIdentity"
    PLURAL: ClassVar[str] = "labelidentities"
    NAMESPACED: ClassVar[bool] = False
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("Label", ".spec.label", "string", "Normalized string of a label identity"),
        PrinterColumn("ID", ".spec.id", "string", "ID allocated for the label identity by the leader cluster"),
        AGE_COLUMN,
    )

    spec: LabelIdentitySpec = Field(default_factory=LabelIdentitySpec)
