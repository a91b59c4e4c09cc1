"""The records of one imported Service, as KEP-1645's DNS specification asks (pure).

- ClusterSetIP: ``<svc>.<ns>.svc.<zone>`` A/AAAA -> the ServiceImport's IPs; ``SRV
  _<port>._<proto>.<svc>.<ns>.svc.<zone>`` per named port, pointing at the Service name.
- Headless: ``<svc>.<ns>.svc.<zone>`` A/AAAA -> every ready endpoint of every cluster;
  ``<hostname>.<clusterid>.<svc>.<ns>.svc.<zone>`` per ready endpoint; SRV per ready endpoint and
  named port, pointing at the endpoint's name. An endpoint without a hostname is named after its
  address (``10-0-0-2``), as cluster DNS names them, so that every endpoint has an SRV target.
- Both: SRV at the Service name itself, as CoreDNS answers it: one record per distinct port
  number (named or not) and target, so the same number over TCP and UDP is one record (the
  mcs-api conformance suite counts them).

A Service with no address to give (no IP yet, no ready endpoint) has no records at all: the
specification wants NXDOMAIN then. Names that cannot be DNS names (a label too long, a dot in
a cluster ID) are left out; an address still counts for the Service name.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import dns.name
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rrset
from dns.rdtypes.IN.A import A as _A
from dns.rdtypes.IN.AAAA import AAAA as _AAAA
from dns.rdtypes.IN.SRV import SRV as _SRV

from kube.resources import Obj
from mcapi import names

IN = dns.rdataclass.IN
HEADLESS = "Headless"
# SRV records carry equal priority; weights add up to about 100, as cluster DNS does.
SRV_PRIORITY = 0
SRV_TOTAL_WEIGHT = 100

_LABEL = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9]{0,61}[A-Za-z0-9])?$")

Node = dict[dns.rdatatype.RdataType, dns.rrset.RRset]

# dnspython's rdata constructors are untyped; these names give them a type.
A: Callable[..., dns.rdata.Rdata] = _A
AAAA: Callable[..., dns.rdata.Rdata] = _AAAA
SRV: Callable[..., dns.rdata.Rdata] = _SRV


@dataclass
class ServiceRecords:
    """Every name one Service owns: its records, and for SRV names the addresses of the targets."""

    nodes: dict[dns.name.Name, Node] = field(default_factory=dict)
    additional: dict[dns.name.Name, tuple[dns.rrset.RRset, ...]] = field(default_factory=dict)


def is_label(text: str) -> bool:
    return bool(_LABEL.match(text))


Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def _address(text: object) -> Address | None:
    try:
        return ipaddress.ip_address(str(text))
    except ValueError:
        return None


def _dashed(ip: str) -> str:
    return ip.replace(".", "-").replace(":", "-")


@dataclass(frozen=True)
class _Port:
    name: str
    port: int
    protocol: str

    @property
    def label(self) -> tuple[str, str]:
        return f"_{self.name}", f"_{self.protocol.lower()}"


def _ports(entries: object) -> list[_Port]:
    """Every valid port; an unnamed one has the name ""."""
    ports: list[_Port] = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict):
            continue
        name, port, protocol = entry.get("name") or "", entry.get("port"), entry.get("protocol") or "TCP"
        if isinstance(port, int) and 0 < port < 65536 and isinstance(protocol, str) and is_label(protocol):
            ports.append(_Port(str(name), port, protocol))
    return ports


def _named_ports(ports: list[_Port]) -> list[_Port]:
    """Unnamed ports have no ``_<port>._<proto>`` SRV name."""
    return [port for port in ports if is_label(port.name)]


class _Builder:
    def __init__(self, ttl: int) -> None:
        self.ttl = ttl
        # name -> type -> key -> rdata; the key dedupes (comparing Rdata renders it to wire format).
        self.rdatas: dict[dns.name.Name, dict[dns.rdatatype.RdataType, dict[object, dns.rdata.Rdata]]] = {}
        self.srv_targets: dict[dns.name.Name, dict[dns.name.Name, None]] = {}

    def add(self, name: dns.name.Name, rdata: dns.rdata.Rdata, key: object) -> None:
        self.rdatas.setdefault(name, {}).setdefault(rdata.rdtype, {}).setdefault(key, rdata)

    def add_address(self, name: dns.name.Name, ip: Address) -> None:
        if ip.version == 4:
            self.add(name, A(IN, dns.rdatatype.A, str(ip)), ip)
        else:
            self.add(name, AAAA(IN, dns.rdatatype.AAAA, str(ip)), ip)

    def add_srv(self, name: dns.name.Name, port: int, target: dns.name.Name) -> None:
        self.srv_targets.setdefault(name, {})[target] = None
        # Weight is set in build(), once the number of targets is known.
        self.add(name, SRV(IN, dns.rdatatype.SRV, SRV_PRIORITY, 0, port, target), (port, target))

    def build(self) -> ServiceRecords:
        out = ServiceRecords()
        for name, by_type in self.rdatas.items():
            node: Node = {}
            for rdtype, keyed in by_type.items():
                rdatas = list(keyed.values())
                if rdtype == dns.rdatatype.SRV:
                    weight = max(1, SRV_TOTAL_WEIGHT // len(rdatas))
                    rdatas = [r.replace(weight=weight) for r in rdatas]
                node[rdtype] = dns.rrset.from_rdata_list(name, self.ttl, rdatas)
            out.nodes[name] = node
        for name, targets in self.srv_targets.items():
            extra = [
                rrset
                for target in targets
                for rdtype, rrset in out.nodes.get(target, {}).items()
                if rdtype in (dns.rdatatype.A, dns.rdatatype.AAAA)
            ]
            out.additional[name] = tuple(extra)
        return out


def _child(labels: Iterable[str], parent: dns.name.Name) -> dns.name.Name | None:
    parts = list(labels)
    if not all(is_label(part) or (part.startswith("_") and is_label(part[1:])) for part in parts):
        return None
    try:
        return dns.name.Name([part.encode() for part in parts]).concatenate(parent)
    except dns.name.NameTooLong:
        return None


def service_name(origin: dns.name.Name, namespace: str, name: str) -> dns.name.Name | None:
    return _child((name, namespace, "svc"), origin)


def service_records(
    origin: dns.name.Name, ttl: int, *, namespace: str, name: str, service_import: Obj, slices: Iterable[Obj]
) -> ServiceRecords:
    """The names and records of the Service ``namespace/name`` imported as ``service_import``."""
    owner = service_name(origin, namespace, name)
    spec = service_import.get("spec")
    if owner is None or not isinstance(spec, dict):
        return ServiceRecords()
    builder = _Builder(ttl)
    if spec.get("type") == HEADLESS:
        _headless(builder, owner, slices)
    else:
        _cluster_set_ip(builder, owner, spec)
    if owner not in builder.rdatas:
        return ServiceRecords()
    return builder.build()


def _cluster_set_ip(builder: _Builder, owner: dns.name.Name, spec: dict[str, object]) -> None:
    ips = spec.get("ips")
    for text in ips if isinstance(ips, list) else []:
        ip = _address(text)
        if ip is not None:
            builder.add_address(owner, ip)
    if owner not in builder.rdatas:
        return
    ports = _ports(spec.get("ports"))
    for port in ports:
        builder.add_srv(owner, port.port, owner)
    for port in _named_ports(ports):
        srv_name = _child(port.label, owner)
        if srv_name is not None:
            builder.add_srv(srv_name, port.port, owner)


def _headless(builder: _Builder, owner: dns.name.Name, slices: Iterable[Obj]) -> None:
    for slice_ in slices:
        labels = (slice_.get("metadata") or {}).get("labels") or {}
        cluster = labels.get(names.LABEL_MCS_SOURCE_CLUSTER, "")
        ports = _ports(slice_.get("ports"))
        endpoints = slice_.get("endpoints")
        for endpoint in endpoints if isinstance(endpoints, list) else []:
            if not isinstance(endpoint, dict):
                continue
            # An unknown readiness (no condition) counts as ready, as EndpointSlice consumers read it.
            if (endpoint.get("conditions") or {}).get("ready") is False:
                continue
            addresses = [ip for ip in map(_address, endpoint.get("addresses") or []) if ip is not None]
            if not addresses:
                continue
            hostname = endpoint.get("hostname") or _dashed(str(addresses[0]))
            endpoint_name = _child((str(hostname), str(cluster)), owner)
            for ip in addresses:
                builder.add_address(owner, ip)
                if endpoint_name is not None:
                    builder.add_address(endpoint_name, ip)
            if endpoint_name is None:
                continue
            for port in ports:
                builder.add_srv(owner, port.port, endpoint_name)
            for port in _named_ports(ports):
                srv_name = _child(port.label, owner)
                if srv_name is not None:
                    builder.add_srv(srv_name, port.port, endpoint_name)
