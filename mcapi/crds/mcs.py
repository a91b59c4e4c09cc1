"""MCS API (multicluster.x-k8s.io, KEP-1645): ServiceExport and ServiceImport,
v1alpha1 and v1beta1 (the storage version, as in kubernetes-sigs/mcs-api).

These types belong to the MCS project, so unknown fields are tolerated.
"""

from __future__ import annotations

from typing import ClassVar, Literal

from pydantic import ConfigDict, Field

from mcapi.crds.base import AGE_COLUMN, Int32, KubeModel, KubeObject, PrinterColumn
from mcapi.crds.conditions import Condition
from mcapi.crds.core import SessionAffinityConfig
from mcapi.names import MCS_GROUP

SERVICE_IMPORT_CLUSTER_SET_IP = "ClusterSetIP"
SERVICE_IMPORT_HEADLESS = "Headless"
ServiceImportType = Literal["ClusterSetIP", "Headless"]

_TOLERANT = ConfigDict(extra="allow")


class ServiceExportSpec(KubeModel):
    model_config = _TOLERANT

    exported_labels: dict[str, str] = Field(default_factory=dict, alias="exportedLabels")
    exported_annotations: dict[str, str] = Field(default_factory=dict, alias="exportedAnnotations")


class ServiceExportStatus(KubeModel):
    model_config = _TOLERANT

    conditions: list[Condition] = Field(default_factory=list)


class _ServiceExportBase(KubeObject):
    model_config = _TOLERANT
    GROUP: ClassVar[str] = MCS_GROUP
    KIND: ClassVar[str] = "ServiceExport"
    PLURAL: ClassVar[str] = "serviceexports"
    NAMESPACED: ClassVar[bool] = True
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ("svcex", "svcexport")
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (AGE_COLUMN,)
    STATUS_SUBRESOURCE: ClassVar[bool] = True

    spec: ServiceExportSpec | None = None
    status: ServiceExportStatus | None = None


class ServiceExportV1alpha1(_ServiceExportBase):
    """ServiceExport declares that the Service of the same namespace/name is
    consumable from the other clusters of the ClusterSet."""

    VERSION: ClassVar[str] = "v1alpha1"
    STORAGE: ClassVar[bool] = False


class ServiceExportV1beta1(_ServiceExportBase):
    """ServiceExport declares that the Service of the same namespace/name is
    consumable from the other clusters of the ClusterSet."""

    VERSION: ClassVar[str] = "v1beta1"
    STORAGE: ClassVar[bool] = True


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


class ServiceImportStatusV1alpha1(KubeModel):
    model_config = _TOLERANT

    clusters: list[ServiceImportClusterStatus] = Field(default_factory=list)
    conditions: list[Condition] = Field(default_factory=list)


class ServiceImportStatusV1beta1(ServiceImportStatusV1alpha1):
    endpoint_slice_objects: Literal["Present", "Absent"] | None = Field(default=None, alias="endpointSliceObjects")


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
