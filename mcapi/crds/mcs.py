"""MCS API (multicluster.x-k8s.io, KEP-1645): ServiceExport and ServiceImport,
v1alpha1 and v1beta1 (the storage version, as in kubernetes-sigs/mcs-api).

These types belong to the MCS project, so unknown fields are tolerated.

v1beta1 also serves, as alpha fields, KEP-5939's cluster selection: ServiceExport
``spec.clusterSelectors`` (up to 16 ``propertySelector`` entries over ClusterProperties) and
mchub's ``status.clusters`` (the clusters that import a selective export); ServiceImport
``spec.clusterSelectors`` (the merged list) and ``status.clusterSelectorResults`` with
``status.observedGeneration``.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import ConfigDict, Field

from mcapi.crds.base import AGE_COLUMN, Int32, Int64, KubeModel, KubeObject, PrinterColumn
from mcapi.crds.conditions import Condition
from mcapi.crds.core import SessionAffinityConfig
from mcapi.names import MCS_GROUP

SERVICE_IMPORT_CLUSTER_SET_IP = "ClusterSetIP"
SERVICE_IMPORT_HEADLESS = "Headless"
ServiceImportType = Literal["ClusterSetIP", "Headless"]

_TOLERANT = ConfigDict(extra="allow")


# KEP-5939: at most this many cluster selectors; the placeholder meaning "the importer's value".
MAX_CLUSTER_SELECTORS = 16
SAME_AS_IMPORTER = "@SameAsImporter@"
PropertySelectorOperator = Literal["In", "NotIn", "Exists", "DoesNotExist"]


class ServiceExportSpec(KubeModel):
    model_config = _TOLERANT

    exported_labels: dict[str, str] = Field(default_factory=dict, alias="exportedLabels")
    exported_annotations: dict[str, str] = Field(default_factory=dict, alias="exportedAnnotations")


class PropertySelectorRequirement(KubeModel):
    """One requirement over a ClusterProperty, as metav1.LabelSelectorRequirement over a label."""

    model_config = _TOLERANT

    key: str = Field(description="The ClusterProperty name.")
    operator: PropertySelectorOperator
    values: list[str] = Field(
        default_factory=list,
        description=f"With In and NotIn, the values (one may be {SAME_AS_IMPORTER}); empty otherwise.",
    )


class PropertySelector(KubeModel):
    """A query over ClusterProperties: matchProperties and matchExpressions ANDed; empty is invalid."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"x-kubernetes-map-type": "atomic"})

    match_properties: dict[str, str] = Field(
        default_factory=dict,
        alias="matchProperties",
        description=f"ClusterProperty name -> value ({SAME_AS_IMPORTER}: the importing cluster's value).",
    )
    match_expressions: list[PropertySelectorRequirement] = Field(
        default_factory=list, alias="matchExpressions", json_schema_extra={"x-kubernetes-list-type": "atomic"}
    )


class ClusterSelector(KubeModel):
    """One entry of a ServiceExport's ordered cluster selectors (KEP-5939, alpha)."""

    model_config = _TOLERANT

    property_selector: PropertySelector = Field(alias="propertySelector")


_SELECTORS_DESCRIPTION = (
    "Alpha (KEP-5939): ordered cluster selectors; an importer prefers the clusters of the first one "
    "with ready endpoints, else every exporting cluster."
)


class ServiceExportSpecV1beta1(ServiceExportSpec):
    cluster_selectors: list[ClusterSelector] = Field(
        default_factory=list,
        alias="clusterSelectors",
        max_length=MAX_CLUSTER_SELECTORS,
        description=_SELECTORS_DESCRIPTION,
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )


class ServiceExportStatus(KubeModel):
    model_config = _TOLERANT

    conditions: list[Condition] = Field(default_factory=list)


class ExportingToCluster(KubeModel):
    """A cluster that imports this export (mchub, alpha)."""

    model_config = _TOLERANT

    cluster: str


class ServiceExportStatusV1beta1(ServiceExportStatus):
    clusters: list[ExportingToCluster] = Field(
        default_factory=list,
        description=(
            "Alpha (mchub): with clusterSelectors, the importing clusters whose traffic this export "
            "receives now; absent without clusterSelectors (every member imports it)."
        ),
    )


class _ServiceExportBase(KubeObject):
    model_config = _TOLERANT
    GROUP: ClassVar[str] = MCS_GROUP
    KIND: ClassVar[str] = "ServiceExport"
    PLURAL: ClassVar[str] = "serviceexports"
    NAMESPACED: ClassVar[bool] = True
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("svcex", "svcexport")
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (AGE_COLUMN,)
    STATUS_SUBRESOURCE: ClassVar[bool] = True


