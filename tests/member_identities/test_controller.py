"""The label identity controller on a sandbox and on a real kube-apiserver: Pods and Namespaces
in, one export per distinct normalized label out (to a recording session)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from kube.client import PatchType
from kube.resources import PODS
from mcapi import names
from mcapi.labels import format_namespace_labels, join_normalized_label
from member.identities import LabelIdentityController
from tests.member_identities.conftest import RecordingSink
from tests.member_identities.world import PodWorld, pod_body, until

CLUSTER = "test-cluster-east"
WITHDRAW_AFTER = 0.5
SYNC = 30.0


def ours(world: PodWorld, labels: set[str]) -> set[str]:
    """The labels of the test's own Namespaces (a real cluster has other Pods too)."""
    return {
        label for label in labels if any(f"kubernetes.io/metadata.name={ns}," in label + "," for ns in world.namespaces)
    }


@pytest.fixture
async def controllers(world: PodWorld) -> AsyncIterator[list[LabelIdentityController]]:
    made: list[LabelIdentityController] = []
    yield made
    for controller in made:
        await controller.stop()


async def start(world: PodWorld, made: list[LabelIdentityController], sink: RecordingSink) -> LabelIdentityController:
    controller = LabelIdentityController(
        world.client, CLUSTER, sink, debounce=0.05, withdraw_after=WITHDRAW_AFTER, sync_timeout=SYNC
    )
    made.append(controller)
    await controller.start()  # hands the sink every identity of the Pods there are
    sink.calls.clear()
    return controller


async def test_pods_at_start_make_one_export_per_distinct_label_named_as_antrea_names_it(
    world: PodWorld, controllers: list[LabelIdentityController], sink: RecordingSink
) -> None:
    ns = await world.namespace({"team": "blue", "env": "prod"})
    for i in range(3):
        await world.pod(ns, f"web-{i}", {"app": "web", "tier": "front"})
    await world.pod(ns, "db", {"app": "db"})
    await world.pod(ns, "bare", {})

    await start(world, controllers, sink)

    web = f"ns:env=prod,kubernetes.io/metadata.name={ns},team=blue&pod:app=web,tier=front"
    db = f"ns:env=prod,kubernetes.io/metadata.name={ns},team=blue&pod:app=db"
    bare = f"ns:env=prod,kubernetes.io/metadata.name={ns},team=blue&pod:<none>"
    assert ours(world, sink.labels()) == {web, db, bare}
    assert {name for name, e in sink.desired.items() if ours(world, {e.label_identity.normalized_label})} == {
        names.label_identity_export_name(CLUSTER, label) for label in (web, db, bare)
    }
    assert names.label_identity_export_name(CLUSTER, web) == f"{CLUSTER}-{names.label_hash(web)}"
    assert all(e.cluster_id == CLUSTER for e in sink.desired.values())


async def test_a_pod_of_new_labels_exports_once_and_its_twin_exports_nothing(
    world: PodWorld, controllers: list[LabelIdentityController], sink: RecordingSink
) -> None:
    ns = await world.namespace()
    controller = await start(world, controllers, sink)
    label = world.label(ns, {"app": "api"})

    await world.pod(ns, "api-1", {"app": "api"})
    await until(lambda: label in sink.labels(), what="the identity exported")
    await world.pod(ns, "api-2", {"app": "api"})
    await controller.settled()

    assert [c for c in sink.calls if c[1] == controller.export_name(label)] == [("set", controller.export_name(label))]


async def test_deleting_one_of_two_pods_keeps_the_identity_and_the_last_withdraws_it(
    world: PodWorld, controllers: list[LabelIdentityController], sink: RecordingSink
) -> None:
    ns = await world.namespace()
    await world.pod(ns, "a", {"app": "pair"})
    await world.pod(ns, "b", {"app": "pair"})
    controller = await start(world, controllers, sink)
    label = world.label(ns, {"app": "pair"})
    assert label in sink.labels()

    await world.delete_pod(ns, "a")
    await until(lambda: controller.index.count(label) == 1, what="one Pod left")
    await controller.settled()
    assert label in sink.labels()

    await world.delete_pod(ns, "b")
    await until(lambda: label not in sink.labels(), within=WITHDRAW_AFTER + 10, what="the identity withdrawn")
    assert sink.calls.count(("remove", controller.export_name(label))) == 1


