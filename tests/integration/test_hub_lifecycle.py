"""Health, graceful shutdown, configuration refusals."""

from __future__ import annotations

import asyncio
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from hub.app import HubApp
from hub.config import HubConfig, HubConfigError
from mcapi.mchub.v1 import common_area_pb2 as pb
from tests.integration.hub_fixtures import hub_config
from tests.integration.hubclient import MemberFactory, read_until_synced, secure_channel


async def test_grpc_health_reports_the_service_serving(hub: HubApp) -> None:
    assert hub.ca_cert is not None
    async with secure_channel(hub.grpc_target, hub.ca_cert.read_bytes(), None) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        for service in ("", "mchub.v1.CommonAreaService"):
            answer = await stub.Check(health_pb2.HealthCheckRequest(service=service))
            assert answer.status == health_pb2.HealthCheckResponse.SERVING


async def test_stopping_the_hub_ends_open_streams_with_unavailable(tmp_path: Path) -> None:
    app = HubApp(hub_config(tmp_path / "hub"))
    await app.start()
    factory = MemberFactory(app)
    try:
        east = await factory("east")
        stream = east.watch()
        await read_until_synced(stream)
        session = east.export_session()
        await session.send(pb.ExportRequest(sync_begin=pb.SyncBegin()))
        stopping = asyncio.create_task(app.stop())
        with pytest.raises(grpc.aio.AioRpcError) as watch_end:
            while True:
                await asyncio.wait_for(anext(stream), 10)
        assert watch_end.value.code() == grpc.StatusCode.UNAVAILABLE
        with pytest.raises(grpc.aio.AioRpcError) as export_end:
            await asyncio.wait_for(session.call.read(), 10)
        assert export_end.value.code() == grpc.StatusCode.UNAVAILABLE
        await stopping
    finally:
        await factory.close()


def test_plaintext_is_refused_off_loopback(tmp_path: Path) -> None:
    with pytest.raises(HubConfigError, match="loopback"):
        HubConfig(data_dir=tmp_path, grpc_address="0.0.0.0:50051", insecure=True).validate()


async def test_plaintext_on_loopback_serves_when_asked(tmp_path: Path) -> None:
    app = HubApp(hub_config(tmp_path / "hub", insecure=True))
    await app.start()
    try:
        async with grpc.aio.insecure_channel(app.grpc_target) as channel:
            answer = await health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest())
            assert answer.status == health_pb2.HealthCheckResponse.SERVING
        assert app.ca_cert is None
    finally:
        await app.stop()


async def test_tls_material_is_generated_once_and_reused(tmp_path: Path) -> None:
    first = HubApp(hub_config(tmp_path / "hub"))
    await first.start()
    ca = first.ca_cert
    assert ca is not None
    ca_bytes = ca.read_bytes()
    token = first.admin_token
    await first.stop()
    second = HubApp(hub_config(tmp_path / "hub"))
    await second.start()
    try:
        assert second.ca_cert is not None and second.ca_cert.read_bytes() == ca_bytes
        assert second.admin_token == token
        assert (tmp_path / "hub" / "admin.token").stat().st_mode & 0o077 == 0
    finally:
        await second.stop()
