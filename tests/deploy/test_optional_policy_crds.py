"""deploy/optional: Antrea's policy CRDs and default Tiers, generated from mcapi/crds/antrea_policy.py,
for member clusters without Antrea; never applied by default. Applied with kubectl on a sandbox
and on a real kube-apiserver, they take Antrea's ClusterNetworkPolicies as the user guide writes
them, whole."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import yaml

from hack.gen_crds import DEFAULT_TIERS, OPTIONAL_DIR, POLICY_CRDS, optional_files
from tests.deploy.conftest import DeployCluster
from tests.deploy.kubectl import Kubectl, needs_kubectl

REPO = Path(__file__).resolve().parents[2]
CRDS = OPTIONAL_DIR / POLICY_CRDS
TIERS = OPTIONAL_DIR / DEFAULT_TIERS
GUIDE_ACNP = {
    "apiVersion": "crd.antrea.io/v1beta1",
    "kind": "ClusterNetworkPolicy",
    "metadata": {"name": "strict-namespace-isolation"},
    "spec": {
        "priority": 1,
        "tier": "securityops",
        "appliedTo": [{"namespaceSelector": {}}],
        "ingress": [
            {
                "action": "Pass",
                "from": [{"namespaces": {"match": "Self"}}, {"podSelector": {"matchLabels": {"k8s-app": "kube-dns"}}}],
            },
            {"action": "Drop", "from": [{"namespaceSelector": {}, "scope": "ClusterSet"}]},
        ],
        "egress": [
            {
                "action": "Drop",
                "toServices": [{"name": "secured-service", "namespace": "svc", "scope": "ClusterSet"}],
            }
        ],
    },
}


def test_the_optional_manifests_are_generated_from_the_models() -> None:
    for name, text in optional_files().items():
        assert (OPTIONAL_DIR / name).read_text() == text, f"run: python hack/gen_crds.py ({name})"


def test_the_default_tiers_are_antreas() -> None:
    tiers = {d["metadata"]["name"]: d["spec"]["priority"] for d in yaml.safe_load_all(TIERS.read_text()) if d}
    assert tiers == {
        "emergency": 50,
        "securityops": 100,
        "networkops": 150,
        "platform": 200,
        "application": 250,
        "baseline": 253,
    }


def test_nothing_applies_them_by_default() -> None:
    shipped = [
        *(REPO / "deploy" / "crds").glob("*"),
        *(REPO / "deploy" / "build").glob("*"),
        *(REPO / "deploy" / "config").rglob("*"),
    ]
    for path in shipped:
        if path.is_file():
            text = path.read_text()
            assert "crd.antrea.io/v1beta1" not in text and "deploy/optional" not in text and "optional/" not in text, (
                path
            )


@pytest.fixture
async def with_policy_crds(deploy_cluster: DeployCluster) -> AsyncIterator[Kubectl]:
    kubectl = deploy_cluster.kubectl()
    try:
        yield kubectl
    finally:  # the real cluster is shared: the CRDs go, and their objects with them
        await kubectl("delete", "--ignore-not-found", "--wait=false", "-f", str(CRDS))


@needs_kubectl
async def test_kubectl_applies_them_as_the_header_says_and_they_keep_an_acnp_whole(
    with_policy_crds: Kubectl,
) -> None:
    kubectl = with_policy_crds
    (await kubectl("apply", "-f", str(CRDS))).check()
    (await kubectl("wait", "--for", "condition=Established", "--timeout=60s", "-f", str(CRDS))).check()
    (await kubectl("apply", "-f", str(TIERS))).check()

    listed = (await kubectl("get", "tiers", "-o", "json")).check()
    priorities = {t["metadata"]["name"]: t["spec"]["priority"] for t in json.loads(listed.stdout)["items"]}
    assert priorities.items() >= {"securityops": 100, "baseline": 253}.items()
    (await kubectl("apply", "-f", "-", stdin=json.dumps(GUIDE_ACNP))).check()
    stored = json.loads((await kubectl("get", "acnp", "strict-namespace-isolation", "-o", "json")).check().stdout)
    assert stored["spec"] == GUIDE_ACNP["spec"]
    table = (await kubectl("get", "clusternetworkpolicies")).check().stdout.splitlines()
    assert table[0].split()[:3] == ["NAME", "TIER", "PRIORITY"]

    bad = {**GUIDE_ACNP, "metadata": {"name": "bad"}, "spec": {"priority": 0, "ingress": [{"action": "Deny"}]}}
    refused = await kubectl("apply", "-f", "-", stdin=json.dumps(bad))
    assert refused.code != 0
    assert "priority" in refused.stderr and "action" in refused.stderr
