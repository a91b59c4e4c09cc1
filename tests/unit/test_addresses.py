"""mcapi.addresses: IP addresses and loopback hosts, as the hub, members and mcctl judge them."""

from __future__ import annotations

import pytest

from mcapi.addresses import is_ip_address, is_loopback_host


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "127.8.9.10", "::1", "[::1]"])
def test_loopback_hosts(host: str) -> None:
    assert is_loopback_host(host)


@pytest.mark.parametrize("host", ["hub.example", "10.0.0.1", "0.0.0.0", "::", "", "localhost.example"])
def test_hosts_that_are_not_the_loopback(host: str) -> None:
    assert not is_loopback_host(host)


def test_ip_addresses_are_addresses_not_names_or_networks() -> None:
    assert is_ip_address("10.1.2.3") and is_ip_address("fd00::1")
    assert not is_ip_address("hub.example") and not is_ip_address("10.0.0.0/8") and not is_ip_address("")
