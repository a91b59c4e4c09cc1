"""The member's clusterset.local DNS: the zone, the feed that keeps it, and the server.

``mchub member --dns-address HOST:PORT`` turns it on (off by default). It starts with the
member, not with a join, and reads the member's import caches (which the importer of every
join shares): what the member imported is answered from the start, also while it is not
joined (after a restart, between two joins), and a member that never imported answers NXDOMAIN.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from prometheus_client import CollectorRegistry

from kube.client import KubeClient
from kube.manager import Manager
from member.dns.answer import DEFAULT_MAX_UDP_PAYLOAD, Responder
from member.dns.feed import DnsFeed
from member.dns.metrics import DnsMetrics
from member.dns.server import DEFAULT_MAX_TCP_CONNECTIONS, DEFAULT_TCP_IDLE_TIMEOUT, DnsServer, split_address
from member.dns.zone import DEFAULT_TTL, ClustersetZone
from member.imports.caches import ImportCaches

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DnsOptions:
    """``address``: HOST:PORT for UDP and TCP (the Deployment: 0.0.0.0:53). ``ttl``: seconds,
    of every record and of negative answers. ``max_udp_payload``: bytes, the largest UDP
    answer (larger ones are truncated: the client asks over TCP). ``max_tcp_connections``,
    ``tcp_idle_timeout`` (seconds): what TCP clients may hold."""

    address: str
    ttl: int = DEFAULT_TTL
    max_udp_payload: int = DEFAULT_MAX_UDP_PAYLOAD
    max_tcp_connections: int = DEFAULT_MAX_TCP_CONNECTIONS
    tcp_idle_timeout: float = DEFAULT_TCP_IDLE_TIMEOUT

    def __post_init__(self) -> None:
        split_address(self.address)  # ValueError when it is not HOST:PORT
        if not 0 <= self.ttl <= 2**31 - 1:
            raise ValueError(f"DNS TTL {self.ttl} is not in 0..2147483647 seconds")


class ClustersetDns:
    def __init__(
        self,
        client: KubeClient,
        caches: ImportCaches,
        options: DnsOptions,
        registry: CollectorRegistry | None = None,
    ) -> None:
        """``caches``: the member's import caches, started (the DNS reads them, watches nothing
        of its own). ``registry``: where the DNS metrics are shown (None: only on ``self.metrics``)."""
        self.options = options
        self.zone = ClustersetZone(ttl=options.ttl)
        self.metrics = DnsMetrics()
        if registry is not None:
            self.metrics.register(registry)
        self.feed = DnsFeed(client, caches, self.zone)
        responder = Responder(self.zone, self.metrics, max_udp_payload=options.max_udp_payload)
        self.server = DnsServer(
            options.address,
            responder,
            max_tcp_connections=options.max_tcp_connections,
            tcp_idle_timeout=options.tcp_idle_timeout,
        )
        # Follow the imports, then serve: a query never sees a zone that was not listed yet.
        self._parts = Manager("clusterset-dns", [self.feed, self.server])

    @property
    def address(self) -> str:
        """Where it serves (the port chosen when the options asked for port 0)."""
        return self.server.address

    async def start(self) -> None:
        await self._parts.start()

    async def stop(self) -> None:
        await self._parts.stop()
