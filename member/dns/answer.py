"""One query in, one answer out: the wire format side of the clusterset.local server.

dnspython reads and writes every message; this module decides what to answer:

- fewer bytes than a header, or a response (QR set): dropped, never answered;
- larger than ``max_query_size``, or unreadable: FORMERR with the query's ID;
- an EDNS version other than 0: BADVERS; an opcode other than QUERY: NOTIMP; other than one
  question: FORMERR; a class other than IN, or a zone transfer: REFUSED;
- otherwise the zone's answer, authoritative. Over UDP the answer fits in 512 bytes, or in
  the client's EDNS payload size capped at ``max_udp_payload``; one that does not fit goes out
  with the TC bit (records that do not fit left out) so the client asks again over TCP, where
  the whole answer is sent.

A packet cache keeps the answers dnspython rendered, keyed by the query's bytes after its ID
(flags, question as asked, EDNS) and the transport: a query asked before is answered with the
same bytes under its own ID, without reading or rendering again. It is emptied whenever the
zone changes (its SOA serial moves) and when it holds ``max_cached_answers``, so a flood of
distinct names costs at most that much memory.
"""

from __future__ import annotations

import logging

import dns.exception
import dns.flags
import dns.message
import dns.opcode
import dns.rcode
import dns.rdataclass
import dns.rdatatype

from member.dns.metrics import DnsMetrics
from member.dns.zone import ClustersetZone

log = logging.getLogger(__name__)

HEADER_SIZE = 12
PLAIN_UDP_PAYLOAD = 512
# The DNS flag day 2020 default: answers that large pass every path without fragmenting.
DEFAULT_MAX_UDP_PAYLOAD = 1232
DEFAULT_MAX_QUERY_SIZE = 1024
DEFAULT_MAX_CACHED_ANSWERS = 4096
TCP_MAX_MESSAGE = 65535

_REFUSED_TYPES = frozenset({dns.rdatatype.AXFR, dns.rdatatype.IXFR})
_FLAG_QR = 0x80  # in the third byte of the header


class Responder:
    def __init__(
        self,
        zone: ClustersetZone,
        metrics: DnsMetrics,
        *,
        max_udp_payload: int = DEFAULT_MAX_UDP_PAYLOAD,
        max_query_size: int = DEFAULT_MAX_QUERY_SIZE,
        max_cached_answers: int = DEFAULT_MAX_CACHED_ANSWERS,
    ) -> None:
        """``max_udp_payload``: bytes, the largest UDP answer; ``max_query_size``: bytes, the
        largest query read; ``max_cached_answers``: entries of the packet cache (0: none)."""
        self.zone = zone
        self.metrics = metrics
        self.max_udp_payload = max(PLAIN_UDP_PAYLOAD, min(max_udp_payload, TCP_MAX_MESSAGE))
        self.max_query_size = max_query_size
        self.max_cached_answers = max_cached_answers
        # (udp, query bytes after the ID) -> (question type, rcode, truncated, answer after the ID)
        self._cache: dict[tuple[bool, bytes], tuple[int | None, int, bool, bytes]] = {}
        self._cache_serial = zone.serial
        self.cache_hits = 0

    @property
    def cached_answers(self) -> int:
        return len(self._cache)

    def respond(self, wire: bytes, *, udp: bool) -> bytes | None:
        """The answer to ``wire`` (a whole DNS message), or None to drop it."""
        if len(wire) < HEADER_SIZE:
            self.metrics.drop("short")
            return None
        if wire[2] & _FLAG_QR:
            self.metrics.drop("response")
            return None
        if len(wire) > self.max_query_size:
            return self._header_only(wire, dns.rcode.FORMERR)
        if self._cache_serial != self.zone.serial:
            self._cache.clear()
            self._cache_serial = self.zone.serial
        key = (udp, wire[2:])
        cached = self._cache.get(key)
        if cached is not None:
            rdtype, rcode, truncated, body = cached
            self.cache_hits += 1
            self._count(rdtype, rcode, truncated)
            return wire[:2] + body
        try:
            query = dns.message.from_wire(wire)
        except dns.message.UnknownTSIGKey:
            return self._header_only(wire, dns.rcode.REFUSED)
        except Exception:  # whatever the bytes are, the answer is FORMERR, never a crash
            return self._header_only(wire, dns.rcode.FORMERR)
        try:
            rdtype, rcode, truncated, answer = self._answer(query, udp)
        except Exception:
            log.exception("dnsAnswerFailed", extra={"query": str(query.question)})
            return self._header_only(wire, dns.rcode.SERVFAIL)
        self._count(rdtype, rcode, truncated)
        if self.max_cached_answers > 0:
            if len(self._cache) >= self.max_cached_answers:
                self._cache.clear()
            self._cache[key] = (rdtype, rcode, truncated, answer[2:])
        return answer

    def _count(self, rdtype: int | None, rcode: int, truncated: bool) -> None:
        self.metrics.answered(rdtype, rcode)
        if truncated:
            self.metrics.truncated.inc()

    def _answer(self, query: dns.message.Message, udp: bool) -> tuple[int | None, int, bool, bytes]:
        """(question type, rcode, truncated, the answer's wire format)."""
        response = dns.message.make_response(query, our_payload=self.max_udp_payload)
        rdtype: int | None = query.question[0].rdtype if len(query.question) == 1 else None
        rcode = self._fill(query, response)
        response.set_rcode(rcode)
        if not udp:
            return rdtype, rcode, False, response.to_wire(max_size=TCP_MAX_MESSAGE)
        limit = PLAIN_UDP_PAYLOAD
        if query.edns >= 0:
            limit = min(max(query.payload, PLAIN_UDP_PAYLOAD), self.max_udp_payload)
        wire = response.to_wire(max_size=limit, prefer_truncation=True)
        truncated = bool(int.from_bytes(wire[2:4], "big") & dns.flags.TC)
        return rdtype, rcode, truncated, wire

    def _fill(self, query: dns.message.Message, response: dns.message.Message) -> dns.rcode.Rcode:
        """Put the answer into ``response``; its rcode."""
        if query.edns > 0:
            return dns.rcode.BADVERS
        if query.opcode() != dns.opcode.QUERY:
            return dns.rcode.NOTIMP
        if len(query.question) != 1:
            return dns.rcode.FORMERR
        question = query.question[0]
        if question.rdclass not in (dns.rdataclass.IN, dns.rdataclass.ANY) or question.rdtype in _REFUSED_TYPES:
            return dns.rcode.REFUSED
        found = self.zone.lookup(question.name, question.rdtype)
        if found.authoritative:
            response.flags |= dns.flags.AA
        response.answer.extend(found.answer)
        response.authority.extend(found.authority)
        response.additional.extend(found.additional)
        return found.rcode

    def _header_only(self, wire: bytes, rcode: dns.rcode.Rcode) -> bytes:
        """An answer with no sections, for a query that cannot be read (its ID and opcode kept)."""
        self.metrics.answered(None, rcode)
        qid = int.from_bytes(wire[:2], "big")
        flags = int.from_bytes(wire[2:4], "big")
        response = dns.message.Message(id=qid)
        response.flags = dns.flags.QR | (flags & (dns.flags.RD | 0x7800))  # RD and the opcode bits
        response.set_rcode(rcode)
        return response.to_wire()
