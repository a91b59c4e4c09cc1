"""Queries on the wire -> answers on the wire, and what the metrics count (no sockets)."""

from __future__ import annotations

import dns.edns
import dns.flags
import dns.message
import dns.opcode
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset
from prometheus_client import CollectorRegistry

from member.dns.answer import Responder
from member.dns.metrics import DnsMetrics
from member.dns.zone import ClustersetZone
from tests.member_dns.objects import endpoint, endpoint_slice, service_import

NAME = "nginx.web.svc.clusterset.local."


def responder(registry: CollectorRegistry | None = None, **options: int) -> Responder:
    zone = ClustersetZone()
    zone.put_service_import(service_import("nginx", "web", ips=["10.112.0.5"]))
    zone.put_service_import(service_import("big", "web", headless=True))
    many = [endpoint(f"10.1.{i // 250}.{i % 250 + 1}", f"pod-{i}") for i in range(100)]
    zone.put_endpoint_slice(endpoint_slice("big", "west", many, "web"))
    metrics = DnsMetrics()
    if registry is not None:
        metrics.register(registry)
    return Responder(zone, metrics, **options)


def ask(r: Responder, query: dns.message.Message, *, udp: bool = True) -> dns.message.Message:
    wire = r.respond(query.to_wire(), udp=udp)
    assert wire is not None
    return dns.message.from_wire(wire)


def test_an_answer_echoes_the_question_as_asked_and_is_authoritative() -> None:
    query = dns.message.make_query("NGINX.web.svc.ClusterSet.local.", "A")
    answer = ask(responder(), query)
    assert answer.id == query.id
    assert answer.rcode() == dns.rcode.NOERROR
    assert answer.flags & dns.flags.QR and answer.flags & dns.flags.AA
    assert not answer.flags & dns.flags.RA
    assert answer.question[0].name.to_text() == "NGINX.web.svc.ClusterSet.local."
    assert [r.to_text() for rrset in answer.answer for r in rrset] == ["10.112.0.5"]
    assert answer.answer[0].ttl == 5


def test_negative_answers_and_refusals() -> None:
    r = responder()
    nx = ask(r, dns.message.make_query("gone.web.svc.clusterset.local.", "A"))
    assert nx.rcode() == dns.rcode.NXDOMAIN and nx.flags & dns.flags.AA
    assert nx.authority[0].rdtype == dns.rdatatype.SOA
    no_data = ask(r, dns.message.make_query(NAME, "AAAA"))
    assert (no_data.rcode(), no_data.answer) == (dns.rcode.NOERROR, [])
    refused = ask(r, dns.message.make_query("example.com.", "A"))
    assert refused.rcode() == dns.rcode.REFUSED and not refused.flags & dns.flags.AA


