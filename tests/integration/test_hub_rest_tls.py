"""The REST facade carries bearer tokens, so it serves HTTPS with the hub's serving
certificate (the one gRPC serves); plaintext only with --insecure, and only on loopback."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import ssl
import sys
from dataclasses import replace
from pathlib import Path

import aiohttp
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from hub.app import HubApp
from hub.config import HubConfig, HubConfigError
from hub.tls import issue_ca, issue_serving_cert
from tests.integration.hub_fixtures import hub_config, rest_session
from tests.integration.hubprocess import hub_process


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


async def peer_certificate(host: str, port: int, ca: Path, alpn: str) -> bytes:
    """The DER certificate a TLS server at host:port presents, verified against `ca`."""
    context = ssl.create_default_context(cafile=str(ca))
    context.set_alpn_protocols([alpn])
    _, writer = await asyncio.open_connection(host, port, ssl=context)
    try:
        der: bytes = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
        return der
    finally:
        writer.close()
        # An HTTP/2 server has sent its settings by now; a TLS shutdown over them may complain.
        with contextlib.suppress(ssl.SSLError, ConnectionError):
            await writer.wait_closed()


def pem_to_der(pem: bytes) -> bytes:
    return x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)


async def test_rest_is_https_by_default_and_presents_the_certificate_grpc_serves(hub: HubApp) -> None:
    assert hub.rest_url.startswith("https://127.0.0.1:")
    assert hub.ca_cert is not None
    async with rest_session(hub) as http:
        async with http.get("/healthz") as response:
            assert response.status == 200
        async with http.get("/api/v1/clusterset", headers=bearer(hub.admin_token)) as response:
            assert response.status == 200, await response.text()
    served = pem_to_der((hub.config.tls_dir / "server.crt").read_bytes())
    assert await peer_certificate("127.0.0.1", hub.rest_port, hub.ca_cert, "http/1.1") == served
    assert await peer_certificate("127.0.0.1", hub.grpc_port, hub.ca_cert, "h2") == served


async def test_a_client_that_does_not_trust_the_hub_ca_is_refused_before_sending_a_token(hub: HubApp) -> None:
    async with aiohttp.ClientSession() as http:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await http.get(f"{hub.rest_url}/api/v1/clusterset", headers=bearer(hub.admin_token))


async def test_insecure_serves_rest_in_plaintext_on_loopback(tmp_path: Path) -> None:
    app = HubApp(hub_config(tmp_path / "hub", insecure=True))
    await app.start()
    try:
        assert app.rest_url.startswith("http://127.0.0.1:")
        async with aiohttp.ClientSession() as http, http.get(f"{app.rest_url}/healthz") as response:
            assert response.status == 200
    finally:
        await app.stop()


def test_insecure_is_refused_when_rest_listens_off_loopback(tmp_path: Path) -> None:
    config = HubConfig(data_dir=tmp_path, grpc_address="127.0.0.1:0", rest_address="0.0.0.0:8080", insecure=True)
    with pytest.raises(HubConfigError, match=r"REST.*loopback.*0\.0\.0\.0:8080"):
        config.validate()


async def test_an_operators_certificate_is_served_on_rest_as_on_grpc(tmp_path: Path) -> None:
    ca_pem, ca_key = issue_ca("operator-ca")
    cert_pem, key_pem = issue_serving_cert(ca_pem, ca_key, "hub.example", ("127.0.0.1",))
    for name, data in (("ca.crt", ca_pem), ("tls.crt", cert_pem), ("tls.key", key_pem)):
        (tmp_path / name).write_bytes(data)
    app = HubApp(hub_config(tmp_path / "hub", tls_cert=tmp_path / "tls.crt", tls_key=tmp_path / "tls.key"))
    await app.start()
    try:
        assert app.ca_cert is None  # nothing generated: the operator's CA is the one to trust
        trust = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=str(tmp_path / "ca.crt")))
        async with aiohttp.ClientSession(connector=trust) as http, http.get(f"{app.rest_url}/healthz") as response:
            assert response.status == 200
        assert await peer_certificate("127.0.0.1", app.rest_port, tmp_path / "ca.crt", "http/1.1") == pem_to_der(
            cert_pem
        )
    finally:
        await app.stop()


async def test_the_hub_logs_where_it_listens_and_where_its_certificate_comes_from(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ca_pem, ca_key = issue_ca("operator-ca")
    cert_pem, key_pem = issue_serving_cert(ca_pem, ca_key, "hub.example", ("127.0.0.1",))
    (tmp_path / "tls.crt").write_bytes(cert_pem)
    (tmp_path / "tls.key").write_bytes(key_pem)
    given = hub_config(
        tmp_path / "given", grpc_address="0.0.0.0:0", tls_cert=tmp_path / "tls.crt", tls_key=tmp_path / "tls.key"
    )
    logged = []
    for config in (given, hub_config(tmp_path / "generated")):
        app = HubApp(config)
        with caplog.at_level(logging.INFO, logger="hub.app"):
            await app.start()
        await app.stop()
        (record,) = [r for r in caplog.records if r.getMessage() == "hub serving"]
        caplog.clear()
        logged.append((app, record.__dict__))
    (app, fields), (_, generated_fields) = logged
    assert fields["grpc"] == f"0.0.0.0:{app.grpc_port}"  # not the loopback a local client would dial
    assert fields["rest"] == f"127.0.0.1:{app.rest_port}"
    assert fields["certificate"] == f"--tls-cert {tmp_path / 'tls.crt'}"
    tls = tmp_path / "generated" / "tls"
    assert generated_fields["certificate"] == f"generated {tls / 'server.crt'}, CA {tls / 'ca.crt'}"


def _ipv6_loopback() -> bool:
    try:
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
    except OSError:
        return False
    return True


@pytest.mark.skipif(not _ipv6_loopback(), reason="no IPv6 loopback here")
async def test_an_ipv6_rest_address_gives_a_bracketed_url_that_verifies(tmp_path: Path) -> None:
    app = HubApp(replace(hub_config(tmp_path / "hub"), rest_address="[::1]:0"))
    await app.start()
    try:
        assert app.rest_url == f"https://[::1]:{app.rest_port}"
        async with rest_session(app) as http, http.get("/healthz") as response:
            assert response.status == 200
    finally:
        await app.stop()


async def test_mchub_hub_prints_an_https_rest_address_its_data_dirs_ca_verifies(tmp_path: Path) -> None:
    async with hub_process(tmp_path / "data") as hub:
        assert hub.rest_url.startswith("https://127.0.0.1:")
        trust = aiohttp.TCPConnector(ssl=ssl.create_default_context(cafile=str(tmp_path / "data" / "tls" / "ca.crt")))
        async with aiohttp.ClientSession(connector=trust) as http, http.get(f"{hub.rest_url}/readyz") as response:
            assert response.status == 200


async def test_mchub_hub_refuses_plaintext_rest_off_loopback_with_exit_2(tmp_path: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "mchub_cli.main", "hub", "--data-dir", str(tmp_path / "data"), "--insecure",
        "--grpc-address", "127.0.0.1:0", "--rest-address", "0.0.0.0:0",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(process.communicate(), 30)
    assert process.returncode == 2
    assert "loopback" in err.decode() and "0.0.0.0:0" in err.decode()
