"""Every rendered manifest against a sandbox cluster, with the real kubectl: a server-side
dry run, an apply that establishes the CRDs and is idempotent, and a delete that leaves
nothing of ours behind."""

from __future__ import annotations

import asyncio
import shutil
from pathlib import Path

import pytest

from tests.deploy import manifests
from tests.deploy.kubectl import Kubectl, needs_kubectl

pytestmark = [pytest.mark.kubectl, needs_kubectl]

LEADER_NAMESPACE = "antrea-multicluster"
HUB_TLS_PATCH = manifests.ROOT / "deploy" / "config" / "components" / "hub-tls" / "patch.yaml"


async def leftovers(kubectl: Kubectl, refs: list[manifests.Ref]) -> list[str]:
    """The objects of `refs` that still exist."""
    existing: set[str] = set()
    for args in manifests.get_args(refs):
        existing.update((await kubectl(*args)).check().stdout.split())
    return [f"{ref.kind} {ref.name}" for ref in refs if _printed_name(ref) in existing]


def _printed_name(ref: manifests.Ref) -> str:
    """`kubectl get -o name` prints core kinds without a group: `serviceaccount/x`, `role.rbac.../x`."""
    group = ref.plural.partition(".")[2]
    return f"{ref.kind.lower()}{'.' + group if group else ''}/{ref.name}"


async def prepare(kubectl: Kubectl, manifest: Path) -> None:
    """What the user guide has users do before applying: create the leader Namespace."""
    if manifest in (manifests.LEADER, manifests.LEADER_NAMESPACED):
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
    namespace = "mc-leader-elsewhere"
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


_CLUSTER_SCOPED = {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}
