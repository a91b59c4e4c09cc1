"""The clusterset.local zone: names and records from ServiceImports and EndpointSlices (pure)."""

from __future__ import annotations

import dns.name
import dns.rcode
import dns.rdatatype
import dns.rrset

from member.dns.zone import ClustersetZone, Lookup
from tests.member_dns.objects import endpoint, endpoint_slice, service_import


def ask(zone: ClustersetZone, name: str, rdtype: str = "A") -> Lookup:
    return zone.lookup(dns.name.from_text(name), dns.rdatatype.from_text(rdtype))


def values(rrsets: tuple[dns.rrset.RRset, ...], rdtype: str | None = None) -> set[str]:
    return {
        rdata.to_text()
        for rrset in rrsets
        if rdtype is None or rrset.rdtype == dns.rdatatype.from_text(rdtype)
        for rdata in rrset
    }


def test_a_clustersetip_import_answers_its_ips_with_the_ttl() -> None:
    zone = ClustersetZone()
    zone.put_service_import(service_import("nginx", "web", ips=["10.112.0.5"]))
    found = ask(zone, "nginx.web.svc.clusterset.local.")
    assert found.rcode == dns.rcode.NOERROR
    assert values(found.answer) == {"10.112.0.5"}
    assert [rrset.ttl for rrset in found.answer] == [5]
    assert found.authoritative


def test_the_ttl_is_configurable() -> None:
    zone = ClustersetZone(ttl=30)
    zone.put_service_import(service_import("nginx", "web", ips=["10.112.0.5"]))
    assert [rrset.ttl for rrset in ask(zone, "nginx.web.svc.clusterset.local.").answer] == [30]


def test_dual_stack_ips_answer_a_and_aaaa_and_a_missing_type_is_no_data() -> None:
    zone = ClustersetZone()
    zone.put_service_import(service_import("v4", ips=["10.112.0.5"]))
    zone.put_service_import(service_import("dual", ips=["10.112.0.6", "fd00::6"]))
    assert values(ask(zone, "dual.default.svc.clusterset.local.", "AAAA").answer) == {"fd00::6"}
    assert values(ask(zone, "dual.default.svc.clusterset.local.", "A").answer) == {"10.112.0.6"}
    no_data = ask(zone, "v4.default.svc.clusterset.local.", "AAAA")
    assert no_data.rcode == dns.rcode.NOERROR
    assert no_data.answer == ()
    # A negative answer carries the SOA, whose minimum is the negative-caching TTL.
    assert [rrset.rdtype for rrset in no_data.authority] == [dns.rdatatype.SOA]
    assert no_data.authority[0][0].minimum == 5


def test_names_are_case_insensitive() -> None:
    zone = ClustersetZone()
    zone.put_service_import(service_import("nginx", "web", ips=["10.112.0.5"]))
    assert values(ask(zone, "NGINX.Web.SVC.ClusterSet.LOCAL.").answer) == {"10.112.0.5"}


def test_names_not_imported_are_nxdomain_and_names_outside_the_zone_refused() -> None:
    zone = ClustersetZone()
    zone.put_service_import(service_import("nginx", "web", ips=["10.112.0.5"]))
    assert ask(zone, "other.web.svc.clusterset.local.").rcode == dns.rcode.NXDOMAIN
    assert ask(zone, "nginx.other.svc.clusterset.local.").rcode == dns.rcode.NXDOMAIN
    assert ask(zone, "x.nginx.web.svc.clusterset.local.").rcode == dns.rcode.NXDOMAIN
    assert ask(zone, "nginx.web.svc.cluster.local.").rcode == dns.rcode.REFUSED
    assert ask(zone, "example.com.").rcode == dns.rcode.REFUSED
    assert ask(zone, "local.").rcode == dns.rcode.REFUSED
    nx = ask(zone, "other.web.svc.clusterset.local.")
    assert [rrset.rdtype for rrset in nx.authority] == [dns.rdatatype.SOA]


