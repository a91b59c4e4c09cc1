"""The clusterset.local zone the member serves: name -> records, kept from ServiceImports and
EndpointSlices as they change (pure; no I/O).

Every change recomputes only the Service it touches (records.service_records) and swaps its
names in the index, so a query is one dict lookup. The zone answers as an authority:

- a name with records of the asked type: NOERROR and those records (SRV with the targets'
  addresses as additional records);
- a name that exists without that type, or lies on the way to one that exists
  (``<ns>.svc.clusterset.local``, ``_tcp.<svc>...``): NOERROR, no data;
- any other name under the zone: NXDOMAIN; both negative answers carry the zone's SOA, whose
  minimum is the TTL, so resolvers cache a negative answer no longer than a positive one;
- a name outside the zone: REFUSED.

Names compare case-insensitively: the index is keyed by the lowercased labels (hashing a
tuple of bytes is much cheaper than hashing a dnspython Name, which loops over characters).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset
from dns.rdtypes.ANY.SOA import SOA as _SOA
from dns.rdtypes.ANY.TXT import TXT as _TXT

from kube.resources import Obj
from mcapi import names
from member.dns.records import IN, Node, ServiceRecords, service_records

ORIGIN = "clusterset.local."
DEFAULT_TTL = 5
# The version of KEP-1645's multicluster DNS specification these records follow.
SCHEMA_VERSION = "1.0.0"

# dnspython's rdata constructors are untyped; these names give them a type.
SOA: Callable[..., dns.rdata.Rdata] = _SOA
TXT: Callable[..., dns.rdata.Rdata] = _TXT

ServiceKey = tuple[str, str]  # (namespace, Service name)
NameKey = tuple[bytes, ...]  # a name's labels, lowercased, the root label last


def fold(name: dns.name.Name) -> NameKey:
    return tuple(map(bytes.lower, name.labels))


@dataclass(frozen=True, slots=True)
class Lookup:
    rcode: dns.rcode.Rcode
    answer: tuple[dns.rrset.RRset, ...] = ()
    authority: tuple[dns.rrset.RRset, ...] = ()
    additional: tuple[dns.rrset.RRset, ...] = ()

    @property
    def authoritative(self) -> bool:
        return self.rcode != dns.rcode.REFUSED


_REFUSED = Lookup(dns.rcode.REFUSED)


def _key(obj: Obj) -> tuple[str, str] | None:
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        return None
    namespace, name = meta.get("namespace"), meta.get("name")
    if isinstance(namespace, str) and isinstance(name, str) and namespace and name:
        return namespace, name
    return None


def _service_of_slice(obj: Obj) -> str | None:
    labels = (obj.get("metadata") or {}).get("labels") or {}
    service = labels.get(names.LABEL_MCS_SERVICE_NAME)
    return service if isinstance(service, str) and service else None


class ClustersetZone:
    def __init__(self, ttl: int = DEFAULT_TTL, origin: str = ORIGIN) -> None:
        """``ttl``: seconds, for every record and for negative answers."""
        self.ttl = ttl
        self.origin = dns.name.from_text(origin)
        self.serial = 1
        self._imports: dict[ServiceKey, Obj] = {}
        self._slices: dict[ServiceKey, dict[str, Obj]] = {}
        self._slice_service: dict[tuple[str, str], ServiceKey] = {}  # (namespace, slice name) -> Service
        self._records: dict[ServiceKey, ServiceRecords] = {}
        self._origin_key = fold(self.origin)
        self._nodes: dict[NameKey, Node] = {}
        self._additional: dict[NameKey, tuple[dns.rrset.RRset, ...]] = {}
        self._between: Counter[NameKey] = Counter()  # names on the way to a name with records
        self._soa: tuple[dns.rrset.RRset, ...] = ()
        self._mname = dns.name.from_text("ns.dns", self.origin)
        self._rname = dns.name.from_text("hostmaster", self.origin)
        version = dns.name.from_text("dns-version", self.origin)
        txt = TXT(IN, dns.rdatatype.TXT, [SCHEMA_VERSION])
        self._nodes[fold(version)] = {dns.rdatatype.TXT: dns.rrset.from_rdata(version, self.ttl, txt)}
        self._apex()

    # ---- what is imported ----------------------------------------------------------------

    def put_service_import(self, obj: Obj) -> None:
        key = _key(obj)
        if key is not None:
            self._imports[key] = obj
            self._refresh(key)

    def delete_service_import(self, obj: Obj) -> None:
        key = _key(obj)
        if key is not None and self._imports.pop(key, None) is not None:
            self._refresh(key)

    def put_endpoint_slice(self, obj: Obj) -> None:
        key, service = _key(obj), _service_of_slice(obj)
        if key is None:
            return
        namespace, slice_name = key
        previous = self._slice_service.get(key)
        if previous is not None and previous != (namespace, service):
            self._drop_slice(key)  # relabelled to another Service
        if service is None:
            return
        owner = (namespace, service)
        self._slice_service[key] = owner
        self._slices.setdefault(owner, {})[slice_name] = obj
        self._refresh(owner)

    def delete_endpoint_slice(self, obj: Obj) -> None:
        key = _key(obj)
        if key is not None:
            self._drop_slice(key)

    def clear(self) -> None:
        for key in list(self._records):
            self._replace(key, ServiceRecords())
        self._imports.clear()
        self._slices.clear()
        self._slice_service.clear()

    @property
    def services(self) -> int:
        """How many Services have names in the zone."""
        return len(self._records)

    @property
    def names(self) -> int:
        return len(self._nodes)

    # ---- queries -------------------------------------------------------------------------

    def lookup(self, qname: dns.name.Name, rdtype: dns.rdatatype.RdataType) -> Lookup:
        key = fold(qname)
        if key[-len(self._origin_key) :] != self._origin_key:
            return _REFUSED
        node = self._nodes.get(key)
        if node is None:
            if key in self._between:
                return Lookup(dns.rcode.NOERROR, authority=self._soa)
            return Lookup(dns.rcode.NXDOMAIN, authority=self._soa)
        if rdtype == dns.rdatatype.ANY:
            answer = tuple(node.values())
        else:
            found = node.get(rdtype)
            if found is None:
                return Lookup(dns.rcode.NOERROR, authority=self._soa)
            answer = (found,)
        additional = self._additional.get(key, ()) if rdtype in (dns.rdatatype.SRV, dns.rdatatype.ANY) else ()
        return Lookup(dns.rcode.NOERROR, answer=answer, additional=additional)

    # ---- the index -----------------------------------------------------------------------

    def _drop_slice(self, key: tuple[str, str]) -> None:
        owner = self._slice_service.pop(key, None)
        if owner is None:
            return
        slices = self._slices.get(owner, {})
        slices.pop(key[1], None)
        if not slices:
            self._slices.pop(owner, None)
        self._refresh(owner)

    def _refresh(self, key: ServiceKey) -> None:
        service_import = self._imports.get(key)
        if service_import is None:
            records = ServiceRecords()
        else:
            slices = self._slices.get(key, {})
            records = service_records(
                self.origin,
                self.ttl,
                namespace=key[0],
                name=key[1],
                service_import=service_import,
                slices=slices.values(),
            )
        self._replace(key, records)

    def _replace(self, key: ServiceKey, records: ServiceRecords) -> None:
        old = self._records.pop(key, None)
        if old is None and not records.nodes:
            return
        if old is not None:
            for name in old.nodes:
                name_key = fold(name)
                self._nodes.pop(name_key, None)
                self._additional.pop(name_key, None)
                self._count_between(name_key, -1)
        for name, node in records.nodes.items():
            name_key = fold(name)
            self._nodes[name_key] = node
            self._count_between(name_key, +1)
        self._additional.update((fold(name), extra) for name, extra in records.additional.items())
        if records.nodes:
            self._records[key] = records
        self.serial = (self.serial % 0xFFFFFFFF) + 1
        self._apex()

    def _count_between(self, key: NameKey, delta: int) -> None:
        for start in range(1, len(key) - len(self._origin_key)):
            parent = key[start:]
            self._between[parent] += delta
            if self._between[parent] <= 0:
                del self._between[parent]

    def _apex(self) -> None:
        """The SOA: its serial counts changes, its minimum is the negative-caching TTL."""
        soa = SOA(IN, dns.rdatatype.SOA, self._mname, self._rname, self.serial, 7200, 1800, 86400, self.ttl)
        soa_rrset = dns.rrset.from_rdata(self.origin, self.ttl, soa)
        self._soa = (soa_rrset,)
        self._nodes[self._origin_key] = {dns.rdatatype.SOA: soa_rrset}
