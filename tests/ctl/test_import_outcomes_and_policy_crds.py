"""mcctl shows how members fared applying imports (`get resourceimport`: a note per failure,
`-o wide` an OUTCOMES column), and `diagnose` says when a member lacks Antrea's policy CRDs."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from kube.resources import CRDS
from mcapi import names
from mcapi.resources import RESOURCE_IMPORTS
from tests.ctl.conftest import Cluster, Mcctl
from tests.kubeenv.cluster import ensure_namespace

NS = names.DEFAULT_LEADER_NAMESPACE
OPTIONAL = Path(__file__).resolve().parents[2] / "deploy" / "optional"
TIER_MISSING = "ACNP Tier random does not exist in the importing cluster test-cluster-west"


async def _policy_import_with_outcomes(leader: Cluster) -> None:
    await ensure_namespace(leader.client, NS)
    body = {
        "metadata": {"name": "strict-antreaclusternetworkpolicy", "namespace": NS},
        "spec": {"name": "strict", "kind": "AntreaClusterNetworkPolicy", "clusternetworkpolicy": {"tier": "random"}},
    }
    await leader.client.create(RESOURCE_IMPORTS, body, NS)
    status = {
        "clusterStatuses": [
            {
                "clusterID": cluster,
                "conditions": [
                    {
                        "type": "Succeeded",
                        "status": "True" if ok else "False",
                        "reason": reason,
                        "message": message,
                        "lastTransitionTime": "2026-01-01T00:00:00Z",
                    }
                ],
            }
            for cluster, ok, reason, message in (
                ("test-cluster-east", True, "Succeeded", ""),
                ("test-cluster-west", False, "TierNotFound", TIER_MISSING),
            )
        ]
    }
    await leader.client.patch_status(RESOURCE_IMPORTS, "strict-antreaclusternetworkpolicy", {"status": status}, NS)


async def test_get_resourceimport_notes_each_member_that_could_not_apply_an_import(
    mcctl: Mcctl, leader: Cluster
) -> None:
    await _policy_import_with_outcomes(leader)

    table = await mcctl("get", "resourceimport", "--kubeconfig", leader.kubeconfig)
    assert table.code == 0, table.err
    assert table.header() == ["NAMESPACE", "NAME", "KIND"]  # antctl's columns stay
    assert f"test-cluster-west could not apply strict-antreaclusternetworkpolicy: {TIER_MISSING}" in table.err

    wide = await mcctl("get", "resourceimport", "-o", "wide", "--kubeconfig", leader.kubeconfig)
    assert wide.code == 0, wide.err
    assert wide.header() == ["NAMESPACE", "NAME", "KIND", "OUTCOMES"]
    assert wide.out.splitlines()[-1].split() == [
        NS,
        "strict-antreaclusternetworkpolicy",
        "AntreaClusterNetworkPolicy",
        "test-cluster-east=Succeeded,test-cluster-west=TierNotFound",
    ]
    as_json = await mcctl("get", "resourceimport", "-o", "json", "--kubeconfig", leader.kubeconfig)
    assert json.loads(as_json.out)[0]["status"]["clusterStatuses"][1]["conditions"][0]["message"] == TIER_MISSING
    assert "could not apply" not in as_json.err


async def test_diagnose_says_when_a_member_lacks_antreas_policy_crds(
    mcctl: Mcctl, member: Cluster, tmp_path: Path
) -> None:
    without = await mcctl(
        "diagnose", "--member-kubeconfig", member.kubeconfig, "--output-dir", tmp_path / "before", "-o", "json"
    )
    assert without.code == 0, without.err
    [before] = [c for c in json.loads(without.out)["collected"] if c["item"] == "Antrea policy CRDs"]
    assert "missing clusternetworkpolicies.crd.antrea.io" in before["note"]
    assert "deploy/optional/antrea-policy-crds.yml" in before["note"]

    for crd in yaml.safe_load_all((OPTIONAL / "antrea-policy-crds.yml").read_text()):
        await member.client.create(CRDS, crd)
    with_crds = await mcctl(
        "diagnose", "--member-kubeconfig", member.kubeconfig, "--output-dir", tmp_path / "after", "-o", "json"
    )
    [after] = [c for c in json.loads(with_crds.out)["collected"] if c["item"] == "Antrea policy CRDs"]
    assert after["note"].startswith("served")
    assert any((tmp_path / "after").rglob("antrea-policy.yaml"))