async def test_relabelling_a_namespace_swaps_its_identities(
    world: PodWorld, controllers: list[LabelIdentityController], sink: RecordingSink
) -> None:
    ns = await world.namespace({"stage": "dev"})
    await world.pod(ns, "x", {"app": "x"})
    await world.pod(ns, "y", {"app": "y"})
    await start(world, controllers, sink)
    before = {world.label(ns, {"app": "x"}), world.label(ns, {"app": "y"})}
    assert ours(world, sink.labels()) == before

    await world.relabel_namespace(ns, {"stage": "prod"})
    after = {world.label(ns, {"app": "x"}), world.label(ns, {"app": "y"})}
    assert after.isdisjoint(before)
    await until(lambda: ours(world, sink.labels()) == after, within=WITHDRAW_AFTER + 10, what="swapped")


async def test_a_label_flipped_and_flipped_back_neither_withdraws_nor_exports_again(
    world: PodWorld, controllers: list[LabelIdentityController], sink: RecordingSink
) -> None:
    ns = await world.namespace()
    await world.pod(ns, "p", {"app": "steady"})
    controller = await start(world, controllers, sink)
    steady = world.label(ns, {"app": "steady"})

    await world.relabel_pod(ns, "p", {"app": "other"})
    await world.relabel_pod(ns, "p", {"app": "steady"})
    await controller.settled()

    assert ("remove", controller.export_name(steady)) not in sink.calls
    assert ("set", controller.export_name(steady)) not in sink.calls
    assert steady in sink.labels()


async def test_a_pending_pod_counts_and_a_pod_being_deleted_does_not(
    world: PodWorld, controllers: list[LabelIdentityController], sink: RecordingSink
) -> None:
    ns = await world.namespace()
    held = pod_body("held", {"app": "held"})
    held["metadata"]["finalizers"] = ["example.com/hold"]
    await world.client.create(PODS, held, ns)
    controller = await start(world, controllers, sink)
    label = world.label(ns, {"app": "held"})
    pod = await world.client.get(PODS, "held", ns)
    assert (pod.get("status") or {}).get("phase", "Pending") == "Pending"
    assert label in sink.labels()

    await world.delete_pod(ns, "held")  # the finalizer keeps it, with a deletionTimestamp
    try:
        await until(lambda: label not in sink.labels(), within=WITHDRAW_AFTER + 10, what="the leaving Pod uncounted")
        assert (await world.client.get(PODS, "held", ns))["metadata"].get("deletionTimestamp")
    finally:
        await world.client.patch(PODS, "held", {"metadata": {"finalizers": None}}, ns, patch_type=PatchType.MERGE)
    assert controller.index.count(label) == 0


async def test_a_restarted_controller_wants_exactly_what_the_first_exported(
    world: PodWorld, controllers: list[LabelIdentityController], sink: RecordingSink
) -> None:
    ns = await world.namespace({"a": "1"})
    for i in range(5):
        await world.pod(ns, f"p{i}", {"app": f"a{i % 2}"})
    first = await start(world, controllers, sink)
    await first.stop()

    restarted = RecordingSink()
    second = LabelIdentityController(world.client, CLUSTER, restarted, sync_timeout=SYNC)
    controllers.append(second)
    await second.start()
    # On a real cluster the Pods of earlier tests may still be going away (their Namespaces
    # terminate in the background) between the two starts: compare what this Namespace makes.
    expected = {world.label(ns, {"app": "a0"}), world.label(ns, {"app": "a1"})}
    first_wanted = {e.label_identity.normalized_label for e in sink.desired.values()}
    second_wanted = {e.label_identity.normalized_label for e in restarted.desired.values()}
    assert _in_namespace(world, first_wanted, ns) == expected
    assert _in_namespace(world, second_wanted, ns) == expected
    ours = {name for name, e in restarted.desired.items() if e.label_identity.normalized_label in expected}
    assert ours == {name for name, e in sink.desired.items() if e.label_identity.normalized_label in expected}


def _in_namespace(world: PodWorld, labels: set[str], namespace: str) -> set[str]:
    """The normalized labels of Pods in ``namespace``: those that start with its side,
    ``ns:<its labels>&pod:``, formatted as the member formats it."""
    side = join_normalized_label(format_namespace_labels(namespace, world.namespaces[namespace]), "")
    return {label for label in labels if label.startswith(side)}
