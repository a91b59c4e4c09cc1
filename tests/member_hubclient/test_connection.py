"""Reaching the hub: the ClusterSet's server string, TLS trust, the insecure loopback mode."""

from __future__ import annotations

import asyncio
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from hub.app import HubApp
from hub.tls import ensure_tls
from member.hubclient import EndpointError, HubEndpoint, HubSession, parse_target
from tests.integration.hubclient import service_export
from tests.member_hubclient.conftest import SESSION_CONFIG, HubRunner, SessionFactory
from tests.member_hubclient.recorders import WAIT


@pytest.mark.parametrize(
    ("server", "target"),
    [
        ("hub.example:50051", "hub.example:50051"),
        ("https://hub.example:50051", "hub.example:50051"),
        ("https://hub.example:50051/", "hub.example:50051"),
        ("https://hub.example", "hub.example:443"),
        ("https://[fd00::1]:50051", "[fd00::1]:50051"),
        ("[::1]:50051", "[::1]:50051"),
        ("  10.0.0.1:6443 ", "10.0.0.1:6443"),
    ],
)
def test_the_leader_server_of_a_cluster_set_becomes_a_grpc_target(server: str, target: str) -> None:
    assert parse_target(server) == target


@pytest.mark.parametrize("server", ["", "https://", "hub.example", "ftp://hub:21", "hub:port", "[::1"])
def test_a_leader_server_that_names_no_reachable_port_is_refused(server: str) -> None:
    with pytest.raises(EndpointError):
        parse_target(server)


def test_an_empty_token_or_a_remote_insecure_hub_is_refused() -> None:
    with pytest.raises(EndpointError, match="token"):
        HubEndpoint("127.0.0.1:1", " ").credentials()
    with pytest.raises(EndpointError, match="loopback"):
        HubEndpoint("hub.example:50051", "t", insecure=True).credentials()


async def test_a_hub_certificate_from_another_ca_is_surfaced_as_unreachable(
    sessions: SessionFactory, hubs: HubRunner, hub: HubApp, tmp_path: Path
) -> None:
    other_ca = ensure_tls(tmp_path / "other-tls", ()).ca_cert.read_bytes()
    endpoint = HubEndpoint(f"127.0.0.1:{hubs.port}", sessions.token_for("east"), ca_cert=other_ca)
    async with HubSession(endpoint, replace(SESSION_CONFIG, cluster_id="east")) as session:
        async with asyncio.timeout(WAIT):
            state = await session.wait_for_state(lambda s: bool(s.last_error))
        assert not state.connected and not state.needs_operator


async def test_an_insecure_loopback_hub_is_reached_with_the_token(tmp_path: Path) -> None:
    runner = HubRunner(tmp_path / "hub")
    app = HubApp(replace(runner.config(), insecure=True))
    await app.start()
    try:
        token = app.tokens.create("member-east", cluster_id="east")
        endpoint = HubEndpoint(f"http://127.0.0.1:{app.grpc_port}", token, insecure=True)
        async with HubSession(endpoint, replace(SESSION_CONFIG, cluster_id="east")) as session:
            session.set_export(service_export("east", "default", "plain"))
            async with asyncio.timeout(WAIT):
                await session.wait_exports_settled()
            assert "east-default-plain-service" in app.engine.index.exports
    finally:
        await app.stop()


async def test_every_call_carries_the_token_without_a_thread_per_call(
    sessions: SessionFactory, hub: HubApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    """grpc runs Python call credentials on a new thread per call; the token goes as metadata."""
    session = await sessions.open("east")
    async with asyncio.timeout(WAIT):
        await session.wait_for_state(lambda s: s.connected)
    started: list[str] = []
    original = threading.Thread.start

    def counting_start(thread: threading.Thread) -> None:
        started.append(thread.name)
        original(thread)

    monkeypatch.setattr(threading.Thread, "start", counting_start)
    for index in range(50):
        session.report_import_status(f"default-svc-{index}-service", True, "Succeeded")
    async with asyncio.timeout(WAIT):
        await session.wait_reports_sent()
    assert hub.engine.import_status["default-svc-49-service"]["east"].succeeded  # authenticated, all 50
    assert len(started) < 5, started
