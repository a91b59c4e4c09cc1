"""The real control plane the suite runs on: what it is, and that it is real."""

from __future__ import annotations

import json

from tests.kubeenv.envtest import CLUSTER_NAMES, RealCluster


def test_every_cluster_is_a_real_v1_28_apiserver_with_the_mchub_crds(real_clusters: dict[str, RealCluster]) -> None:
    assert set(real_clusters) == set(CLUSTER_NAMES)
    for cluster in real_clusters.values():
        version = json.loads(cluster.kubectl("version", "-o", "json"))
        assert version["serverVersion"]["gitVersion"] == "v1.28.7"
        crds = cluster.kubectl("get", "crd", "-o", "name")
        assert "customresourcedefinition.apiextensions.k8s.io/resourceexports.multicluster.crd.antrea.io" in crds


def test_the_controllers_run_so_service_account_tokens_are_filled(real_clusters: dict[str, RealCluster]) -> None:
    cluster = real_clusters["leader"]
    # The default ServiceAccount exists only when kube-controller-manager runs.
    found = cluster.kubectl("get", "serviceaccount", "default", "-n", "default", "-o", "name")
    assert "serviceaccount/default" in found
