"""The resource descriptors of the kinds mchub defines or shares with the MCS API.

Antrea Multi-cluster's kinds (group multicluster.crd.antrea.io) and the Multi-Cluster
Services API's (multicluster.x-k8s.io), as kube.resources.Resource, which is all the
generic client needs.
"""

from __future__ import annotations

from kube.resources import Resource
from mcapi.names import ABOUT_GROUP, GROUP, MCS_GROUP


def _mc(plural: str, kind: str, version: str = "v1alpha1", namespaced: bool = True) -> Resource:
    return Resource(GROUP, version, plural, kind, namespaced)


CLUSTER_SETS = _mc("clustersets", "ClusterSet", version="v1alpha2")
CLUSTER_SETS_V1ALPHA1 = _mc("clustersets", "ClusterSet")
CLUSTER_CLAIMS = _mc("clusterclaims", "ClusterClaim", version="v1alpha2")
CLUSTER_CLAIMS_V1ALPHA1 = _mc("clusterclaims", "ClusterClaim")
MEMBER_CLUSTER_ANNOUNCES = _mc("memberclusterannounces", "MemberClusterAnnounce")
RESOURCE_EXPORTS = _mc("resourceexports", "ResourceExport")
RESOURCE_IMPORTS = _mc("resourceimports", "ResourceImport")
GATEWAYS = _mc("gateways", "Gateway")
CLUSTER_INFO_IMPORTS = _mc("clusterinfoimports", "ClusterInfoImport")
LABEL_IDENTITIES = _mc("labelidentities", "LabelIdentity", namespaced=False)

SERVICE_EXPORTS = Resource(MCS_GROUP, "v1alpha1", "serviceexports", "ServiceExport", True)
SERVICE_IMPORTS = Resource(MCS_GROUP, "v1alpha1", "serviceimports", "ServiceImport", True)
SERVICE_EXPORTS_V1BETA1 = Resource(MCS_GROUP, "v1beta1", "serviceexports", "ServiceExport", True)
SERVICE_IMPORTS_V1BETA1 = Resource(MCS_GROUP, "v1beta1", "serviceimports", "ServiceImport", True)

# About API (KEP-2149), cluster-scoped; v1beta1 is the storage version.
CLUSTER_PROPERTIES = Resource(ABOUT_GROUP, "v1beta1", "clusterproperties", "ClusterProperty", False)
CLUSTER_PROPERTIES_V1ALPHA1 = Resource(ABOUT_GROUP, "v1alpha1", "clusterproperties", "ClusterProperty", False)
# Cluster Inventory API (KEP-4322), in the leader Namespace.
CLUSTER_PROFILES = Resource(MCS_GROUP, "v1alpha1", "clusterprofiles", "ClusterProfile", True)
