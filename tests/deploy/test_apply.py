"""Every rendered manifest with the real kubectl: a server-side dry run, an apply that
establishes the CRDs and is idempotent, and a delete that leaves nothing of ours behind.

Each step on a sandbox, per manifest; then on a real kube-apiserver, which validates RBAC, the
Deployments, the DaemonSet, probes and security contexts for real, and whose controllers make
ReplicaSets, Pods and revisions the uninstall must take away too: here the member's and the
agent's manifests, in kube-system (the leader's, which brings its Namespace, in
test_leader_install.py, so the shared cluster deletes that Namespace only once)."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from tests.deploy import manifests
from tests.deploy.conftest import DeployCluster
from tests.deploy.installed import leftovers, made_by_controllers, wait_nothing_made_by_controllers
from tests.deploy.kubectl import Kubectl, needs_kubectl

pytestmark = [pytest.mark.kubectl, needs_kubectl]

LEADER_NAMESPACE = "antrea-multicluster"
HUB_TLS_PATCH = manifests.ROOT / "deploy" / "config" / "components" / "hub-tls" / "patch.yaml"


async def prepare(kubectl: Kubectl, manifest: Path) -> None:
    """What the user guide has users do before applying: create the leader Namespace."""
    if manifest in (manifests.LEADER, manifests.LEADER_TLS, manifests.LEADER_NAMESPACED):
        (await kubectl("create", "namespace", LEADER_NAMESPACE)).check()


@pytest.mark.parametrize("manifest", manifests.ALL, ids=lambda p: p.name)
async def test_a_rendered_manifest_passes_a_server_side_dry_run(kubectl: Kubectl, manifest: Path) -> None:
    await prepare(kubectl, manifest)
    result = (await kubectl("apply", "--dry-run=server", "-f", str(manifest))).check()
    objects = manifests.load(manifest)
    assert result.stdout.count("(server dry run)") == len(objects)
    # A dry run creates nothing.
    refs = [ref for ref in manifests.refs(objects) if ref.kind != "Namespace"]
    assert await leftovers(kubectl, refs) == []


@pytest.mark.parametrize("manifest", manifests.ALL, ids=lambda p: p.name)
async def test_a_rendered_manifest_applies_then_deletes_without_leaving_anything_behind(
    kubectl: Kubectl, manifest: Path
) -> None:
    await prepare(kubectl, manifest)
    if manifest == manifests.AGENT:
        # The agent's kinds come with the member manifest.
        (await kubectl("apply", "-f", str(manifests.MEMBER))).check()
    objects = manifests.load(manifest)
    refs = manifests.refs(objects)

    (await kubectl("apply", "-f", str(manifest))).check()
    assert await leftovers(kubectl, refs) == [f"{ref.kind} {ref.name}" for ref in refs]
    crds = [ref.name for ref in refs if ref.kind == "CustomResourceDefinition"]
    if crds:
        (await kubectl("wait", "--for=condition=Established", "--timeout=20s", *[f"crd/{n}" for n in crds])).check()
    again = (await kubectl("apply", "-f", str(manifest))).check()
    assert again.stdout.count(" unchanged") == len(objects), again.stdout

    # --ignore-not-found: deleting the Namespace removes what is in it before
    # kubectl gets to those objects (as on a real cluster, sometimes).
    (await kubectl("delete", "-f", str(manifest), "--ignore-not-found", "--wait=true")).check()
    assert await leftovers(kubectl, refs) == []
    if manifest == manifests.AGENT:
        (await kubectl("delete", "-f", str(manifests.MEMBER), "--ignore-not-found")).check()


@pytest.mark.skipif(shutil.which("sed") is None, reason="the sed binary is not installed")
async def test_the_user_guides_sed_recipe_installs_the_namespaced_leader_in_another_namespace(
    kubectl: Kubectl,
) -> None:
    namespace = manifests.ELSEWHERE_NAMESPACE
    (await kubectl("create", "namespace", namespace)).check()
    sed = await asyncio.create_subprocess_exec(
        "sed", f"s/antrea-multicluster/{namespace}/g", str(manifests.LEADER_NAMESPACED),
        stdout=asyncio.subprocess.PIPE,
    )  # fmt: skip
    rewritten, _ = await sed.communicate()
    assert sed.returncode == 0
    text = rewritten.decode()
    assert "antrea-multicluster" not in text

    (await kubectl("apply", "-f", "-", stdin=text)).check()
    objects = manifests.load(manifests.LEADER_NAMESPACED, text)
    assert {o["metadata"].get("namespace") for o in objects if o["kind"] not in _CLUSTER_SCOPED} == {namespace}
    binding = manifests.find(objects, "ClusterRoleBinding", f"{namespace}-mchub-hub")
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": "mchub-hub", "namespace": namespace}]
    role = manifests.find(objects, "ClusterRole", f"{namespace}-mchub-hub")
    assert {"namespaces"} <= {
        r for rule in role["rules"] for r in rule["resources"] if namespace in rule.get("resourceNames", [])
    }
    deployment = (await kubectl("get", "deployment/mchub-hub", "-n", namespace, "-o", "name")).check()
    assert deployment.stdout.strip() == "deployment.apps/mchub-hub"

    refs = manifests.refs(objects)
    (await kubectl("delete", "-f", "-", "--ignore-not-found", stdin=text)).check()
    assert await leftovers(kubectl, refs) == []
    (await kubectl("delete", "namespace", namespace)).check()


async def test_the_hub_tls_patch_makes_every_replica_serve_the_secrets_certificate(kubectl: Kubectl) -> None:
    (await kubectl("apply", "-f", str(manifests.LEADER))).check()
    (
        await kubectl(
            "-n", LEADER_NAMESPACE, "patch", "deployment", "mchub-hub", "--type", "json",
            "--patch-file", str(HUB_TLS_PATCH),
        )
    ).check()  # fmt: skip
    args = (
        await kubectl(
            "-n", LEADER_NAMESPACE, "get", "deployment", "mchub-hub",
            "-o", "jsonpath={.spec.template.spec.containers[0].args}",
        )
    ).check()  # fmt: skip
    assert "--tls-cert=/etc/mchub/tls/tls.crt" in args.stdout
    assert "--tls-key=/etc/mchub/tls/tls.key" in args.stdout
    volumes = (
        await kubectl(
            "-n", LEADER_NAMESPACE, "get", "deployment", "mchub-hub",
            "-o", "jsonpath={.spec.template.spec.volumes[*].secret.secretName}",
        )
    ).check()  # fmt: skip
    assert volumes.stdout.split() == ["mchub-hub-tls"]
    (await kubectl("delete", "-f", str(manifests.LEADER), "--ignore-not-found")).check()
    assert await leftovers(kubectl, manifests.refs(manifests.load(manifests.LEADER))) == []


async def test_on_a_real_cluster_the_member_and_agent_manifests_install_and_uninstall_leaving_nothing(
    real_north: DeployCluster,
) -> None:
    kubectl = real_north.kubectl()
    installed = (manifests.MEMBER, manifests.AGENT)
    files = [arg for path in installed for arg in ("-f", str(path))]
    refs = [ref for path in installed for ref in manifests.refs(manifests.load(path))]
    # The session installed the mchub CRDs; nothing else of ours is there.
    crds = [f"{ref.kind} {ref.name}" for ref in refs if ref.kind == "CustomResourceDefinition"]
    assert await leftovers(kubectl, refs) == crds

    result = (await kubectl("apply", "--dry-run=server", *files)).check()
    assert result.stdout.count("(server dry run)") == len(refs)
    assert await leftovers(kubectl, refs) == crds

    (await kubectl("apply", *files)).check()
    assert await leftovers(kubectl, refs) == [f"{ref.kind} {ref.name}" for ref in refs]
    again = (await kubectl("apply", *files)).check()
    assert again.stdout.count(" unchanged") == len(refs), again.stdout
    # The controllers took the workloads in hand (no Node runs their Pods here).
    made = " ".join(await made_by_controllers(kubectl))
    assert "replicaset.apps/mchub-member-" in made and "controllerrevision.apps/mchub-agent-" in made, made

    # The user guide's uninstall of a member.
    (await kubectl("delete", *files, "--ignore-not-found", "--wait=true")).check()
    assert await leftovers(kubectl, refs) == []
    await wait_nothing_made_by_controllers(kubectl)


_CLUSTER_SCOPED = {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}