def test_names_above_an_import_exist_without_data() -> None:
    zone = ClustersetZone()
    zone.put_service_import(service_import("nginx", "web", ips=["10.112.0.5"]))
    for name in ("web.svc.clusterset.local.", "svc.clusterset.local.", "clusterset.local."):
        found = ask(zone, name)
        assert (found.rcode, found.answer) == (dns.rcode.NOERROR, ()), name
    zone.delete_service_import(service_import("nginx", "web"))
    assert ask(zone, "web.svc.clusterset.local.").rcode == dns.rcode.NXDOMAIN


def test_the_apex_has_an_soa_and_the_schema_version() -> None:
    zone = ClustersetZone()
    assert values(ask(zone, "clusterset.local.", "SOA").answer) != set()
    assert values(ask(zone, "dns-version.clusterset.local.", "TXT").answer) == {'"1.0.0"'}


def test_srv_per_named_port_of_a_clustersetip_import_points_at_the_service() -> None:
    zone = ClustersetZone()
    ports = [("http", 80, "TCP"), ("dns", 53, "UDP"), ("", 81, "TCP")]
    zone.put_service_import(service_import("nginx", "web", ips=["10.112.0.5"], ports=ports))
    http = ask(zone, "_http._tcp.nginx.web.svc.clusterset.local.", "SRV")
    assert [(r.port, r.target.to_text()) for rrset in http.answer for r in rrset] == [
        (80, "nginx.web.svc.clusterset.local.")
    ]
    # The target's address rides along.
    assert values(http.additional, "A") == {"10.112.0.5"}
    dns_port = ask(zone, "_dns._udp.nginx.web.svc.clusterset.local.", "SRV")
    assert [r.port for rrset in dns_port.answer for r in rrset] == [53]
    assert ask(zone, "_http._udp.nginx.web.svc.clusterset.local.", "SRV").rcode == dns.rcode.NXDOMAIN
    # `_tcp.<svc>` is a name on the way to the SRV records: it exists, without data.
    assert ask(zone, "_tcp.nginx.web.svc.clusterset.local.", "SRV").rcode == dns.rcode.NOERROR


def test_a_clustersetip_import_has_no_per_cluster_names() -> None:
    zone = ClustersetZone()
    zone.put_service_import(service_import("nginx", "web", ips=["10.112.0.5"]))
    zone.put_endpoint_slice(endpoint_slice("nginx", "west", [endpoint("10.0.0.1", "pod-a")], "web"))
    assert ask(zone, "pod-a.west.nginx.web.svc.clusterset.local.").rcode == dns.rcode.NXDOMAIN
    assert ask(zone, "west.nginx.web.svc.clusterset.local.").rcode == dns.rcode.NXDOMAIN
    assert values(ask(zone, "nginx.web.svc.clusterset.local.").answer) == {"10.112.0.5"}


def test_an_import_without_ips_yet_has_no_name() -> None:
    zone = ClustersetZone()
    zone.put_service_import(service_import("nginx", "web"))
    assert ask(zone, "nginx.web.svc.clusterset.local.").rcode == dns.rcode.NXDOMAIN
    zone.put_service_import(service_import("nginx", "web", ips=["10.112.0.5"]))
    assert values(ask(zone, "nginx.web.svc.clusterset.local.").answer) == {"10.112.0.5"}


def _headless_zone() -> ClustersetZone:
    zone = ClustersetZone()
    zone.put_service_import(service_import("db", "data", headless=True, ports=[("pg", 5432, "TCP"), ("", 9, "TCP")]))
    west = [
        endpoint("10.0.0.1", "db-0"),
        endpoint("10.0.0.2"),  # no hostname: named after its address
        endpoint("10.0.0.3", "db-2", ready=False),
        endpoint("10.0.0.4", "db-3", ready=None),  # unknown readiness counts as ready
    ]
    zone.put_endpoint_slice(endpoint_slice("db", "west", west, "data", ports=[("pg", 5433, "TCP"), ("", 9, "TCP")]))
    zone.put_endpoint_slice(
        endpoint_slice(
            "db", "north", [endpoint("fd00::9", "db-0")], "data", ports=[("pg", 5433, "TCP")], address_type="IPv6"
        )
    )
    return zone


