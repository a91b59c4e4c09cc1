"""One realistic object per served CRD version, as users write or Antrea writes them
(shared by the model and CRD tests)."""

from __future__ import annotations

from typing import Any

from mcapi import crds

SAMPLES: dict[type[crds.KubeObject], dict[str, Any]] = {
    crds.ClusterSetV1alpha1: {
        "apiVersion": "multicluster.crd.antrea.io/v1alpha1",
        "kind": "ClusterSet",
        "metadata": {"name": "test-clusterset", "namespace": "antrea-multicluster"},
        "spec": {
            "leaders": [{"clusterID": "test-cluster-leader"}],
            "members": [
                {"clusterID": "test-cluster-east", "serviceAccount": "member-east-access-sa"},
                {"clusterID": "test-cluster-west", "serviceAccount": "member-west-access-sa"},
            ],
            "namespace": "antrea-multicluster",
        },
    },
    crds.ClusterSet: {
        "apiVersion": "multicluster.crd.antrea.io/v1alpha2",
        "kind": "ClusterSet",
        "metadata": {"name": "test-clusterset", "namespace": "kube-system", "generation": 2},
        "spec": {
            "clusterID": "test-cluster-east",
            "leaders": [
                {
                    "clusterID": "test-cluster-leader",
                    "secret": "member-east-token",
                    "server": "https://172.18.0.1:6443",
                }
            ],
            "namespace": "antrea-multicluster",
        },
        "status": {
            "totalClusters": 2,
            "readyClusters": 1,
            "observedGeneration": 2,
            "conditions": [
                {"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"},
            ],
            "clusterStatuses": [
                {
                    "clusterID": "test-cluster-leader",
                    "conditions": [
                        {"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"},
                        {"type": "IsLeader", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"},
                    ],
                }
            ],
        },
    },
    crds.ClusterClaimV1alpha1: {
        "apiVersion": "multicluster.crd.antrea.io/v1alpha1",
        "kind": "ClusterClaim",
        "metadata": {"name": "east-membercluster-id", "namespace": "kube-system"},
        "name": "id.k8s.io",
        "value": "test-cluster-east",
    },
    crds.ClusterClaim: {
        "apiVersion": "multicluster.crd.antrea.io/v1alpha2",
        "kind": "ClusterClaim",
        "metadata": {"name": "id.k8s.io", "namespace": "kube-system"},
        "value": "test-cluster-east",
    },
    crds.MemberClusterAnnounce: {
        "apiVersion": "multicluster.crd.antrea.io/v1alpha1",
        "kind": "MemberClusterAnnounce",
        "metadata": {
            "name": "member-announce-from-test-cluster-east",
            "namespace": "antrea-multicluster",
            "annotations": {"touch-ts": "2024-05-01T10:00:00Z"},
        },
        "clusterID": "test-cluster-east",
        "clusterSetID": "test-clusterset",
        "leaderClusterID": "test-cluster-leader",
    },
    crds.ResourceExport: {
        "apiVersion": "multicluster.crd.antrea.io/v1alpha1",
        "kind": "ResourceExport",
        "metadata": {
            "name": "test-cluster-east-default-nginx-service",
            "namespace": "antrea-multicluster",
            "labels": {
                "sourceClusterID": "test-cluster-east",
                "sourceKind": "Service",
                "sourceName": "nginx",
                "sourceNamespace": "default",
            },
            "finalizers": ["resourceexport.antrea.io/finalizer"],
        },
        "spec": {
            "clusterID": "test-cluster-east",
            "kind": "Service",
            "name": "nginx",
            "namespace": "default",
            "service": {
                "serviceSpec": {
                    "type": "ClusterIP",
                    "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"}],
                    "selector": {"app": "nginx"},
                    "clusterIP": "10.96.10.10",
                }
            },
        },
        "status": {"conditions": [{"type": "Succeeded", "status": "True"}]},
    },
    crds.ResourceImport: {
        "apiVersion": "multicluster.crd.antrea.io/v1alpha1",
        "kind": "ResourceImport",
        "metadata": {"name": "default-nginx-service", "namespace": "antrea-multicluster"},
        "spec": {
            "clusterID": ["test-cluster-east", "test-cluster-west"],
            "kind": "ServiceImport",
            "name": "nginx",
            "namespace": "default",
            "serviceImport": {
                "spec": {
                    "type": "ClusterSetIP",
                    "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
                    "sessionAffinity": "None",
                }
            },
        },
        "status": {
            "clusterStatuses": [
                {"clusterID": "test-cluster-east", "conditions": [{"type": "Succeeded", "status": "True"}]}
            ]
        },
    },
    crds.Gateway: {
        "apiVersion": "multicluster.crd.antrea.io/v1alpha1",
        "kind": "Gateway",
        "metadata": {"name": "k8s-node-1", "namespace": "kube-system"},
        "gatewayIP": "10.17.27.55",
        "internalIP": "10.17.27.55",
        "serviceCIDR": "10.96.0.0/12",
        "wireGuard": {"publicKey": "key"},
    },
    crds.ClusterInfoImport: {
        "apiVersion": "multicluster.crd.antrea.io/v1alpha1",
        "kind": "ClusterInfoImport",
        "metadata": {"name": "test-cluster-west-clusterinfo", "namespace": "kube-system"},
        "spec": {
            "clusterID": "test-cluster-west",
            "gatewayInfos": [{"gatewayIP": "172.18.0.3"}],
            "serviceCIDR": "10.96.0.0/12",
            "podCIDRs": ["10.244.0.0/16"],
        },
        "status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2024-05-01T10:00:00Z"}]},
    },
    crds.LabelIdentity: {
        "apiVersion": "multicluster.crd.antrea.io/v1alpha1",
        "kind": "LabelIdentity",
        "metadata": {"name": "6b3c5a1f1e0a9b2c"},
        "spec": {"label": "ns:kubernetes.io/metadata.name=kube-system&pod:app=db", "id": 12},
    },
    crds.ServiceExportV1alpha1: {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ServiceExport",
        "metadata": {"name": "nginx", "namespace": "default"},
    },
    crds.ServiceExportV1beta1: {
        "apiVersion": "multicluster.x-k8s.io/v1beta1",
        "kind": "ServiceExport",
        "metadata": {"name": "nginx", "namespace": "default"},
        "spec": {
            "clusterSelectors": [
                {
                    "propertySelector": {
                        "matchExpressions": [
                            {"key": "cluster.clusterset.k8s.io", "operator": "In", "values": ["@SameAsImporter@"]}
                        ]
                    }
                },
                {"propertySelector": {"matchProperties": {"region.topology.k8s.io": "@SameAsImporter@"}}},
            ]
        },
        "status": {
            "clusters": [{"cluster": "test-cluster-east"}],
            "conditions": [
                {
                    "type": "Valid",
                    "status": "True",
                    "reason": "Valid",
                    "message": "",
                    "lastTransitionTime": "2024-05-01T10:00:00Z",
                    "observedGeneration": 1,
                }
            ],
        },
    },
    crds.ServiceImportV1alpha1: {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ServiceImport",
        "metadata": {"name": "nginx", "namespace": "default"},
        "spec": {"type": "ClusterSetIP", "ips": ["10.96.200.1"], "ports": [{"port": 80, "protocol": "TCP"}]},
        "status": {"clusters": [{"cluster": "test-cluster-east"}]},
    },
    crds.ServiceImportV1beta1: {
        "apiVersion": "multicluster.x-k8s.io/v1beta1",
        "kind": "ServiceImport",
        "metadata": {"name": "nginx", "namespace": "default"},
        "spec": {
            "type": "Headless",
            "ports": [],
            "ipFamilies": ["IPv4"],
            "internalTrafficPolicy": "Cluster",
            "trafficDistribution": "PreferClose",
            "clusterSelectors": [
                {"propertySelector": {"matchProperties": {"region.topology.k8s.io": "@SameAsImporter@"}}},
            ],
        },
        "status": {
            "clusters": [{"cluster": "test-cluster-east"}, {"cluster": "test-cluster-west"}],
            "endpointSliceObjects": "Present",
            "observedGeneration": 3,
            "clusterSelectorResults": [{"clusters": ["test-cluster-east"]}],
        },
    },
    crds.ClusterPropertyV1alpha1: {
        "apiVersion": "about.k8s.io/v1alpha1",
        "kind": "ClusterProperty",
        "metadata": {"name": "cluster.clusterset.k8s.io"},
        "spec": {"value": "test-cluster-east"},
    },
    crds.ClusterPropertyV1beta1: {
        "apiVersion": "about.k8s.io/v1beta1",
        "kind": "ClusterProperty",
        "metadata": {"name": "region.topology.k8s.io"},
        "spec": {"value": "eu-west-1"},
    },
    crds.ClusterProfile: {
        "apiVersion": "multicluster.x-k8s.io/v1alpha1",
        "kind": "ClusterProfile",
        "metadata": {
            "name": "test-cluster-east",
            "namespace": "antrea-multicluster",
            "labels": {"x-k8s.io/cluster-manager": "mchub"},
        },
        "spec": {"displayName": "test-cluster-east", "clusterManager": {"name": "mchub"}},
        "status": {
            "conditions": [
                {
                    "type": "ControlPlaneHealthy",
                    "status": "True",
                    "reason": "Healthy",
                    "message": "",
                    "lastTransitionTime": "2024-05-01T10:00:00Z",
                }
            ],
            "version": {"kubernetes": "v1.28.7"},
            "properties": [
                {
                    "name": "cluster.clusterset.k8s.io",
                    "value": "test-cluster-east",
                    "lastObservedTime": "2024-05-01T10:00:00Z",
                }
            ],
            "accessProviders": [{"name": "kubeconfig", "cluster": {"server": "https://172.18.0.3:6443"}}],
        },
    },
}


def test_every_served_kind_has_a_sample() -> None:
    assert set(SAMPLES) == set(crds.ALL_KINDS)
