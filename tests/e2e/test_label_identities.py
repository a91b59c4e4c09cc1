"""Label identities across a ClusterSet (enableStretchedNetworkPolicy in every member), on
sandbox clusters and on real kube-apiservers (tests/e2e/conftest.py); and the guide's
ClusterNetworkPolicy replication into a member that lacks the policy's Tier.

A Pod's identity appears, as Antrea writes it, in every member as one cluster-scoped
LabelIdentity with one ID (the same everywhere); the last Pod of an identity going withdraws
it, one of two does not; a Namespace relabel swaps its identities; a member restart changes
nothing. Real clusters have no kubelet: their Pods stay Pending, and count all the same.

A replicated policy whose Tier a member lacks is reported (ACNPImportFailed, TierNotFound) and
shown by the hub; on the real set, whose hub keeps its state in the leader cluster (kube
store), `kubectl describe resourceimport` shows the Warning Event, which stops growing once
the Tier exists and the policy applies. The policy CRDs come from deploy/optional.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
import yaml
from google.protobuf.struct_pb2 import Struct

from hub.rest import shapes
from kube.client import KubeClient
from kube.errors import AlreadyExists, NotFound
from kube.resources import CONFIG_MAPS, CRDS, EVENTS, Resource
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import LABEL_IDENTITIES
from mchub_cli.localset import LocalClusterSet
from tests.e2e.conftest import new_clusterset
from tests.integration.hubclient import MemberFactory
from tests.member_identities.world import PodWorld, until

pytestmark = [pytest.mark.asyncio(loop_scope="module"), pytest.mark.slow]

NORTH, EAST, WEST = "test-cluster-north", "test-cluster-east", "test-cluster-west"
MEMBERS = (NORTH, EAST, WEST)
STRETCHED = (
    "apiVersion: multicluster.crd.antrea.io/v1alpha1\nkind: MultiClusterConfig\nenableStretchedNetworkPolicy: true\n"
)
# The member withdraws an identity 3 s after its last Pod went; the rest is propagation.
WITHIN = 30.0


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def stretched(
    cluster_kind: str, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[LocalClusterSet]:
    """Hub and three members, each with enableStretchedNetworkPolicy in its MultiClusterConfig."""
    local = new_clusterset(cluster_kind, request, tmp_path_factory.mktemp("stretched"), kube_store=True)
    try:
        await local.start(join=False)
        for name in MEMBERS:
            config = {
                "metadata": {"name": names.MC_CONTROLLER_CONFIGMAP, "namespace": local.member_namespace},
                "data": {names.MC_CONTROLLER_CONFIG_KEY: STRETCHED},
            }
            await local.clusters[name].client.create(CONFIG_MAPS, config, local.member_namespace)
            await local.join(name)
        yield local
    finally:
        for cluster in local.clusters.values():
            if cluster.member is not None:  # leave: the imported LabelIdentities go too
                await cluster.member.leave(withdraw=True)
        await local.stop()


@pytest_asyncio.fixture(loop_scope="module")
async def worlds(stretched: LocalClusterSet, cluster_kind: str) -> AsyncIterator[dict[str, PodWorld]]:
    made = {name: PodWorld(c.client, real=cluster_kind == "real") for name, c in stretched.clusters.items()}
    yield made
    for world in made.values():
        await world.close()


async def identity(client: KubeClient, label: str) -> dict[str, Any] | None:
    try:
        return await client.get(LABEL_IDENTITIES, names.label_hash(label))
    except NotFound:
        return None


async def ids_everywhere(local: LocalClusterSet, label: str) -> dict[str, int] | None:
    """The ID each member holds for the label; None until every member holds it."""
    found: dict[str, int] = {}
    for name, cluster in local.clusters.items():
        obj = await identity(cluster.client, label)
        if obj is None:
            return None
        assert obj["spec"]["label"] == label
        found[name] = int(obj["spec"]["id"])
    return found


async def wait_everywhere(local: LocalClusterSet, label: str) -> int:
    """Until every member holds the identity; its one ID."""
    holder: dict[str, dict[str, int] | None] = {"ids": None}

    async def probe() -> bool:
        holder["ids"] = await ids_everywhere(local, label)
        return holder["ids"] is not None

    await _until_async(probe, f"{label} in every member")
    found = holder["ids"]
    assert found is not None and len(set(found.values())) == 1, found
    return next(iter(found.values()))


async def wait_gone(local: LocalClusterSet, label: str) -> None:
    async def probe() -> bool:
        for cluster in local.clusters.values():
            if await identity(cluster.client, label) is not None:
                return False
        return True

    await _until_async(probe, f"{label} gone from every member")


async def _until_async(probe: Callable[[], Awaitable[bool]], what: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WITHIN
    while not await probe():
        if loop.time() > deadline:
            raise AssertionError(f"timed out after {WITHIN}s waiting for {what}")
        await asyncio.sleep(0.1)


async def test_identities_appear_in_every_member_as_antrea_writes_them_with_one_id_each(
    stretched: LocalClusterSet, worlds: dict[str, PodWorld]
) -> None:
    west = worlds[WEST]
    ns = await west.namespace({"team": "blue"})
    await west.pod(ns, "web-1", {"app": "web", "tier": "front"})
    await west.pod(ns, "web-2", {"app": "web", "tier": "front"})
    await west.pod(ns, "db", {"app": "db"})
    web = f"ns:kubernetes.io/metadata.name={ns},team=blue&pod:app=web,tier=front"
    db = f"ns:kubernetes.io/metadata.name={ns},team=blue&pod:app=db"

    web_id, db_id = await wait_everywhere(stretched, web), await wait_everywhere(stretched, db)

    assert web_id != db_id and min(web_id, db_id) >= 1
    hub = stretched.hub
    assert hub is not None
    exports = {e.export_name for e in hub.engine.index.exports.values() if e.HasField("label_identity")}
    assert {names.label_identity_export_name(WEST, web), names.label_identity_export_name(WEST, db)} <= exports


async def test_one_label_from_two_clusters_is_one_identity_that_outlives_either(
    stretched: LocalClusterSet, worlds: dict[str, PodWorld]
) -> None:
    name = worlds[EAST].fresh_name("shared")
    for cluster in (EAST, NORTH):
        await worlds[cluster].namespace({"shared": "yes"}, name=name)
        await worlds[cluster].pod(name, "p", {"app": "same"})
    label = worlds[EAST].label(name, {"app": "same"})
    first = await wait_everywhere(stretched, label)

    await worlds[EAST].delete_pod(name, "p")
    east = stretched.clusters[EAST].member
    assert east is not None and east.identities is not None
    await until(lambda: label not in east.identities.exported, WITHIN, "east withdrew it")  # type: ignore[union-attr]
    assert await wait_everywhere(stretched, label) == first  # north still exports it: same ID

    await worlds[NORTH].delete_pod(name, "p")
    await wait_gone(stretched, label)


async def test_deleting_one_of_two_pods_keeps_the_identity_and_the_last_withdraws_it(
    stretched: LocalClusterSet, worlds: dict[str, PodWorld]
) -> None:
    west = worlds[WEST]
    ns = await west.namespace()
    await west.pod(ns, "a", {"app": "pair"})
    await west.pod(ns, "b", {"app": "pair"})
    label = west.label(ns, {"app": "pair"})
    before = await wait_everywhere(stretched, label)
    member = stretched.clusters[WEST].member
    assert member is not None and member.identities is not None
    identities = member.identities

    await west.delete_pod(ns, "a")
    await until(lambda: identities.index.count(label) == 1, WITHIN, "one Pod left")
    await identities.settled()
    assert label in identities.exported
    assert await wait_everywhere(stretched, label) == before

    await west.delete_pod(ns, "b")
    await wait_gone(stretched, label)


async def test_relabelling_a_namespace_swaps_its_identities(
    stretched: LocalClusterSet, worlds: dict[str, PodWorld]
) -> None:
    east = worlds[EAST]
    ns = await east.namespace({"stage": "dev"})
    await east.pod(ns, "x", {"app": "x"})
    dev = east.label(ns, {"app": "x"})
    await wait_everywhere(stretched, dev)

    await east.relabel_namespace(ns, {"stage": "prod"})
    prod = east.label(ns, {"app": "x"})
    await wait_everywhere(stretched, prod)
    await wait_gone(stretched, dev)


async def test_a_member_restart_changes_nothing(stretched: LocalClusterSet, worlds: dict[str, PodWorld]) -> None:
    north = worlds[NORTH]
    ns = await north.namespace({"restart": "yes"})
    labels = []
    for i in range(4):
        await north.pod(ns, f"p{i}", {"app": f"r{i}"})
        labels.append(north.label(ns, {"app": f"r{i}"}))
    for label in labels:
        await wait_everywhere(stretched, label)
    hub = stretched.hub
    assert hub is not None
    before = await _versions(stretched, labels)
    hub_before = {n: i.SerializeToString() for n, i in hub.engine.index.imports.items()}
    exports_before = _label_exports(hub)

    await stretched.stop_member(NORTH)
    member = await stretched.start_member(NORTH)
    await until(lambda: member.session is not None and member.session.state.exports_synced, WITHIN, "resynced")
    assert member.identities is not None
    await member.identities.settled()
    session = member.session
    assert session is not None
    await session.wait_exports_settled()

    # The bracket changed nothing at the hub: no export withdrawn and re-made (create_time
    # kept), no import touched (the member's re-announce may still be written).
    assert _label_exports(hub) == exports_before
    assert {n: i.SerializeToString() for n, i in hub.engine.index.imports.items()} == hub_before
    assert await _versions(stretched, labels) == before  # nor in any member


def _label_exports(hub: Any) -> dict[str, bytes]:
    return {n: e.SerializeToString() for n, e in hub.engine.index.exports.items() if e.HasField("label_identity")}


async def _versions(local: LocalClusterSet, labels: list[str]) -> dict[tuple[str, str], str]:
    found = {}
    for name, cluster in local.clusters.items():
        for label in labels:
            obj = await identity(cluster.client, label)
            assert obj is not None
            found[(name, label)] = obj["metadata"]["resourceVersion"]
    return found


# ---- ClusterNetworkPolicy replication: a member lacking the policy's Tier -------------------

POLICY = "strict-namespace-isolation"
POLICY_IMPORT = names.acnp_import_name(POLICY)
TIER_MISSING = f"ACNP Tier random does not exist in the importing cluster {WEST}"
OPTIONAL = Path(__file__).resolve().parents[2] / "deploy" / "optional"
TIER = Resource("crd.antrea.io", "v1beta1", "tiers", "Tier", False)
ACNP = Resource("crd.antrea.io", "v1beta1", "clusternetworkpolicies", "ClusterNetworkPolicy", False)


def guide_policy(leader_cluster_id: str) -> pb.ResourceExport:
    """The user guide's ResourceExport of kind AntreaClusterNetworkPolicy, in Tier random."""
    spec = Struct()
    spec.update(
        {
            "priority": 1,
            "tier": "random",
            "appliedTo": [{"namespaceSelector": {}}],
            "ingress": [
                {"action": "Pass", "from": [{"namespaces": {"match": "Self"}}]},
                {"action": "Drop", "from": [{"namespaceSelector": {}}]},
            ],
        }
    )
    return pb.ResourceExport(export_name=POLICY, cluster_id=leader_cluster_id, name=POLICY, cluster_network_policy=spec)