def test_a_headless_import_answers_one_record_per_ready_endpoint() -> None:
    zone = _headless_zone()
    assert values(ask(zone, "db.data.svc.clusterset.local.").answer) == {"10.0.0.1", "10.0.0.2", "10.0.0.4"}
    assert values(ask(zone, "db.data.svc.clusterset.local.", "AAAA").answer) == {"fd00::9"}


def test_a_headless_import_names_each_endpoint_by_hostname_and_cluster() -> None:
    zone = _headless_zone()
    assert values(ask(zone, "db-0.west.db.data.svc.clusterset.local.").answer) == {"10.0.0.1"}
    assert values(ask(zone, "db-0.north.db.data.svc.clusterset.local.", "AAAA").answer) == {"fd00::9"}
    assert values(ask(zone, "10-0-0-2.west.db.data.svc.clusterset.local.").answer) == {"10.0.0.2"}
    assert ask(zone, "db-2.west.db.data.svc.clusterset.local.").rcode == dns.rcode.NXDOMAIN
    assert ask(zone, "west.db.data.svc.clusterset.local.").rcode == dns.rcode.NOERROR


def test_a_headless_import_has_srv_per_ready_endpoint_and_named_port() -> None:
    zone = _headless_zone()
    found = ask(zone, "_pg._tcp.db.data.svc.clusterset.local.", "SRV")
    assert sorted((r.port, r.target.to_text()) for rrset in found.answer for r in rrset) == [
        (5433, "10-0-0-2.west.db.data.svc.clusterset.local."),
        (5433, "db-0.north.db.data.svc.clusterset.local."),
        (5433, "db-0.west.db.data.svc.clusterset.local."),
        (5433, "db-3.west.db.data.svc.clusterset.local."),
    ]
    assert values(found.additional) >= {"10.0.0.1", "fd00::9"}


def test_a_headless_import_without_ready_endpoints_is_nxdomain() -> None:
    zone = ClustersetZone()
    zone.put_service_import(service_import("db", "data", headless=True))
    assert ask(zone, "db.data.svc.clusterset.local.").rcode == dns.rcode.NXDOMAIN
    only_unready = endpoint_slice("db", "west", [endpoint("10.0.0.3", "db-2", ready=False)], "data")
    zone.put_endpoint_slice(only_unready)
    assert ask(zone, "db.data.svc.clusterset.local.").rcode == dns.rcode.NXDOMAIN


def test_slices_that_come_before_their_import_are_kept() -> None:
    zone = ClustersetZone()
    zone.put_endpoint_slice(endpoint_slice("db", "west", [endpoint("10.0.0.1", "db-0")], "data"))
    assert ask(zone, "db.data.svc.clusterset.local.").rcode == dns.rcode.NXDOMAIN
    zone.put_service_import(service_import("db", "data", headless=True))
    assert values(ask(zone, "db.data.svc.clusterset.local.").answer) == {"10.0.0.1"}


def test_changes_and_deletes_replace_the_records() -> None:
    zone = _headless_zone()
    zone.put_endpoint_slice(endpoint_slice("db", "west", [endpoint("10.0.0.7", "db-0")], "data"))
    assert values(ask(zone, "db.data.svc.clusterset.local.").answer) == {"10.0.0.7"}
    assert ask(zone, "db-3.west.db.data.svc.clusterset.local.").rcode == dns.rcode.NXDOMAIN
    zone.delete_endpoint_slice(endpoint_slice("db", "west", [], "data"))
    assert ask(zone, "db.data.svc.clusterset.local.").rcode == dns.rcode.NOERROR  # north's AAAA is left
    assert ask(zone, "db-0.west.db.data.svc.clusterset.local.").rcode == dns.rcode.NXDOMAIN
    zone.delete_service_import(service_import("db", "data"))
    assert ask(zone, "db.data.svc.clusterset.local.", "AAAA").rcode == dns.rcode.NXDOMAIN
    assert ask(zone, "data.svc.clusterset.local.").rcode == dns.rcode.NXDOMAIN