def test_garbage_is_formerr_with_the_query_id_and_too_short_is_dropped() -> None:
    r = responder()
    wire = r.respond(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07broken", udp=True)
    assert wire is not None
    answer = dns.message.from_wire(wire)
    assert (answer.id, answer.rcode()) == (0x1234, dns.rcode.FORMERR)
    assert r.respond(b"\x12\x34\x01", udp=True) is None
    assert r.respond(b"", udp=True) is None


def test_responses_are_never_answered() -> None:
    r = responder()
    query = dns.message.make_query(NAME, "A")
    query.flags |= dns.flags.QR
    assert r.respond(query.to_wire(), udp=True) is None


def test_an_oversized_query_is_formerr() -> None:
    r = responder(max_query_size=512)
    query = dns.message.make_query(NAME, "A", use_edns=0, options=[dns.edns.GenericOption(65001, b"x" * 600)])
    wire = r.respond(query.to_wire(), udp=True)
    assert wire is not None
    assert dns.message.from_wire(wire).rcode() == dns.rcode.FORMERR


def test_two_questions_are_formerr_other_opcodes_notimp_other_classes_refused() -> None:
    r = responder()
    two = dns.message.make_query(NAME, "A")
    two.question.append(dns.rrset.RRset(two.question[0].name, dns.rdataclass.IN, dns.rdatatype.AAAA))
    assert ask(r, two).rcode() == dns.rcode.FORMERR
    update = dns.message.make_query(NAME, "A")
    update.set_opcode(dns.opcode.NOTIFY)
    assert ask(r, update).rcode() == dns.rcode.NOTIMP
    chaos = dns.message.make_query("version.bind.", "TXT", rdclass=dns.rdataclass.CH)
    assert ask(r, chaos).rcode() == dns.rcode.REFUSED
    transfer = dns.message.make_query("clusterset.local.", "AXFR")
    assert ask(r, transfer, udp=False).rcode() == dns.rcode.REFUSED


def test_an_unknown_edns_version_is_badvers() -> None:
    query = dns.message.make_query(NAME, "A", use_edns=1)
    answer = ask(responder(), query)
    assert answer.rcode() == dns.rcode.BADVERS
    assert answer.edns == 0


def test_a_large_answer_is_truncated_over_udp_and_whole_over_tcp() -> None:
    r = responder()
    plain = ask(r, dns.message.make_query("big.web.svc.clusterset.local.", "A"))
    assert plain.flags & dns.flags.TC
    assert plain.answer == []
    # EDNS raises the limit, up to what the server allows (1232 by default): still too small.
    edns = ask(r, dns.message.make_query("big.web.svc.clusterset.local.", "A", use_edns=0, payload=4096))
    assert edns.flags & dns.flags.TC
    assert edns.payload == 1232
    whole = ask(r, dns.message.make_query("big.web.svc.clusterset.local.", "A"), udp=False)
    assert not whole.flags & dns.flags.TC
    assert len(whole.answer[0]) == 100
    # An answer that fits is whole over UDP too.
    roomy = Responder(r.zone, DnsMetrics(), max_udp_payload=4096)
    fits = ask(roomy, dns.message.make_query("big.web.svc.clusterset.local.", "A", use_edns=0, payload=4096))
    assert not fits.flags & dns.flags.TC
    assert len(fits.answer[0]) == 100


def test_srv_answers_carry_the_targets_addresses() -> None:
    answer = ask(responder(), dns.message.make_query("_http._tcp.nginx.web.svc.clusterset.local.", "SRV"))
    assert [r.to_text() for rrset in answer.answer for r in rrset] == ["0 100 80 nginx.web.svc.clusterset.local."]
    assert [r.to_text() for rrset in answer.additional for r in rrset] == ["10.112.0.5"]


def test_metrics_count_queries_by_type_and_rcode() -> None:
    registry = CollectorRegistry()
    r = responder(registry)
    for _ in range(3):
        ask(r, dns.message.make_query(NAME, "A"))
    ask(r, dns.message.make_query("gone.web.svc.clusterset.local.", "AAAA"))
    ask(r, dns.message.make_query("example.com.", "TYPE65280"))
    r.respond(b"\x00\x01garbage-garbage", udp=True)
    r.respond(b"\x00", udp=True)
    ask(r, dns.message.make_query("big.web.svc.clusterset.local.", "A"))

    def sample(name: str, **labels: str) -> float | None:
        return registry.get_sample_value(name, labels)

    assert sample("mchub_dns_queries_total", type="A", rcode="NOERROR") == 4
    assert sample("mchub_dns_queries_total", type="AAAA", rcode="NXDOMAIN") == 1
    assert sample("mchub_dns_queries_total", type="other", rcode="REFUSED") == 1
    assert sample("mchub_dns_queries_total", type="none", rcode="FORMERR") == 1
    assert sample("mchub_dns_dropped_total", reason="short") == 1
    assert sample("mchub_dns_truncated_total") == 1


def test_repeated_queries_are_answered_from_the_packet_cache_until_the_zone_changes() -> None:
    registry = CollectorRegistry()
    r = responder(registry)
    first, second = dns.message.make_query(NAME, "A"), dns.message.make_query(NAME, "A")
    second.id = (first.id + 1) % 65536
    a, b = ask(r, first), ask(r, second)
    assert (a.id, b.id) == (first.id, second.id)
    assert a.answer == b.answer
    assert r.cache_hits == 1
    r.zone.put_service_import(service_import("nginx", "web", ips=["10.112.0.9"]))
    assert [rd.to_text() for rrset in ask(r, first).answer for rd in rrset] == ["10.112.0.9"]
    assert registry.get_sample_value("mchub_dns_queries_total", {"type": "A", "rcode": "NOERROR"}) == 3
    # Over TCP the same bytes may get a longer answer: never the UDP one.
    big = dns.message.make_query("big.web.svc.clusterset.local.", "A")
    assert ask(r, big).flags & dns.flags.TC
    assert not ask(r, big, udp=False).flags & dns.flags.TC


def test_the_packet_cache_is_bounded() -> None:
    r = responder(max_cached_answers=10)
    for i in range(50):
        ask(r, dns.message.make_query(f"n{i}.web.svc.clusterset.local.", "A"))
    assert r.cached_answers <= 10