async def install_policy_crds(client: KubeClient) -> None:
    """deploy/optional, as its header says: the CRDs, once established the default Tiers."""
    for crd in yaml.safe_load_all((OPTIONAL / "antrea-policy-crds.yml").read_text()):
        with contextlib.suppress(AlreadyExists):
            await client.create(CRDS, crd)

    async def established() -> bool:
        for crd in yaml.safe_load_all((OPTIONAL / "antrea-policy-crds.yml").read_text()):
            got = await client.get(CRDS, crd["metadata"]["name"])
            conditions = (got.get("status") or {}).get("conditions") or []
            if not any(c.get("type") == "Established" and c.get("status") == "True" for c in conditions):
                return False
        return True

    await _until_async(established, "the policy CRDs established")
    for tier in yaml.safe_load_all((OPTIONAL / "antrea-default-tiers.yml").read_text()):
        with contextlib.suppress(AlreadyExists):
            await _retry_until_served(client, tier)


async def _retry_until_served(client: KubeClient, tier: dict[str, Any]) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + WITHIN
    while True:
        try:
            await client.create(TIER, tier)
            return
        except NotFound:  # the apiserver's discovery of a new CRD lags a moment
            if loop.time() > deadline:
                raise
            await asyncio.sleep(0.1)


async def remove_policy_crds(client: KubeClient) -> None:
    for crd in yaml.safe_load_all((OPTIONAL / "antrea-policy-crds.yml").read_text()):
        with contextlib.suppress(NotFound):
            await client.delete(CRDS, crd["metadata"]["name"])


