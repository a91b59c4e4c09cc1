"""What the clusterset.local DNS server answered, as Prometheus metrics.

- ``mchub_dns_queries_total{type,rcode}``: every query answered, by question type (A, AAAA,
  SRV, ...; ``other`` for a type outside a fixed list, so a flood of odd types cannot grow
  the label set; ``none`` when the query could not be read) and response code.
- ``mchub_dns_dropped_total{reason}``: queries not answered: ``short`` (not even a header),
  ``response`` (a response, never answered, so two servers cannot loop), ``backlog`` (the UDP
  send buffer is full: answering would only queue), ``tcp_limit`` (too many TCP connections).
- ``mchub_dns_truncated_total``: UDP answers sent with the TC bit (the client asks again over TCP).
- ``mchub_dns_tcp_connections``: TCP connections open now.

The collectors belong to no registry until ``register(registry)``: the member shows them on
its own registry.
"""

from __future__ import annotations

import dns.rcode
import dns.rdatatype
from prometheus_client import CollectorRegistry, Counter, Gauge

_TYPES = frozenset(
    dns.rdatatype.from_text(name)
    for name in ("A", "AAAA", "SRV", "TXT", "SOA", "NS", "PTR", "CNAME", "MX", "ANY", "AXFR", "IXFR", "HTTPS", "SVCB")
)
NO_QUESTION = "none"
OTHER_TYPE = "other"


def type_label(rdtype: int | None) -> str:
    if rdtype is None:
        return NO_QUESTION
    return dns.rdatatype.to_text(dns.rdatatype.RdataType(rdtype)) if rdtype in _TYPES else OTHER_TYPE


class DnsMetrics:
    def __init__(self) -> None:
        self.queries = Counter(
            "mchub_dns_queries_total",
            "DNS queries answered by the clusterset.local server, by question type and response code.",
            ["type", "rcode"],
            registry=None,
        )
        self.dropped = Counter(
            "mchub_dns_dropped_total", "DNS queries dropped without an answer, by reason.", ["reason"], registry=None
        )
        self.truncated = Counter(
            "mchub_dns_truncated_total",
            "UDP answers sent truncated (TC) for the client to ask over TCP.",
            registry=None,
        )
        self.tcp_connections = Gauge("mchub_dns_tcp_connections", "Open DNS TCP connections.", registry=None)
        # Children by label values: labels() takes a lock and builds a key every call.
        self._answered: dict[tuple[int | None, int], Counter] = {}

    def register(self, registry: CollectorRegistry) -> None:
        for collector in (self.queries, self.dropped, self.truncated, self.tcp_connections):
            registry.register(collector)

    def answered(self, rdtype: int | None, rcode: int) -> None:
        key = (rdtype if rdtype is None or rdtype in _TYPES else -1, rcode)
        child = self._answered.get(key)
        if child is None:
            child = self.queries.labels(type_label(rdtype), dns.rcode.to_text(dns.rcode.Rcode(rcode)))
            self._answered[key] = child
        child.inc()

    def drop(self, reason: str) -> None:
        self.dropped.labels(reason).inc()
