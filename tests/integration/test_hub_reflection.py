"""gRPC server reflection: grpcurl and its kind can list and describe the hub's services,
with a bearer token like every other call (health alone answers without one)."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from google.protobuf.descriptor_pool import DescriptorPool
from grpc_reflection.v1alpha import reflection_pb2, reflection_pb2_grpc
from grpc_reflection.v1alpha.proto_reflection_descriptor_database import ProtoReflectionDescriptorDatabase

from hub.app import HubApp
from tests.integration.hubclient import secure_channel

COMMON_AREA = "mchub.v1.CommonAreaService"
HEALTH = "grpc.health.v1.Health"
REFLECTION = "grpc.reflection.v1alpha.ServerReflection"


def reflect(target: str, ca: bytes, token: str) -> tuple[list[str], set[str], set[str]]:
    """What `grpcurl list` and `grpcurl describe` ask: services, CommonArea's methods, a message's fields.

    grpc's reflection client is synchronous: run it in a thread beside the hub's event loop.
    """
    creds = grpc.composite_channel_credentials(
        grpc.ssl_channel_credentials(root_certificates=ca), grpc.access_token_call_credentials(token)
    )
    with grpc.secure_channel(target, creds) as channel:
        database = ProtoReflectionDescriptorDatabase(channel)
        services = list(database.get_services())
        pool = DescriptorPool(database)
        methods = {m.name for m in pool.FindServiceByName(COMMON_AREA).methods}
        fields = {f.name for f in pool.FindMessageTypeByName("mchub.v1.ExportRequest").fields}
    return services, methods, fields


@pytest.mark.parametrize("who", ["admin", "member"])
async def test_reflection_lists_and_describes_the_services_for_a_caller_with_a_token(hub: HubApp, who: str) -> None:
    assert hub.ca_cert is not None
    token = hub.admin_token if who == "admin" else hub.tokens.create("member-east", cluster_id="east")
    services, methods, fields = await asyncio.to_thread(reflect, hub.grpc_target, hub.ca_cert.read_bytes(), token)
    assert {COMMON_AREA, HEALTH, REFLECTION} <= set(services)
    assert methods == {"Announce", "Export", "WatchImports", "ReportImportStatus", "ReportImportStatuses", "Leave"}
    assert {"sequence", "sync_begin", "upsert", "delete"} <= fields


@pytest.mark.parametrize("token", [None, "mch_not-a-real-token"], ids=["no token", "bad token"])
async def test_reflection_without_a_valid_token_is_unauthenticated(hub: HubApp, token: str | None) -> None:
    """The token is checked on the call's metadata, before any message: the call sends none, for the
    reason the test below gives."""
    assert hub.ca_cert is not None
    async with secure_channel(hub.grpc_target, hub.ca_cert.read_bytes(), token) as channel:
        call = reflection_pb2_grpc.ServerReflectionStub(channel).ServerReflectionInfo()
        code = await asyncio.wait_for(call.code(), timeout=10)
    assert code == grpc.StatusCode.UNAUTHENTICATED


async def test_an_unknown_reflection_version_is_unimplemented_for_a_caller_with_a_token(hub: HubApp) -> None:
    """grpcurl asks grpc.reflection.v1 first and falls back to v1alpha on UNIMPLEMENTED.

    The server answers from the method's name, before any message: the call sends none, since a
    request still being written when that answer ends the call fails on the client's side with
    INTERNAL ("Failed execute_batch"), which hides the status the server sent."""
    assert hub.ca_cert is not None
    async with secure_channel(hub.grpc_target, hub.ca_cert.read_bytes(), hub.admin_token) as channel:
        info = channel.stream_stream(
            "/grpc.reflection.v1.ServerReflection/ServerReflectionInfo",
            request_serializer=reflection_pb2.ServerReflectionRequest.SerializeToString,
            response_deserializer=reflection_pb2.ServerReflectionResponse.FromString,
        )
        call = info()
        code = await asyncio.wait_for(call.code(), timeout=10)
    assert code == grpc.StatusCode.UNIMPLEMENTED
