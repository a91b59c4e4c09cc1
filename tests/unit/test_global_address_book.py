"""The member's global addresses (pure): allocation lowest first, sharing, all-or-nothing
exhaustion, the record read back after a restart, and the shadow Service."""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network

import pytest

from mcapi.global_addresses import GlobalAddresses
from member.global_addresses.book import AddressBook, Exhausted, pod_key, service_key
from member.global_addresses.shadow import LABEL_SHADOW_OF, desired_shadow, owns, shadow_name

BLOCK = IPv4Network("242.0.16.0/29")  # 8 addresses: .0 network, .1 egress, .2-.6 assignable, .7 broadcast
WEB, DB = ("web", "web"), ("web", "db")


def test_addresses_are_handed_out_lowest_first_never_the_egress_or_the_ends() -> None:
    book = AddressBook(BLOCK)
    assert book.free == 5
    held = book.assign(WEB, {service_key(*WEB)})
    assert held == {service_key(*WEB): IPv4Address("242.0.16.2")}
    held = book.assign(DB, {pod_key("10.1.0.5"), pod_key("10.1.0.6")})
    assert set(held.values()) == {IPv4Address("242.0.16.3"), IPv4Address("242.0.16.4")}
    assert book.free == 2


def test_assigning_again_keeps_the_addresses_and_lets_go_of_what_is_no_longer_asked_for() -> None:
    book = AddressBook(BLOCK)
    first = book.assign(DB, {pod_key("10.1.0.5"), pod_key("10.1.0.6")})
    again = book.assign(DB, {pod_key("10.1.0.6"), pod_key("10.1.0.7")})
    assert again[pod_key("10.1.0.6")] == first[pod_key("10.1.0.6")]
    assert book.address_of(pod_key("10.1.0.5")) is None
    # The freed address is the lowest free one again.
    assert book.assign(WEB, {service_key(*WEB)})[service_key(*WEB)] == first[pod_key("10.1.0.5")]


def test_a_pod_behind_two_exports_holds_one_address_until_both_let_go() -> None:
    book = AddressBook(BLOCK)
    a = book.assign(WEB, {pod_key("10.1.0.5")})
    b = book.assign(DB, {pod_key("10.1.0.5")})
    assert a == b
    book.release(WEB)
    assert book.address_of(pod_key("10.1.0.5")) == a[pod_key("10.1.0.5")]
    book.release(DB)
    assert book.address_of(pod_key("10.1.0.5")) is None
    assert book.free == 5


def test_an_export_that_does_not_fit_gets_nothing_and_changes_nothing() -> None:
    book = AddressBook(BLOCK)
    book.assign(WEB, {pod_key(f"10.1.0.{i}") for i in range(1, 5)})
    before = book.held()
    with pytest.raises(Exhausted, match="has 1 free address, 2 more are needed"):
        book.assign(DB, {pod_key("10.1.1.1"), pod_key("10.1.1.2")})
    assert book.held() == before
    assert book.assign(DB, {pod_key("10.1.1.1")})  # one still fits


def test_a_restart_gives_every_key_its_address_and_frees_what_nobody_claimed() -> None:
    book = AddressBook(BLOCK)
    book.assign(WEB, {service_key(*WEB)})
    book.assign(DB, {pod_key("10.1.0.5"), pod_key("10.1.0.6")})
    record = book.record(globally_addressed=True)
    assert record.services == {"web/web": "242.0.16.2"}
    again = AddressBook.from_record(BLOCK, GlobalAddresses.from_data(record.to_data()))
    # A new export first: it must not take an address the record holds for another.
    assert again.assign(("web", "new"), {service_key("web", "new")}) == {
        service_key("web", "new"): IPv4Address("242.0.16.5")
    }
    assert again.assign(WEB, {service_key(*WEB)}) == {service_key(*WEB): IPv4Address("242.0.16.2")}
    again.forget_unclaimed()  # db went while the member was away
    assert again.address_of(pod_key("10.1.0.5")) is None
    assert again.free == 3


def test_a_record_of_another_block_is_not_taken() -> None:
    record = GlobalAddresses("242.0.32.0/29", True, {"web/web": "242.0.32.2"}, {})
    assert AddressBook.from_record(BLOCK, record).held() == {}


def test_the_shadow_service_has_the_selector_ports_and_the_global_address_as_external_ip() -> None:
    service = {
        "metadata": {"name": "web", "namespace": "web", "labels": {"app": "web"}},
        "spec": {
            "clusterIP": "10.96.0.20",
            "selector": {"app": "web"},
            "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}, {"port": 53}],
            "sessionAffinity": "ClientIP",
        },
    }
    shadow = desired_shadow(service, "242.0.16.2")
    assert shadow["metadata"]["name"] == "mchub-global-web"
    assert shadow["metadata"]["labels"] == {LABEL_SHADOW_OF: "web"}
    assert owns(shadow)
    assert shadow["spec"] == {
        "type": "ClusterIP",
        "selector": {"app": "web"},
        "ports": [
            {"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080},
            {"port": 53, "protocol": "TCP", "targetPort": 53},
        ],
        "externalIPs": ["242.0.16.2"],
        "sessionAffinity": "ClientIP",
    }


def test_a_long_service_name_gets_a_shadow_name_that_is_still_a_service_name() -> None:
    long = "a" * 63
    name = shadow_name(long)
    assert len(name) <= 63 and name.startswith("mchub-global-aaa")
    assert name != shadow_name("a" * 62 + "b")
