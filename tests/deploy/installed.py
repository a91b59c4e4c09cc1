"""What of the manifests exists in a cluster, and putting a shared real cluster back as it was.

The real cluster the deployment tests use is shared by the whole session, which installed the
mchub CRDs (deploy/crds) into it before any test ran. The manifests bring those same CRDs, so a
test's uninstall deletes them; `restore_real_cluster` then installs them again exactly as the
session did, after checking that nothing else of the manifests is left.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from pathlib import Path

from tests.deploy import manifests
from tests.deploy.kubectl import Kubectl

CRD_DIR = manifests.ROOT / "deploy" / "crds"
# Namespaces a test may delete; the cluster's own are never touched.
_SYSTEM_NAMESPACES = {"default", "kube-system", "kube-public", "kube-node-lease"}
# What the workloads' controllers make (ReplicaSets, Pods, DaemonSet revisions), by the pod labels.
_MADE_BY_CONTROLLERS = "replicasets.apps,pods,controllerrevisions.apps"
_WORKLOAD_SELECTOR = "component in (mchub-hub,mchub-member,mchub-agent)"
GONE_WITHIN = 60.0


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


async def made_by_controllers(kubectl: Kubectl) -> list[str]:
    """ReplicaSets, Pods and revisions the workloads' controllers made, in any Namespace."""
    args = ("get", _MADE_BY_CONTROLLERS, "-A", "-l", _WORKLOAD_SELECTOR, "-o", "name")
    return (await kubectl(*args)).check().stdout.split()


async def wait_nothing_made_by_controllers(kubectl: Kubectl, within: float = GONE_WITHIN) -> None:
    """The garbage collector removes them after their owners: wait for it."""
    deadline = time.monotonic() + within
    while left := await made_by_controllers(kubectl):
        assert time.monotonic() < deadline, f"left behind by the workloads' controllers: {left}"
        await asyncio.sleep(0.2)


async def restore_real_cluster(kubectl: Kubectl, paths: Iterable[Path], extra_namespaces: Iterable[str] = ()) -> None:
    """Remove what of the manifests at `paths` is left, check nothing is, put the session's CRDs back."""
    objects = [obj for path in paths for obj in manifests.load(path)]
    refs = [ref for ref in manifests.refs(objects) if ref.kind not in ("Namespace", "CustomResourceDefinition")]
    namespaces = {ref.namespace for ref in refs if ref.namespace}
    namespaces |= {obj["metadata"]["name"] for obj in objects if obj["kind"] == "Namespace"}
    namespaces = (namespaces | set(extra_namespaces)) - _SYSTEM_NAMESPACES

    # What a test that failed half-way left: the objects outside its Namespaces, then those.
    left = set(await leftovers(kubectl, refs))
    if namespaces:
        listed = await kubectl("get", "namespace", *sorted(namespaces), "--ignore-not-found", "-o", "name")
        left |= set(listed.check().stdout.split())
    if left:
        for ref in refs:
            if ref.namespace not in namespaces and f"{ref.kind} {ref.name}" in left:
                scope = ["-n", ref.namespace] if ref.namespace else []
                (await kubectl("delete", ref.type_name, *scope, "--ignore-not-found")).check()
        names = sorted(namespaces)
        (await kubectl("delete", "namespace", *names, "--ignore-not-found", "--wait=true")).check()
        assert await leftovers(kubectl, refs) == []
        gone = (await kubectl("get", "namespace", *names, "--ignore-not-found", "-o", "name")).check()
        assert gone.stdout.strip() == "", f"Namespaces still there: {gone.stdout.split()}"
    await wait_nothing_made_by_controllers(kubectl)

    # The session's CRDs, as it installed them (server-side, from deploy/crds).
    (await kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CRD_DIR))).check()
    (await kubectl("wait", "--for=condition=Established", "--timeout=60s", "-f", str(CRD_DIR))).check()
