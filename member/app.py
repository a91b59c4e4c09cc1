"""MemberApp: one member controller — ClusterSet join/leave, ServiceExports out, imports in.

``await start()`` reads the MultiClusterConfig (ConfigError when invalid), then starts the
member's parts in order (a ``kube.manager.Manager``), each ready before the next:

1. the import caches (member.imports.caches): one watch per imported kind, from start to stop,
   kept across rejoins; every join's importer works from them;
2. the cluster's ClusterProperties (member.about.properties), its ID when someone wrote it and
   what every join's announces carry;
3. with DNS on (``options.dns``), the clusterset.local DNS, which reads the import caches;
4. the membership (member.membership): what joining starts and leaving stops;
5. the ClusterSetController (member.join), which watches the member Namespace for its
   ClusterSet and joins, rejoins or leaves.

``await stop()`` stops them in reverse, without leaving: the hub keeps this member's exports,
and a restarted member re-syncs them in one sync bracket. Several MemberApps may run in one
process, each with its own KubeClient.

``registry`` holds the member's metrics: its client's requests (rest_client_requests_total,
the QPS limit) and its work queues (workqueue_depth, controller_runtime_reconcile_total...);
the health server serves it on /metrics.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from typing import Any

from prometheus_client import CollectorRegistry

from kube.client import KubeClient
from kube.events import EventRecorder
from kube.manager import Manager
from mcapi.config import MultiClusterConfig
from mcapi.names import DEFAULT_MEMBER_NAMESPACE
from member import COMPONENT
from member.about.properties import ClusterProperties
from member.config import MemberOptions, load_multicluster_config
from member.dns.service import ClustersetDns
from member.exports.controller import ServiceExportController
from member.gateway.controller import GatewayController
from member.hubclient import HubSession
from member.identities import LabelIdentityController
from member.imports import ImportApplier
from member.imports.caches import ImportCaches
from member.join.controller import ClusterSetController
from member.join.spec import JoinSpec
from member.join.status import LeaderLink
from member.membership import ClusterSetMembership, Joined

log = logging.getLogger(__name__)


class MemberApp:
    def __init__(
        self,
        client: KubeClient,
        namespace: str = DEFAULT_MEMBER_NAMESPACE,
        *,
        options: MemberOptions | None = None,
        session_overrides: Mapping[str, Any] | None = None,
    ) -> None:
        """``session_overrides``: HubSessionConfig fields (backoffs, heartbeat...) for every session."""
        base = options or MemberOptions()
        overrides = {**base.session_overrides, **(session_overrides or {})}
        self.options = dataclasses.replace(base, namespace=namespace, session_overrides=overrides)
        self.client = client
        self.config = MultiClusterConfig()
        self.recorder = EventRecorder(client, COMPONENT)
        self.registry = CollectorRegistry()  # the member's metrics
        client.metrics.register(self.registry)  # its API requests and rate limit
        self._parts: Manager | None = None
        self.dns: ClustersetDns | None = None
        self._membership: ClusterSetMembership | None = None
        self._clusterset: ClusterSetController | None = None

    @property
    def namespace(self) -> str:
        return self.options.namespace

    # ---- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        """Load the config (ConfigError when invalid) and start watching for the ClusterSet."""
        if self._parts is not None:
            raise RuntimeError("the member is already started")
        self.config = await load_multicluster_config(self.client, self.namespace)
        caches = ImportCaches(self.client, self.namespace)
        properties = ClusterProperties(self.client)
        dns = ClustersetDns(self.client, caches, self.options.dns, self.registry) if self.options.dns else None
        membership = ClusterSetMembership(
            client=self.client,
            options=self.options,
            config=self.config,
            caches=caches,
            properties=properties,
            recorder=self.recorder,
            registry=self.registry,
        )
        clusterset = ClusterSetController(
            self.client,
            self.namespace,
            membership,
            status_resync=self.options.status_resync,
            properties=properties,
        )
        parts = Manager(
            f"member-{self.namespace}", [caches, properties, *([dns] if dns else []), membership, clusterset]
        )
        await parts.start()
        self._parts, self.dns, self._membership, self._clusterset = parts, dns, membership, clusterset
        log.info(
            "member started",
            extra={"namespace": self.namespace, "endpointIPType": self.config.endpoint_ip_type},
        )

    async def stop(self) -> None:
        """Stop watching and disconnect; exports stay at the hub (this is not a leave)."""
        parts, self._parts = self._parts, None
        try:
            if parts is not None:
                await parts.stop()
        finally:
            self.dns, self._membership, self._clusterset = None, None, None
        log.info("member stopped", extra={"namespace": self.namespace})

    async def leave(self, *, withdraw: bool) -> None:
        """Leave the ClusterSet now (as a deleted ClusterSet does, with ``withdraw``)."""
        if self._membership is not None:
            await self._membership.leave(withdraw=withdraw)

    # ---- what tests and the CLI look at --------------------------------------

    @property
    def clusterset(self) -> ClusterSetController | None:
        return self._clusterset

    @property
    def _joined(self) -> Joined | None:
        return self._membership.joined if self._membership is not None else None

    @property
    def joined(self) -> JoinSpec | None:
        return self._joined.spec if self._joined is not None else None

    @property
    def session(self) -> HubSession | None:
        return self._joined.session if self._joined is not None else None

    @property
    def exports(self) -> ServiceExportController | None:
        return self._joined.exports if self._joined is not None else None

    @property
    def importer(self) -> ImportApplier | None:
        return self._joined.importer if self._joined is not None else None

    @property
    def gateway(self) -> GatewayController | None:
        return self._joined.gateway if self._joined is not None else None

    @property
    def identities(self) -> LabelIdentityController | None:
        return self._joined.identities if self._joined is not None else None

    def readiness(self) -> tuple[bool, str]:
        """Ready with no ClusterSet to join yet, or once connected to the leader hub."""
        if self._joined is None:
            return True, "no ClusterSet joined; waiting for one"
        link = self.link()
        return link.connected, link.why or "connected to the leader hub"

    def link(self) -> LeaderLink:
        if self._membership is None:
            return LeaderLink("", connected=False, why="not joined")
        return self._membership.link()
