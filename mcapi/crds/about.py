"""About API (about.k8s.io, KEP-2149): ClusterProperty, cluster-scoped, v1alpha1 and v1beta1
(the storage version), as kubernetes-sigs/about-api serves them.

A ClusterProperty is one fact about the cluster it lives in, named by metadata.name, its value
in ``spec.value``. Two names are well known: ``cluster.clusterset.k8s.io`` (the cluster's ID,
unique in its ClusterSet and immutable while it is a member) and ``clusterset.k8s.io`` (the
ClusterSet's ID, present only while the cluster is a member).
"""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from mcapi.crds.base import AGE_COLUMN, KubeModel, KubeObject, PrinterColumn
from mcapi.names import ABOUT_GROUP

PROPERTY_CLUSTER_ID = "cluster.clusterset.k8s.io"
PROPERTY_CLUSTER_SET = "clusterset.k8s.io"


class ClusterPropertySpec(KubeModel):
    value: str = Field(min_length=1, description="The property's value (property-dependent).")


class ClusterPropertyStatus(KubeModel):
    """Empty: nothing reports on a ClusterProperty."""


class _ClusterPropertyBase(KubeObject):
    GROUP: ClassVar[str] = ABOUT_GROUP
    KIND: ClassVar[str] = "ClusterProperty"
    PLURAL: ClassVar[str] = "clusterproperties"
    NAMESPACED: ClassVar[bool] = False
    CATEGORIES: ClassVar[tuple[str, ...]] = ("multicluster",)
    STATUS_SUBRESOURCE: ClassVar[bool] = True
    # about.k8s.io is a protected group: its CRD names the KEP that approved it.
    CRD_ANNOTATIONS: ClassVar[tuple[tuple[str, str], ...]] = (
        ("api-approved.kubernetes.io", "https://github.com/kubernetes/enhancements/pull/3084"),
    )
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = (
        PrinterColumn("value", ".spec.value"),
        PrinterColumn("age", AGE_COLUMN.json_path, AGE_COLUMN.type),
    )

    spec: ClusterPropertySpec
    status: ClusterPropertyStatus | None = None


class ClusterPropertyV1alpha1(_ClusterPropertyBase):
    """ClusterProperty stores one identification-related fact about this cluster."""

    VERSION: ClassVar[str] = "v1alpha1"
    STORAGE: ClassVar[bool] = False


class ClusterPropertyV1beta1(_ClusterPropertyBase):
    """ClusterProperty stores one identification-related fact about this cluster."""

    VERSION: ClassVar[str] = "v1beta1"
    STORAGE: ClassVar[bool] = True
