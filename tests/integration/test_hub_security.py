"""Refusals: each bad call gets the right status and leaves the store unchanged."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable

import grpc
import pytest
from google.protobuf.struct_pb2 import Struct

from hub.app import HubApp
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc
from tests.integration.hubclient import Member, MemberFactory, secure_channel, service_export


@pytest.fixture
async def east(connect: MemberFactory) -> Member:
    return await connect("east")


async def store_state(
    hub: HubApp,
) -> tuple[int, dict[str, pb.ResourceExport], dict[str, pb.ResourceImport], set[str]]:
    """Everything a refusal must leave as it was (the other refusal suites compare it too)."""
    snap = await hub.store.snapshot()
    return snap.revision, snap.exports, snap.imports, set(snap.members)


async def refused(hub: HubApp, code: grpc.StatusCode, call: Callable[[], Awaitable[object]], contains: str = "") -> str:
    """Run the call, expect it refused with `code`, the store unchanged; return the details."""
    before = await store_state(hub)
    with pytest.raises(grpc.aio.AioRpcError) as info:
        await call()
    assert info.value.code() == code, info.value.details()
    assert contains in (info.value.details() or "")
    assert await store_state(hub) == before, "a refused call changed the store"
    return info.value.details() or ""


async def _export_once(member: Member, export: pb.ResourceExport) -> pb.ExportResponse:
    session = member.export_session()
    return await session.upsert(export)


async def _drain(stream: AsyncIterator[pb.WatchImportsResponse]) -> None:
    await anext(stream)


async def test_a_call_without_a_token_is_unauthenticated(hub: HubApp, east: Member) -> None:
    assert hub.ca_cert is not None
    async with secure_channel(hub.grpc_target, hub.ca_cert.read_bytes(), None) as channel:
        stub = pb_grpc.CommonAreaServiceStub(channel)
        await refused(hub, grpc.StatusCode.UNAUTHENTICATED, lambda: stub.Announce(pb.AnnounceRequest()), "Bearer")
        stream = stub.WatchImports(pb.WatchImportsRequest(cluster_id="east"))
        await refused(hub, grpc.StatusCode.UNAUTHENTICATED, lambda: _drain(stream.__aiter__()))


async def test_a_wrong_token_is_unauthenticated(hub: HubApp, east: Member) -> None:
    assert hub.ca_cert is not None
    async with secure_channel(hub.grpc_target, hub.ca_cert.read_bytes(), "mch_not-a-real-token") as channel:
        stub = pb_grpc.CommonAreaServiceStub(channel)
        await refused(hub, grpc.StatusCode.UNAUTHENTICATED, lambda: stub.Export().read(), "not valid")
        await refused(
            hub, grpc.StatusCode.UNAUTHENTICATED, lambda: stub.Announce(pb.AnnounceRequest(cluster_id="east"))
        )


async def test_announcing_as_another_cluster_is_denied(hub: HubApp, east: Member) -> None:
    await refused(hub, grpc.StatusCode.PERMISSION_DENIED, lambda: east.announce("west"), "east")


async def test_exporting_for_another_cluster_is_denied(hub: HubApp, east: Member) -> None:
    export = service_export("west", "default", "nginx")
    details = await refused(hub, grpc.StatusCode.PERMISSION_DENIED, lambda: _export_once(east, export), "west")
    assert "(request sequence 1)" in details


async def test_an_export_name_not_derived_from_the_callers_id_is_denied(hub: HubApp, east: Member) -> None:
    export = service_export("east", "default", "nginx")
    export.export_name = "west-default-nginx-service"
    await refused(hub, grpc.StatusCode.PERMISSION_DENIED, lambda: _export_once(east, export), "expected")


async def test_a_member_cannot_export_a_cluster_network_policy(hub: HubApp, east: Member) -> None:
    spec = Struct()
    spec.update({"priority": 1, "tier": "securityops"})
    export = pb.ResourceExport(export_name="east-strict", cluster_id="east", name="strict", cluster_network_policy=spec)
    await refused(hub, grpc.StatusCode.PERMISSION_DENIED, lambda: _export_once(east, export), "admin")


async def test_watching_another_clusters_imports_is_denied(hub: HubApp, east: Member) -> None:
    stream = east.stub.WatchImports(pb.WatchImportsRequest(cluster_id="west")).__aiter__()
    await refused(hub, grpc.StatusCode.PERMISSION_DENIED, lambda: _drain(stream))


async def test_undecodable_bytes_are_an_invalid_argument(hub: HubApp, east: Member) -> None:
    raw = east.channel.unary_unary("/mchub.v1.CommonAreaService/Announce")
    await refused(hub, grpc.StatusCode.INVALID_ARGUMENT, lambda: raw(b"\xff\xff\xff\x07garbage"), "malformed")


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda e: e.ClearField("service"), "payload"),
        (lambda e: e.service.ports[0].__setattr__("port", 70000), "port"),
        (lambda e: e.service.ports[0].__setattr__("protocol", "ICMP"), "protocol"),
        (lambda e: e.__setattr__("namespace", "Not_A_Namespace"), "namespace"),
    ],
    ids=["no payload", "port out of range", "unknown protocol", "bad namespace"],
)
async def test_a_malformed_export_is_an_invalid_argument(
    hub: HubApp, east: Member, mutate: Callable[[pb.ResourceExport], object], expected: str
) -> None:
    export = service_export("east", "default", "nginx")
    mutate(export)
    details = await refused(hub, grpc.StatusCode.INVALID_ARGUMENT, lambda: _export_once(east, export))
    assert expected in details.lower()


async def test_an_oversized_message_is_refused(hub: HubApp, east: Member) -> None:
    export = service_export("east", "default", "nginx")
    export.service.ports[0].app_protocol = "x" * (hub.config.max_message_bytes + 1)
    await refused(hub, grpc.StatusCode.RESOURCE_EXHAUSTED, lambda: _export_once(east, export))


async def test_a_dash_prefix_of_a_member_id_is_refused_at_join(
    hub: HubApp, east: Member, connect: MemberFactory
) -> None:
    other = await connect("east-1", announce=False)
    await refused(hub, grpc.StatusCode.PERMISSION_DENIED, other.announce, "dash-prefix")


async def test_exporting_before_announcing_is_a_failed_precondition(hub: HubApp, connect: MemberFactory) -> None:
    west = await connect("west", announce=False)
    export = service_export("west", "default", "nginx")
    await refused(hub, grpc.StatusCode.FAILED_PRECONDITION, lambda: _export_once(west, export), "announce")


async def test_a_plaintext_client_cannot_talk_to_the_tls_hub(hub: HubApp, east: Member) -> None:
    async with grpc.aio.insecure_channel(hub.grpc_target) as channel:
        stub = pb_grpc.CommonAreaServiceStub(channel)
        await refused(
            hub,
            grpc.StatusCode.UNAVAILABLE,
            lambda: stub.Announce(pb.AnnounceRequest(cluster_id="east"), timeout=3),
        )


async def test_a_wrong_clusterset_id_is_an_invalid_argument(hub: HubApp, east: Member) -> None:
    request = pb.AnnounceRequest(cluster_id="east", cluster_set_id="another-set")
    await refused(hub, grpc.StatusCode.INVALID_ARGUMENT, lambda: east.stub.Announce(request), "ClusterSet")
    assert names.member_announce_name("east") == "member-announce-from-east"
