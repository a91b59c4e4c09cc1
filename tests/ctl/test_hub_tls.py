"""mcctl reads the hub's REST facade over HTTPS and verifies its certificate: against the
hub's CA (--hub-ca-file or $MCHUB_HUB_CA), else the system's trust store; it never skips
verification, and never sends a token in plaintext off the machine."""

from __future__ import annotations

import json

import pytest

from hub.app import HubApp
from tests.ctl.conftest import Mcctl


def hub_args(hub: HubApp) -> list[str]:
    return ["--hub-url", hub.rest_url, "--token", hub.admin_token]


async def test_mcctl_reads_the_hub_over_https_trusting_the_ca_it_is_given(mcctl: Mcctl, hub: HubApp) -> None:
    assert hub.rest_url.startswith("https://") and hub.ca_cert is not None
    ran = await mcctl("get", "resourceexport", *hub_args(hub), "--hub-ca-file", hub.ca_cert, "-o", "json")
    assert ran.code == 0, ran.err
    assert json.loads(ran.out) == []


async def test_the_hub_ca_may_come_from_the_environment(
    mcctl: Mcctl, hub: HubApp, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert hub.ca_cert is not None
    monkeypatch.setenv("MCHUB_HUB_CA", str(hub.ca_cert))
    ran = await mcctl("get", "resourceimport", *hub_args(hub))
    assert ran.code == 0, ran.err


async def test_a_hub_certificate_nobody_vouched_for_is_refused_with_the_way_out(mcctl: Mcctl, hub: HubApp) -> None:
    ran = await mcctl("get", "resourceexport", *hub_args(hub))
    assert ran.code == 3
    assert "not trusted" in ran.err and "--hub-ca-file" in ran.err and "MCHUB_HUB_CA" in ran.err


async def test_plaintext_to_a_hub_off_this_machine_is_refused_before_any_connection(mcctl: Mcctl) -> None:
    ran = await mcctl("get", "resourceexport", "--hub-url", "http://hub.example:8080", "--token", "t")
    assert ran.code == 2
    assert "https://" in ran.err and "plaintext" in ran.err


@pytest.mark.parametrize("url", ["hub.example:8080", "ftp://hub.example"])
async def test_a_hub_url_without_an_http_scheme_is_a_usage_error(mcctl: Mcctl, url: str) -> None:
    ran = await mcctl("get", "resourceexport", "--hub-url", url, "--token", "t")
    assert ran.code == 2
    assert "https://HOST:PORT" in ran.err


async def test_an_unreadable_hub_ca_file_is_a_usage_error(mcctl: Mcctl, hub: HubApp) -> None:
    ran = await mcctl("get", "resourceexport", *hub_args(hub), "--hub-ca-file", "/nonexistent/ca.crt")
    assert ran.code == 2
    assert "--hub-ca-file" in ran.err