def test_an_import_that_turns_headless_changes_its_records() -> None:
    zone = ClustersetZone()
    zone.put_endpoint_slice(endpoint_slice("app", "west", [endpoint("10.0.0.1", "a-0")]))
    zone.put_service_import(service_import("app", ips=["10.112.0.9"]))
    assert values(ask(zone, "app.default.svc.clusterset.local.").answer) == {"10.112.0.9"}
    zone.put_service_import(service_import("app", headless=True))
    assert values(ask(zone, "app.default.svc.clusterset.local.").answer) == {"10.0.0.1"}
    assert values(ask(zone, "a-0.west.app.default.svc.clusterset.local.").answer) == {"10.0.0.1"}


def test_any_answers_every_type_at_the_name() -> None:
    zone = ClustersetZone()
    zone.put_service_import(service_import("dual", ips=["10.112.0.6", "fd00::6"]))
    assert values(ask(zone, "dual.default.svc.clusterset.local.", "ANY").answer) == {
        "10.112.0.6",
        "fd00::6",
        "0 100 80 dual.default.svc.clusterset.local.",
    }


def test_srv_at_a_clustersetip_name_is_one_record_per_port_number_as_coredns_answers() -> None:
    """The same number over TCP and UDP is one record; an unnamed port has one too."""
    zone = ClustersetZone()
    ports = [("tcp", 42, "TCP"), ("udp", 42, "UDP"), ("", 8080, "TCP")]
    zone.put_service_import(service_import("hello", "mcs", ips=["10.112.0.7"], ports=ports))
    found = ask(zone, "hello.mcs.svc.clusterset.local.", "SRV")
    assert sorted((r.port, r.target.to_text()) for rrset in found.answer for r in rrset) == [
        (42, "hello.mcs.svc.clusterset.local."),
        (8080, "hello.mcs.svc.clusterset.local."),
    ]
    assert values(found.additional) == {"10.112.0.7"}


def test_srv_at_a_headless_name_is_one_record_per_ready_endpoint_and_port_number() -> None:
    zone = _headless_zone()
    found = ask(zone, "db.data.svc.clusterset.local.", "SRV")
    assert sorted((r.port, r.target.to_text()) for rrset in found.answer for r in rrset) == [
        (9, "10-0-0-2.west.db.data.svc.clusterset.local."),
        (9, "db-0.west.db.data.svc.clusterset.local."),
        (9, "db-3.west.db.data.svc.clusterset.local."),
        (5433, "10-0-0-2.west.db.data.svc.clusterset.local."),
        (5433, "db-0.north.db.data.svc.clusterset.local."),
        (5433, "db-0.west.db.data.svc.clusterset.local."),
        (5433, "db-3.west.db.data.svc.clusterset.local."),
    ]


def test_objects_that_cannot_be_named_are_left_out_without_failing() -> None:
    zone = ClustersetZone()
    zone.put_service_import(service_import("x" * 70, ips=["10.112.0.5"]))
    zone.put_service_import(service_import("bad-ip", ips=["not-an-ip"]))
    zone.put_service_import({"metadata": {"name": "nospec", "namespace": "default"}})
    zone.put_service_import({"metadata": {}})
    slice_ = endpoint_slice("db", "a.b", [endpoint("10.0.0.1", "db-0")], "data")
    zone.put_service_import(service_import("db", "data", headless=True))
    zone.put_endpoint_slice(slice_)
    zone.put_endpoint_slice(endpoint_slice("db", "west", [endpoint("10.0.0.2", "x" * 70), {"addresses": None}], "data"))
    assert ask(zone, "bad-ip.default.svc.clusterset.local.").rcode == dns.rcode.NXDOMAIN
    # Unusable endpoint names are dropped; their addresses still count for the Service.
    assert values(ask(zone, "db.data.svc.clusterset.local.").answer) == {"10.0.0.1", "10.0.0.2"}
