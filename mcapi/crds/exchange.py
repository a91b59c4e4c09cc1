"""ResourceExport and ResourceImport (multicluster.crd.antrea.io/v1alpha1):
what members export to the leader and what the leader imports into members.

JSON names are Antrea's, including its irregular ones: ResourceImport's
target clusters are ``spec.clusterID`` (a list) and its ClusterInfo and ACNP
payloads are ``clusterinfo`` and ``clusternetworkpolicy`` (all lower case),
while ResourceExport spells them ``clusterInfo`` and ``clusterNetworkPolicy``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import ConfigDict, Field

from mcapi.crds.base import AGE_COLUMN, PRESERVE_UNKNOWN, KubeModel, KubeObject, PrinterColumn
from mcapi.crds.conditions import AntreaCondition
from mcapi.crds.core import EndpointSubset, ServiceSpec
from mcapi.crds.gateway import ClusterInfo, LabelIdentitySpec
from mcapi.crds.mcs import ClusterSelector, ClusterSelectorResult, ServiceImportSpecV1beta1, ServiceImportStatusV1beta1
from mcapi.names import GROUP

# ResourceExport condition types and reasons.
RESOURCE_EXPORT_SUCCEEDED = "Succeeded"
RESOURCE_EXPORT_FAILURE = "Failure"
REASON_CONVERGE_FAILURE = "ConvergeFailure"
# ResourceImport per-cluster condition type.
RESOURCE_IMPORT_SUCCEEDED = "Succeeded"

_OPAQUE: Any = Field(default=None, json_schema_extra=PRESERVE_UNKNOWN)


class ServiceExportPayload(KubeModel):
    """Antrea's ServiceExport payload (``serviceSpec``), plus what the exporting ServiceExport
    asks its ServiceImports to carry (mchub's; absent when empty, so Antrea's shape stays)."""

    service_spec: ServiceSpec = Field(default_factory=ServiceSpec, alias="serviceSpec")
    exported_labels: dict[str, str] = Field(
        default_factory=dict,
        alias="exportedLabels",
        description="The ServiceExport's spec.exportedLabels.",
    )
    exported_annotations: dict[str, str] = Field(
        default_factory=dict,
        alias="exportedAnnotations",
        description="The ServiceExport's spec.exportedAnnotations.",
    )
    cluster_selectors: list[ClusterSelector] = Field(
        default_factory=list,
        alias="clusterSelectors",
        description="The ServiceExport's spec.clusterSelectors (KEP-5939, alpha).",
    )


class EndpointsPayload(KubeModel):
    subsets: list[EndpointSubset] = Field(default_factory=list)


class LabelIdentityExport(KubeModel):
    normalized_label: str = Field(default="", alias="normalizedLabel")


class RawPayload(KubeModel):
    """An opaque payload; ``data`` is base64 (Go []byte)."""

    data: str = ""


class ResourceExportSpec(KubeModel):
    cluster_id: str = Field(default="", alias="clusterID", description="The member cluster this resource is from.")
    name: str = Field(default="", description="Name of the exported resource.")
    namespace: str = Field(default="", description="Namespace of the exported resource.")
    kind: str = Field(default="", description="Kind of the exported resource.")
    service: ServiceExportPayload | None = None
    endpoints: EndpointsPayload | None = None
    cluster_info: ClusterInfo | None = Field(default=None, alias="clusterInfo")
    external_entity: dict[str, Any] | None = Field(
        default=None, alias="externalEntity", json_schema_extra=PRESERVE_UNKNOWN
    )
    cluster_network_policy: dict[str, Any] | None = Field(
        default=None, alias="clusterNetworkPolicy", json_schema_extra=PRESERVE_UNKNOWN
    )
    label_identity: LabelIdentityExport | None = Field(default=None, alias="labelIdentity")
    raw: RawPayload | None = None


class ResourceExportStatus(KubeModel):
    conditions: list[AntreaCondition] = Field(default_factory=list)


class ResourceExport(KubeObject):
    """A resource a member (or the admin, for an ACNP) exports to the ClusterSet."""

    GROUP: ClassVar[str] = GROUP
    VERSION: ClassVar[str] = "v1alpha1"
    KIND: ClassVar[str] = "ResourceExport"
    PLURAL: ClassVar[str] = "resourceexports"
    NAMESPACED: ClassVar[bool] = True
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("Cluster ID", ".spec.clusterID", "string", "Cluster ID of the exporting cluster"),
        PrinterColumn("Kind", ".spec.kind", "string", "Kind of the exported resource"),
        PrinterColumn("Namespace", ".spec.namespace", "string", "Namespace of the exported resource"),
        PrinterColumn("Name", ".spec.name", "string", "Name of the exported resource"),
        AGE_COLUMN,
    )
    STATUS_SUBRESOURCE: ClassVar[bool] = True

    spec: ResourceExportSpec = Field(default_factory=ResourceExportSpec)
    status: ResourceExportStatus | None = None


class EmbeddedServiceImport(KubeModel):
    """The MCS ServiceImport Antrea embeds whole in a ResourceImport; its spec
    and status carry meaning, and so do its metadata's labels and annotations
    (the exported ones every member's ServiceImport carries). The spec has the
    v1beta1 shape, a superset of v1alpha1, so ipFamilies and traffic policies
    survive."""

    model_config = ConfigDict(extra="allow")

    api_version: str = Field(default="", alias="apiVersion")
    kind: str = ""
    metadata: dict[str, Any] | None = _OPAQUE
    spec: ServiceImportSpecV1beta1 | None = None
    status: ServiceImportStatusV1beta1 | None = None


class ClusterSelection(KubeModel):
    """The results of a ServiceImport's cluster selectors for the importing members named."""

    importers: list[str] = Field(default_factory=list)
    results: list[ClusterSelectorResult] = Field(default_factory=list)


class ResourceImportSpec(KubeModel):
    cluster_ids: list[str] = Field(
        default_factory=list,
        alias="clusterID",
        description="Member clusters to import to; empty means all members.",
    )
    name: str = Field(default="", description="Name of the imported resource.")
    namespace: str = Field(default="", description="Namespace of the imported resource.")
    kind: str = Field(default="", description="Kind of the imported resource.")
    service_import: EmbeddedServiceImport | None = Field(default=None, alias="serviceImport")
    cluster_selections: list[ClusterSelection] = Field(
        default_factory=list,
        alias="clusterSelections",
        description="mchub: the results of the ServiceImport's cluster selectors (KEP-5939), per importing member.",
    )
    endpoints: EndpointsPayload | None = None
    cluster_info: ClusterInfo | None = Field(default=None, alias="clusterinfo")
    external_entity: dict[str, Any] | None = Field(
        default=None, alias="externalentity", json_schema_extra=PRESERVE_UNKNOWN
    )
    cluster_network_policy: dict[str, Any] | None = Field(
        default=None, alias="clusternetworkpolicy", json_schema_extra=PRESERVE_UNKNOWN
    )
    label_identity: LabelIdentitySpec | None = Field(default=None, alias="labelIdentity")
    raw: RawPayload | None = None


class ResourceImportClusterStatus(KubeModel):
    cluster_id: str = Field(default="", alias="clusterID")
    conditions: list[AntreaCondition] = Field(default_factory=list)


class ResourceImportStatus(KubeModel):
    cluster_statuses: list[ResourceImportClusterStatus] = Field(default_factory=list, alias="clusterStatuses")


class ResourceImport(KubeObject):
    """A resource the leader imports into member clusters."""

    GROUP: ClassVar[str] = GROUP
    VERSION: ClassVar[str] = "v1alpha1"
    KIND: ClassVar[str] = "ResourceImport"
    PLURAL: ClassVar[str] = "resourceimports"
    NAMESPACED: ClassVar[bool] = True
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("Kind", ".spec.kind", "string", "Kind of the imported resource"),
        PrinterColumn("Namespace", ".spec.namespace", "string", "Namespace of the imported resource"),
        PrinterColumn("Name", ".spec.name", "string", "Name of the imported resource"),
        AGE_COLUMN,
    )
    STATUS_SUBRESOURCE: ClassVar[bool] = True

    spec: ResourceImportSpec = Field(default_factory=ResourceImportSpec)
    status: ResourceImportStatus | None = None
