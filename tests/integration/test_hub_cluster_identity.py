"""KEP-2149 over the wire: a cluster ID is unique in the ClusterSet and immutable while its cluster
is a member; and what members announce of their clusters (ClusterProperties) drives the cluster
selectors of the imports they get (KEP-5939)."""

from __future__ import annotations

import grpc
import pytest

from hub.app import HubApp
from mcapi import names
from mcapi.cluster_selection import results_for, selectors_from_json
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.integration.hubclient import MemberFactory, endpoints_export, service_export

EAST_UID, OTHER_UID = "uid-of-east", "uid-of-another-cluster"
REGION = "region.topology.k8s.io"


def reason_of(error: grpc.aio.AioRpcError) -> str:
    return dict(tuple(error.trailing_metadata() or ())).get(names.REFUSAL_REASON_METADATA, "")


async def test_a_second_cluster_claiming_a_member_id_is_refused_and_changes_nothing(
    hub: HubApp, connect: MemberFactory
) -> None:
    east = await connect("east", announce=False)
    await east.announce(uid=EAST_UID, properties={"cluster.clusterset.k8s.io": "east"})
    impostor = await connect("east", announce=False, token_name="another-east")
    revision = hub.engine.revision

    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await impostor.announce(uid=OTHER_UID)

    assert refused.value.code() == grpc.StatusCode.ALREADY_EXISTS
    assert reason_of(refused.value) == names.REASON_CLUSTER_ID_IN_USE
    assert "'east' is in use" in (refused.value.details() or "")
    assert hub.engine.revision == revision
    assert hub.engine.index.members["east"].inventory.cluster_uid == EAST_UID
    await east.announce(uid=EAST_UID)  # the member itself goes on


async def test_a_member_cannot_announce_another_id_until_it_left(hub: HubApp, connect: MemberFactory) -> None:
    east = await connect("east", announce=False)
    await east.announce(uid=EAST_UID)
    renamed = await connect("east-renamed", announce=False)

    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await renamed.announce(uid=EAST_UID)

    assert refused.value.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert reason_of(refused.value) == names.REASON_CLUSTER_ID_IMMUTABLE
    assert "immutable" in (refused.value.details() or "")
    assert set(hub.engine.index.members) == {"east"}

    await east.stub.Leave(pb.LeaveRequest(cluster_id="east"))
    await renamed.announce(uid=EAST_UID)
    assert set(hub.engine.index.members) == {"east-renamed"}


async def test_an_announce_without_a_uid_is_checked_for_neither(hub: HubApp, connect: MemberFactory) -> None:
    older = await connect("east")
    again = await connect("east", announce=False, token_name="another-east")
    await again.announce()
    await older.announce()
    assert set(hub.engine.index.members) == {"east"}


async def test_malformed_properties_are_refused(hub: HubApp, connect: MemberFactory) -> None:
    east = await connect("east", announce=False)
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await east.announce(uid=EAST_UID, properties={"Not A Name": "x"})
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "east" not in hub.engine.index.members


async def test_a_change_of_properties_resolves_the_cluster_selectors_again(hub: HubApp, connect: MemberFactory) -> None:
    east, west, north = [await connect(c, announce=False) for c in ("east", "west", "north")]
    await east.announce(uid="e", properties={REGION: "us"})
    await west.announce(uid="w", properties={REGION: "eu"})
    await north.announce(uid="n", properties={REGION: "us"})
    selectors = selectors_from_json([{"propertySelector": {"matchProperties": {REGION: "@SameAsImporter@"}}}])
    for member in (east, west):
        service = service_export(member.cluster_id, "default", "api")
        service.service.cluster_selectors.extend(selectors)
        answers = await member.export(service, endpoints_export(member.cluster_id, "default", "api", ["10.1.1.1"]))
        assert answers[0].status.verdict == pb.VERDICT_ACCEPTED
    name = names.service_import_name("default", "api")

    def results(importer: str) -> list[list[str]] | None:
        return results_for(hub.engine.index.imports[name].service_import, importer)

    assert (results("north"), results("west")) == ([["east"]], [["west"]])
    assert list(hub.engine.index.exports[names.service_export_name("east", "default", "api")].status.clusters) == [
        "east",
        "north",
    ]

    await north.announce(uid="n", properties={REGION: "eu"})

    assert results("north") == [["west"]]
    east_export = hub.engine.index.exports[names.service_export_name("east", "default", "api")]
    assert list(east_export.status.clusters) == ["east"]

    await north.stub.Leave(pb.LeaveRequest(cluster_id="north"))
    assert results("north") is None
