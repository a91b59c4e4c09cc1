"""The hub's global addressing over real gRPC with TLS (issue 26): blocks in AnnounceResponse,
kept across a restart and freed by a leave; the overlap verdict in AnnounceResponse, in every
ClusterInfo import and in the REST views; global addresses outside the exporter's block refused."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import grpc
import pytest

from hub.app import HubApp
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.integration.hub_fixtures import rest_session, running_hub
from tests.integration.hubclient import Member, MemberFactory, endpoints_export, read_until_synced, service_export

GLOBAL_CIDR = "242.0.0.0/18"  # four /20 blocks


@pytest.fixture
async def hub(tmp_path: Path) -> AsyncIterator[HubApp]:
    """This module's hub: with a global CIDR of four /20 blocks."""
    async with running_hub(tmp_path / "hub", global_cidr=GLOBAL_CIDR, global_block_prefix=20) as app:
        yield app


def cluster_info(cluster: str, service_cidr: str, pod_cidr: str, gateway_ip: str) -> pb.ResourceExport:
    return pb.ResourceExport(
        export_name=names.cluster_info_export_name(cluster),
        cluster_id=cluster,
        namespace="kube-system",
        name=cluster,
        cluster_info=pb.ClusterInfo(
            cluster_id=cluster,
            service_cidr=service_cidr,
            pod_cidrs=[pod_cidr],
            gateway_infos=[pb.GatewayInfo(gateway_ip=gateway_ip)],
        ),
    )


async def join_three(members: MemberFactory) -> dict[str, Member]:
    joined = {name: await members(name) for name in ("east", "west", "north")}
    await joined["east"].export(cluster_info("east", "10.96.0.0/16", "10.1.0.0/16", "198.18.0.11"))
    await joined["west"].export(cluster_info("west", "10.96.0.0/16", "10.1.0.0/16", "198.18.0.13"))
    await joined["north"].export(cluster_info("north", "10.97.0.0/16", "10.3.0.0/16", "198.18.0.15"))
    return joined


async def test_every_member_gets_a_block_and_only_the_overlapping_ones_are_globally_addressed(
    hub: HubApp, connect: MemberFactory
) -> None:
    joined = await join_three(connect)
    answers = {name: await m.announce() for name, m in joined.items()}
    assert {n: a.global_cidr for n, a in answers.items()} == {
        "east": "242.0.0.0/20",
        "west": "242.0.16.0/20",
        "north": "242.0.32.0/20",
    }
    assert {n: a.globally_addressed for n, a in answers.items()} == {"east": True, "west": True, "north": False}

    snapshot, _ = await read_until_synced(joined["north"].watch())
    east = snapshot[names.cluster_info_import_name("east")].cluster_info
    assert (east.global_cidr, east.globally_addressed) == ("242.0.0.0/20", True)
    snapshot, _ = await read_until_synced(joined["east"].watch())
    north = snapshot[names.cluster_info_import_name("north")].cluster_info
    assert (north.global_cidr, north.globally_addressed) == ("242.0.32.0/20", False)

    async with rest_session(hub) as http:
        headers = {"Authorization": f"Bearer {hub.admin_token}"}
        async with http.get("/api/v1/members", headers=headers) as response:
            items = (await response.json())["items"]
        async with http.get("/api/v1/clusterset", headers=headers) as response:
            conditions = (await response.json())["status"]["conditions"]
    status = {i["clusterID"]: i["status"] for i in items}
    assert status["west"]["globalCIDR"] == "242.0.16.0/20" and status["west"]["globallyAddressed"] is True
    assert status["west"]["overlapsWith"] == ["east"]
    assert status["north"]["globallyAddressed"] is False
    (condition,) = [c for c in conditions if c["type"] == "GlobalAddressing"]
    assert condition["status"] == "True"
    assert "east (242.0.0.0/20), west (242.0.16.0/20)" in condition["message"]


async def test_the_verdict_follows_the_overlap_when_a_member_leaves_and_its_block_is_freed(
    hub: HubApp, connect: MemberFactory
) -> None:
    joined = await join_three(connect)
    watch = joined["north"].watch()
    await read_until_synced(watch)
    left = await joined["west"].stub.Leave(pb.LeaveRequest(cluster_id="west"))
    assert left.was_member
    # East's import is re-stamped in the revision that removed west.
    async for event in watch:
        changes = [c.upsert for c in event.changes.changes] if event.HasField("changes") else [event.upsert]
        stamped = [c for c in changes if c.import_name == names.cluster_info_import_name("east")]
        if stamped:
            assert not stamped[0].cluster_info.globally_addressed
            break
    assert not (await joined["east"].announce()).globally_addressed
    # West's block is free again: the next member to join takes it.
    newcomer = await connect("south")
    assert (await newcomer.announce()).global_cidr == "242.0.16.0/20"


async def test_blocks_survive_a_restart_of_the_hub(tmp_path: Path) -> None:
    async with running_hub(tmp_path / "restarted", global_cidr=GLOBAL_CIDR) as app:
        factory = MemberFactory(app)
        try:
            token = (await join_three(factory))["west"].token
            blocks = {m.cluster_id: m.global_cidr for m in app.engine.index.members.values()}
            assert blocks["west"] == "242.0.16.0/20"
        finally:
            await factory.close()
    async with running_hub(tmp_path / "restarted", global_cidr=GLOBAL_CIDR) as app:
        again = Member(app, "west", token)
        try:
            answer = await again.announce()
            assert answer.global_cidr == blocks["west"] and answer.globally_addressed
        finally:
            await again.close()


async def test_global_addresses_of_another_block_are_refused_and_of_its_own_accepted(
    hub: HubApp, connect: MemberFactory
) -> None:
    joined = await join_three(connect)
    west = joined["west"]
    block = (await west.announce()).global_cidr
    assert block == "242.0.16.0/20"
    theirs = endpoints_export("west", "web", "web", ["10.1.0.5"])
    theirs.endpoints.subsets[0].addresses[0].global_ip = "242.0.0.2"  # east's block
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await west.export(service_export("west", "web", "web"), theirs)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "outside cluster 'west''s: it holds its global block 242.0.16.0/20" in str(refused.value.details())
    own = endpoints_export("west", "web", "web", ["10.1.0.5"])
    own.endpoints.subsets[0].addresses[0].global_ip = "242.0.16.2"
    answers = await west.export(service_export("west", "web", "web"), own)
    assert [a.status.verdict for a in answers] == [pb.VERDICT_ACCEPTED, pb.VERDICT_ACCEPTED]
    snapshot, _ = await read_until_synced(joined["east"].watch())
    imported = snapshot[names.endpoints_import_name("web", "web")]
    assert [a.global_ip for s in imported.endpoints.subsets for a in s.addresses] == ["242.0.16.2"]


async def test_a_member_cannot_stamp_its_own_cluster_info(hub: HubApp, connect: MemberFactory) -> None:
    east = await connect("east")
    stamped = cluster_info("east", "10.96.0.0/16", "10.1.0.0/16", "198.18.0.11")
    stamped.cluster_info.globally_addressed = True
    with pytest.raises(grpc.aio.AioRpcError) as refused:
        await east.export(stamped)
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "the hub sets them in imports" in str(refused.value.details())
