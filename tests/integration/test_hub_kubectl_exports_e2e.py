"""The user guide's "ClusterNetworkPolicy Replication" end to end: a whole ClusterSet (hub and
members north, east, west, joined as the guide says), a ClusterSet admin running kubectl in
the leader, and the policy applied (or not, and why) in every member cluster.

- on "sandbox": sandbox clusters, the hub with its SQLite store mirroring into north, which is
  the leader as in the guide (mchub_cli.localset, `mirror=True`: what `make demo` runs);
- on "real": the session's real clusters, the hub with `--store kube` on the real `leader`
  (tests/e2e/realset.py).

east and west have Antrea's policy CRDs and default Tiers (deploy/optional); north has none,
so it reports why it cannot apply the policy, and the leader's ResourceImport says so.
"""

from __future__ import annotations

import asyncio
import functools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from kube.client import KubeClient
from kube.errors import NotFound
from mcapi.resources import RESOURCE_EXPORTS, RESOURCE_IMPORTS
from mchub_cli.localset import LocalClusterSet
from tests.deploy.kubectl import Kubectl, needs_kubectl
from tests.e2e.realset import RealClusterSet
from tests.e2e.test_label_identities import ACNP, install_policy_crds, remove_policy_crds
from tests.integration.test_hub_kubectl_exports import EXPORT, IMPORT, POLICY, guide_export

pytestmark = [needs_kubectl, pytest.mark.slow]

NORTH, EAST, WEST = "test-cluster-north", "test-cluster-east", "test-cluster-west"
WITHIN = 30.0


@pytest.fixture
async def clusterset(cluster_kind: str, request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Any]:
    local: LocalClusterSet
    if cluster_kind == "sandbox":
        local = LocalClusterSet(tmp_path / "set", mirror=True)
    else:
        local = RealClusterSet(tmp_path / "set", real=request.getfixturevalue("real_clusters"), kube_store=True)
    try:
        await local.start()
        yield local
    finally:
        await local.stop()


def leader_of(local: LocalClusterSet) -> tuple[Path, KubeClient]:
    """The leader cluster's kubeconfig and a client of it."""
    if isinstance(local, RealClusterSet):
        assert local._leader is not None
        return local.real["leader"].kubeconfig, local._leader
    return local.leader_cluster.kubeconfig, local.leader_cluster.client


async def until(probe: Callable[[], Awaitable[bool]], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        if await probe():
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{what}: not within {within}s")


async def has_policy(client: KubeClient) -> bool:
    try:
        policy = await client.get(ACNP, f"antrea-mc-{POLICY}")
    except NotFound:
        return False
    return bool(policy["spec"]["tier"] == "securityops")


async def test_the_guides_policy_applied_with_kubectl_reaches_every_member_and_goes_when_deleted(
    clusterset: LocalClusterSet, tmp_path: Path
) -> None:
    hub = clusterset.hub
    assert hub is not None
    ns = hub.config.namespace
    kubeconfig, leader = leader_of(clusterset)
    kubectl = Kubectl(kubeconfig, cache_dir=tmp_path / "kubectl-cache")
    members = {name: c.client for name, c in clusterset.clusters.items()}
    try:
        for name in (EAST, WEST):
            await install_policy_crds(members[name])
        (await kubectl("apply", "-f", "-", stdin=guide_export(ns))).check()

        for name in (EAST, WEST):
            await until(functools.partial(has_policy, members[name]), WITHIN, f"the policy in {name}")

        async def north_says_why() -> bool:
            try:
                imported = await leader.get(RESOURCE_IMPORTS, IMPORT, ns)
            except NotFound:  # members may have it before the leader's CR is written
                return False
            statuses = {s["clusterID"]: s for s in (imported.get("status") or {}).get("clusterStatuses") or []}
            north = statuses.get(NORTH, {}).get("conditions") or [{}]
            return bool(north[0].get("status") == "False" and north[0].get("reason") == "CRDNotInstalled")

        await until(north_says_why, WITHIN, "north's reason in the leader's ResourceImport")

        async def succeeded() -> bool:
            export = await leader.get(RESOURCE_EXPORTS, EXPORT, ns)
            return bool(((export.get("status") or {}).get("conditions") or [{}])[0].get("type") == "Succeeded")

        await until(succeeded, WITHIN, "the export's status Succeeded")

        # The guide's leader removal, step 1: delete the policy export; it leaves every member.
        (await kubectl("delete", "resourceexport", EXPORT, "-n", ns)).check()
        for name in (EAST, WEST):
            await until(functools.partial(lacks_policy, members[name]), WITHIN, f"the policy gone from {name}")

        async def import_gone() -> bool:
            try:
                await leader.get(RESOURCE_IMPORTS, IMPORT, ns)
            except NotFound:
                return True
            return False

        await until(import_gone, WITHIN, "the leader's ResourceImport gone")
    finally:
        for name in (EAST, WEST):
            await remove_policy_crds(members[name])


async def lacks_policy(client: KubeClient) -> bool:
    return not await has_policy(client)