class ServiceExportV1alpha1(_ServiceExportBase):
    """ServiceExport declares that the Service of the same namespace/name is
    consumable from the other clusters of the ClusterSet."""

    VERSION: ClassVar[str] = "v1alpha1"
    STORAGE: ClassVar[bool] = False

    spec: ServiceExportSpec | None = None
    status: ServiceExportStatus | None = None


class ServiceExportV1beta1(_ServiceExportBase):
    """ServiceExport declares that the Service of the same namespace/name is
    consumable from the other clusters of the ClusterSet."""

    VERSION: ClassVar[str] = "v1beta1"
    STORAGE: ClassVar[bool] = True

    spec: ServiceExportSpecV1beta1 | None = None
    status: ServiceExportStatusV1beta1 | None = None


class MCSServicePort(KubeModel):
    """The port on which an imported service is exposed."""

    model_config = _TOLERANT

    name: str = ""
    protocol: str = ""
    app_protocol: str | None = Field(default=None, alias="appProtocol")
    port: Int32


class ServiceImportClusterStatus(KubeModel):
    """An exporting cluster of a ServiceImport."""

    model_config = _TOLERANT

    cluster: str


class ServiceImportSpecV1alpha1(KubeModel):
    model_config = _TOLERANT

    ports: list[MCSServicePort]
    ips: list[str] = Field(default_factory=list, max_length=2)
    type: ServiceImportType
    session_affinity: str = Field(default="", alias="sessionAffinity")
    session_affinity_config: SessionAffinityConfig | None = Field(default=None, alias="sessionAffinityConfig")
    ip_families: list[str] = Field(default_factory=list, alias="ipFamilies")


class ServiceImportSpecV1beta1(ServiceImportSpecV1alpha1):
    ip_families: list[str] = Field(default_factory=list, max_length=2, alias="ipFamilies")
    internal_traffic_policy: str = Field(default="", alias="internalTrafficPolicy")
    traffic_distribution: str = Field(default="", alias="trafficDistribution")
    cluster_selectors: list[ClusterSelector] = Field(
        default_factory=list,
        alias="clusterSelectors",
        max_length=MAX_CLUSTER_SELECTORS,
        description="Alpha (KEP-5939): the exporting ServiceExports' cluster selectors, as merged (the oldest's).",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )


class ServiceImportStatusV1alpha1(KubeModel):
    model_config = _TOLERANT

    clusters: list[ServiceImportClusterStatus] = Field(default_factory=list)
    conditions: list[Condition] = Field(default_factory=list)


class ClusterSelectorResult(KubeModel):
    """The exporting clusters one cluster selector matched, for this importer."""

    model_config = _TOLERANT

    clusters: list[str] = Field(default_factory=list, json_schema_extra={"x-kubernetes-list-type": "atomic"})


class ServiceImportStatusV1beta1(ServiceImportStatusV1alpha1):
    endpoint_slice_objects: Literal["Present", "Absent"] | None = Field(default=None, alias="endpointSliceObjects")
    observed_generation: Int64 | None = Field(default=None, alias="observedGeneration")
    cluster_selector_results: list[ClusterSelectorResult] = Field(
        default_factory=list,
        alias="clusterSelectorResults",
        description="Alpha (KEP-5939): per spec.clusterSelectors entry, in order, the exporting clusters it selects.",
        json_schema_extra={"x-kubernetes-list-type": "atomic"},
    )


class _ServiceImportBase(KubeObject):
    model_config = _TOLERANT
    GROUP: ClassVar[str] = MCS_GROUP
    KIND: ClassVar[str] = "ServiceImport"
    PLURAL: ClassVar[str] = "serviceimports"
    NAMESPACED: ClassVar[bool] = True
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("svcim", "svcimport")
    CATEGORIES: ClassVar[tuple[str, ...]] = ("multicluster",)
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("Type", ".spec.type", "string", "The type of this ServiceImport"),
        PrinterColumn("IP", ".spec.ips", "string", "The VIP for this ServiceImport"),
        AGE_COLUMN,
    )
    STATUS_SUBRESOURCE: ClassVar[bool] = True


class ServiceImportV1alpha1(_ServiceImportBase):
    """ServiceImport describes a service imported from clusters in a ClusterSet."""

    VERSION: ClassVar[str] = "v1alpha1"
    STORAGE: ClassVar[bool] = False

    spec: ServiceImportSpecV1alpha1 | None = None
    status: ServiceImportStatusV1alpha1 | None = None


class ServiceImportV1beta1(_ServiceImportBase):
    """ServiceImport describes a service imported from clusters in a ClusterSet."""

    VERSION: ClassVar[str] = "v1beta1"
    STORAGE: ClassVar[bool] = True

    spec: ServiceImportSpecV1beta1 | None = None
    status: ServiceImportStatusV1beta1 | None = None
