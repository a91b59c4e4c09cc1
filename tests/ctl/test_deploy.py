"""`deploy leadercluster|membercluster`: manifests applied object by object, created or updated."""

from __future__ import annotations

from pathlib import Path

import yaml

from kube.resources import CONFIG_MAPS, CRDS, NAMESPACES, SERVICE_ACCOUNTS
from tests.ctl.conftest import Cluster, Mcctl

NS = "antrea-multicluster"
CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.io"},
    "spec": {
        "group": "example.io",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [{"name": "v1", "served": True, "storage": True,
                      "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
    },
}  # fmt: skip


def manifest(path: Path, setting: str) -> Path:
    docs = [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "hub", "namespace": NS}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "hub-config", "namespace": NS},
         "data": {"setting": setting}},
        CRD,
        {"apiVersion": "example.io/v1", "kind": "Widget", "metadata": {"name": "w", "namespace": NS}},
    ]  # fmt: skip
    path.write_text(yaml.safe_dump_all(docs))
    return path


async def test_deploy_creates_then_updates_only_what_changed_in_the_chosen_namespace(
    mcctl: Mcctl, leader: Cluster, tmp_path: Path
) -> None:
    first = await mcctl("deploy", "leadercluster", "-f", manifest(tmp_path / "a.yml", "one"), "-n", "mc-leader",
                        "--kubeconfig", leader.kubeconfig)  # fmt: skip
    assert first.code == 0, first.err
    assert "ConfigMap mc-leader/hub-config created" in first.out
    assert "Widget mc-leader/w created" in first.out
    await leader.client.get(NAMESPACES, "mc-leader")
    await leader.client.get(SERVICE_ACCOUNTS, "hub", "mc-leader")

    second = await mcctl("deploy", "leadercluster", "-f", manifest(tmp_path / "b.yml", "two"), "-n", "mc-leader",
                         "--kubeconfig", leader.kubeconfig)  # fmt: skip
    assert second.code == 0, second.err
    assert "ConfigMap mc-leader/hub-config updated" in second.out
    assert "ServiceAccount mc-leader/hub unchanged" in second.out
    assert (await leader.client.get(CONFIG_MAPS, "hub-config", "mc-leader"))["data"] == {"setting": "two"}
    await leader.client.delete(CRDS, "widgets.example.io")
    await leader.client.delete(NAMESPACES, "mc-leader")


async def test_deploy_without_the_manifest_fails_with_what_to_do(mcctl: Mcctl, leader: Cluster, tmp_path: Path) -> None:
    ran = await mcctl("deploy", "membercluster", "-f", tmp_path / "absent.yml", "--kubeconfig", leader.kubeconfig)
    assert ran.code == 1
    assert "does not exist" in ran.err and "-f PATH" in ran.err


async def test_deploy_applies_the_shipped_leader_and_member_manifests(mcctl: Mcctl, leader: Cluster) -> None:
    """The default files in deploy/build: every object lands, and a second deploy changes nothing."""
    for target in ("leadercluster", "membercluster"):
        first = await mcctl("deploy", target, "--kubeconfig", leader.kubeconfig)
        assert first.code == 0, first.err
        assert " created" in first.out
        again = await mcctl("deploy", target, "--kubeconfig", leader.kubeconfig)
        assert again.code == 0, again.err
        assert " created" not in again.out and " updated" not in again.out, again.out
    hub_sa = await leader.client.get(SERVICE_ACCOUNTS, "antrea-mc-member-access-sa", NS)
    assert hub_sa["metadata"]["annotations"]["multicluster.antrea.io/cluster-id"] == "*"
    config = await leader.client.get(CONFIG_MAPS, "antrea-mc-controller-config", "kube-system")
    assert "controller_manager_config.yaml" in config["data"]
