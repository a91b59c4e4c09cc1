"""A member leaves the ClusterSet when its ClusterSet is deleted: the hub hears it (rpc Leave)
after the exports were withdrawn, and holds nothing of it any more; creating the ClusterSet
again joins it again. A member that only stops is no leave; one removed by the operator
while it was down is re-admitted cleanly when it comes back."""

from __future__ import annotations

import pytest

from hub.app import HubApp
from hub.clusterset.status import clusterset_status
from mcapi.resources import CLUSTER_SETS, CLUSTER_SETS_V1ALPHA1, LABEL_IDENTITIES
from tests.member.conftest import MemberFactory
from tests.member.harness import MEMBER_NAMESPACE, WAIT, JoinedMember, eventually

NS = "shop"
# The brief's budget: a member gone from the hub this long after its ClusterSet was deleted.
LEAVE_WITHIN = 10.0


def _exports_of(hub: HubApp, cluster_id: str) -> list[str]:
    return sorted(hub.engine.index.owned_by(cluster_id, admin=False))


def _counts(hub: HubApp) -> tuple[int, int, str]:
    status = clusterset_status(list(hub.engine.index.members.values()), hub.now(), hub.config.disconnect_after)
    return status["totalClusters"], status["readyClusters"], status["conditions"][0]["status"]


async def _exported(member: JoinedMember, name: str) -> None:
    await member.create_service(NS, name)
    await member.export(NS, name)
    await member.wait_condition(NS, name, "Ready", "True", "Exported")


@pytest.mark.parametrize("legacy", [False, True], ids=["v1alpha2", "legacy v1alpha1"])
async def test_deleting_the_cluster_set_takes_the_member_out_of_the_hub_and_creating_it_joins_again(
    hub: HubApp, members: MemberFactory, legacy: bool
) -> None:
    east = await members.join("east", legacy=legacy)
    west = await members.join("west", legacy=legacy)
    await east.wait_connected()
    await _exported(west, "web")
    assert _counts(hub) == (2, 2, "True")

    kind = CLUSTER_SETS_V1ALPHA1 if legacy else CLUSTER_SETS
    written = await west.client.get(kind, hub.config.cluster_set_id, MEMBER_NAMESPACE)
    await west.client.delete(kind, hub.config.cluster_set_id, MEMBER_NAMESPACE)

    async def west_gone() -> bool:
        return "west" not in hub.engine.index.members and not _exports_of(hub, "west")

    await eventually(west_gone, within=LEAVE_WITHIN, what="west's announce and exports gone from the hub")
    assert _counts(hub) == (1, 1, "True")
    assert west.member.joined is None

    # Created again as the user wrote it (the legacy ClusterClaims stayed).
    await west.client.create(
        kind, {"metadata": written["metadata"] | {"resourceVersion": None}, "spec": written["spec"]}
    )

    async def west_back() -> bool:
        return "west" in hub.engine.index.members and bool(_exports_of(hub, "west"))

    await eventually(west_back, within=WAIT, what="west joined again with its export")
    assert _counts(hub) == (2, 2, "True")


async def test_a_member_that_only_stops_stays_in_the_clusterset(hub: HubApp, members: MemberFactory) -> None:
    east = await members.join("east")
    await _exported(east, "web")
    await east.stop_member()
    assert "east" in hub.engine.index.members
    assert _exports_of(hub, "east")


async def test_a_member_removed_while_it_was_down_is_admitted_again_with_its_exports(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    await _exported(east, "web")
    exported = _exports_of(hub, "east")
    await east.stop_member()
    await hub.engine.remove_member("east", "removed by the test")
    assert "east" not in hub.engine.index.members and not _exports_of(hub, "east")

    await east.start_member()

    async def back() -> bool:
        return "east" in hub.engine.index.members and _exports_of(hub, "east") == exported

    await eventually(back, what="east admitted again with its exports")
    await east.wait_condition(NS, "web", "Ready", "True", "Exported")


async def test_a_member_watches_what_it_imports_once_across_leaving_and_joining_again(
    hub: HubApp, members: MemberFactory
) -> None:
    east = await members.join("east")
    await east.wait_connected()
    written = await east.client.get(CLUSTER_SETS, hub.config.cluster_set_id, MEMBER_NAMESPACE)
    await east.client.delete(CLUSTER_SETS, hub.config.cluster_set_id, MEMBER_NAMESPACE)

    async def left() -> bool:
        return east.member.joined is None and "east" not in hub.engine.index.members

    await eventually(left, within=LEAVE_WITHIN, what="east left")
    await east.client.create(
        CLUSTER_SETS, {"metadata": written["metadata"] | {"resourceVersion": None}, "spec": written["spec"]}
    )

    async def joined_again() -> bool:
        return east.member.importer is not None and "east" in hub.engine.index.members

    await eventually(joined_again, what="east joined again")
    # The member's import caches live from its start to its stop: every join's importer reads them.
    assert east.client.metrics.total(verbs=["watch"], resource=LABEL_IDENTITIES.qualified_name) == 1