async def acnp_failure_events(hub: Any) -> list[dict[str, Any]]:
    client = hub.kube.client
    listed = await client.list(EVENTS, hub.config.namespace)
    return [e for e in listed.items if e.get("reason") == "ACNPImportFailed"]


async def test_a_member_lacking_the_tier_reports_acnp_import_failed_until_the_tier_exists(
    stretched: LocalClusterSet, cluster_kind: str, tmp_path: Path
) -> None:
    hub = stretched.hub
    assert hub is not None
    clients = {name: c.client for name, c in stretched.clusters.items()}
    admin = MemberFactory(hub)
    try:
        for name, client in clients.items():
            await install_policy_crds(client)
            if name != WEST:
                await client.create(TIER, {"metadata": {"name": "random"}, "spec": {"priority": 10}})
        await admin.admin().export(guide_policy(hub.config.leader_cluster_id))

        def west_report() -> Any:
            return hub.engine.import_status.get(POLICY_IMPORT, {}).get(WEST)

        # (CRDNotInstalled may come first: the member's discovery answer from before the CRDs is
        # given once more, and asked again at once.)
        await until(
            lambda: west_report() is not None and west_report().reason == "TierNotFound", WITHIN, "TierNotFound"
        )
        assert not west_report().succeeded and west_report().message == TIER_MISSING
        for name in (EAST, NORTH):  # the others have the Tier: the policy applies there
            client = clients[name]
            await _until_async(functools.partial(_has_acnp, client), f"the ACNP in {name}")

        if cluster_kind == "real":  # the kube store: what `kubectl describe resourceimport` shows
            await hub.kube.import_outcomes.settled()  # type: ignore[union-attr]
            # (each member may first have reported the CRDs missing: an Event each, other messages)
            [event] = [e for e in await acnp_failure_events(hub) if e["message"] == TIER_MISSING]
            assert event["type"] == "Warning"
            described = hub_cluster_describe(stretched, hub.config.namespace)
            assert "Warning ACNPImportFailed" in described
            assert f"resourceimport-controller {TIER_MISSING}" in described
        rest = [i for i in _rest_imports(hub) if i["metadata"]["name"] == POLICY_IMPORT]
        assert rest[0]["status"]["clusterStatuses"]

        await clients[WEST].create(TIER, {"metadata": {"name": "random"}, "spec": {"priority": 10}})
        await until(lambda: west_report() is not None and west_report().succeeded, 60.0, "west applied it")
        assert await _has_acnp(clients[WEST])
        if cluster_kind == "real":
            await hub.kube.import_outcomes.settled()  # type: ignore[union-attr]
            [after] = [e for e in await acnp_failure_events(hub) if e["message"] == TIER_MISSING]
            assert after["count"] == event["count"]  # the Event stops growing
    finally:
        with contextlib.suppress(Exception):
            session = admin.admin().export_session()
            await session.delete(POLICY)
        await admin.close()
        for client in clients.values():
            await remove_policy_crds(client)


async def _has_acnp(client: KubeClient) -> bool:
    try:
        await client.get(ACNP, names.imported_object_name(POLICY))
    except NotFound:
        return False
    return True


def _rest_imports(hub: Any) -> list[dict[str, Any]]:
    return shapes.imports(hub)


def hub_cluster_describe(local: LocalClusterSet, namespace: str) -> str:
    """`kubectl describe resourceimport -n <leader Namespace>` on the real leader, spaces collapsed."""
    leader = local.real["leader"]  # type: ignore[attr-defined]
    return " ".join(leader.kubectl("describe", "resourceimport", "-n", namespace).split())
