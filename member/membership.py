"""ClusterSetMembership: what joining a ClusterSet starts and leaving it stops.

The ClusterSetController decides when; a join builds the parts of one membership around a new
hub session and starts them in order (a ``kube.manager.Manager``):

1. the exporters: ServiceExports, the Gateway (its ClusterInfo) and, with
   ``enableStretchedNetworkPolicy``, the label identities. Each watches its objects and, once
   they are synced, hands its whole desired set to the session, which is not started yet: its
   first sync bracket then sweeps only what really went away, and an unchanged ClusterInfo or
   label identity is not dropped and re-added on a restart;
2. the importer, to which the session delivers its import events, and which reports each
   import's outcome back through the session; it reads this cluster's Endpoints from the
   ServiceExports' watch (this cluster's own share of an import is its local endpoints);
3. what the announces say of the cluster (member.about.inventory: its UID, version,
   ClusterProperties and control plane health), handed to the session before its first announce;
4. the hub session, which connects.

A part that fails to start stops, with those started before it, and the join is retried. Leaving
stops the exporters first, so that nothing changes the exports any more. Withdrawing (the
ClusterSet was deleted, or the member's identity changed) then takes back every export and waits
(bounded) until the hub acknowledged, removes the Gateways, tells the hub that the member leaves
(rpc Leave: it drops the member's announce) and removes the imported objects (and the shadow
Services and record of a globally addressed member's global addresses). The rest stops in
reverse: the session, then the importer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from kube.client import KubeClient
from kube.events import EventRecorder
from kube.manager import Manager
from mcapi.config import MultiClusterConfig
from member.about.inventory import InventoryReporter
from member.about.properties import ClusterProperties
from member.config import MemberOptions
from member.exports.controller import ServiceExportController
from member.gateway.controller import GatewayController
from member.global_addresses.addressing import GlobalAddressing
from member.hubclient import ConnectionState, HubEndpoint, HubSession, HubSessionConfig
from member.identities import LabelIdentityController
from member.imports import ImportApplier
from member.imports.caches import ImportCaches
from member.join.spec import JoinSpec
from member.join.status import LeaderLink

log = logging.getLogger(__name__)


@dataclass
class Joined:
    """The parts of one membership, and the managers that start and stop them."""

    spec: JoinSpec
    session: HubSession
    exports: ServiceExportController
    gateway: GatewayController
    importer: ImportApplier
    # With enableStretchedNetworkPolicy: the label identities of the cluster's Pods.
    identities: LabelIdentityController | None
    exporters: Manager  # exports, gateway, identities: stopped first when leaving
    parts: Manager  # exporters, importer, session


@dataclass(eq=False, kw_only=True)
class ClusterSetMembership:
    """The member's ``Membership`` (see member.join.controller); also a Runnable of the member,
    whose stop is a disconnect that is not a leave (the hub keeps this member's exports)."""

    client: KubeClient
    options: MemberOptions
    config: MultiClusterConfig
    caches: ImportCaches  # the member's import caches, which every join's importer works from
    properties: ClusterProperties  # the cluster's ClusterProperties, which every join's announces carry
    recorder: EventRecorder
    registry: CollectorRegistry
    _joined: Joined | None = field(default=None, init=False)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock, init=False)
    _link_listeners: list[Callable[[], None]] = field(default_factory=list, init=False)

    @property
    def joined(self) -> Joined | None:
        return self._joined

    # ---- as a Runnable of the member -----------------------------------------

    async def start(self) -> None:
        """Nothing to start: the ClusterSetController joins."""

    async def stop(self) -> None:
        await self.leave(withdraw=False)

    # ---- Membership ----------------------------------------------------------

    async def join(self, spec: JoinSpec, endpoint: HubEndpoint) -> None:
        async with self._lock:
            if self._joined is not None:
                raise RuntimeError(f"already joined {self._joined.spec.ref}")
            joined = self._parts(spec, endpoint)
            await joined.parts.start()
            self._joined = joined
            self._on_state_change(joined.session.state)  # an announce answered while the parts started
            log.info("member joined", extra={"clusterSet": spec.ref, "clusterID": spec.cluster_id})

    def _parts(self, spec: JoinSpec, endpoint: HubEndpoint) -> Joined:
        client, options, registry = self.client, self.options, self.registry
        session = HubSession(
            endpoint,
            HubSessionConfig(
                cluster_id=spec.cluster_id,
                cluster_set_id=spec.cluster_set_id,
                leader_cluster_id=spec.leader_cluster_id,
                **options.session_overrides,
            ),
            on_state_change=self._on_state_change,
        )
        exports = ServiceExportController(
            client,
            spec.cluster_id,
            self.config.endpoint_ip_type,
            session,
            workers=options.export_workers,
            registry=registry,
            sync_timeout=options.sync_timeout,
            global_addressing=GlobalAddressing(
                client, options.namespace, self.config.endpoint_ip_type, sync_timeout=options.sync_timeout
            ),
            recorder=self.recorder,
        )
        gateway = GatewayController(
            client,
            options.namespace,
            self.config,
            spec.cluster_id,
            session,
            recorder=self.recorder,
            sync_timeout=options.sync_timeout,
            registry=registry,
        )
        identities = (
            LabelIdentityController(
                client,
                spec.cluster_id,
                session,
                registry=registry,
                sync_timeout=options.sync_timeout,
            )
            if self.config.enable_stretched_network_policy
            else None
        )
        importer = ImportApplier(
            client,
            cluster_id=spec.cluster_id,
            report=session.report_import_status,
            recorder=self.recorder,
            workers=options.import_workers,
            registry=registry,
            caches=self.caches,
            local_endpoints=exports.local_endpoints,
        )
        session.consume_imports(importer.handle)
        inventory = InventoryReporter(client, self.properties, session, probe_interval=options.inventory_probe_interval)
        exporters = Manager(f"exporters-{spec.cluster_id}", [exports, gateway, *([identities] if identities else [])])
        parts = Manager(f"membership-{spec.cluster_id}", [exporters, importer, inventory, session])
        return Joined(spec, session, exports, gateway, importer, identities, exporters, parts)

    async def leave(self, *, withdraw: bool) -> None:
        async with self._lock:
            joined, self._joined = self._joined, None
            if joined is None:
                return
            try:
                await joined.exporters.stop()
                if withdraw:
                    await self._withdraw(joined)
            finally:
                # Also when cancelled (the member stopped while waiting for the hub): the parts
                # are detached from self._joined, so nothing else would stop them.
                await self._close(joined, withdraw=withdraw)
            log.info("member left", extra={"clusterSet": joined.spec.ref, "withdrawn": withdraw})

    async def _withdraw(self, joined: Joined) -> None:
        """Take back every export and wait (bounded) until the hub has deleted them."""
        joined.session.replace_all([])
        try:
            async with asyncio.timeout(self.options.leave_timeout):
                await joined.session.wait_exports_settled()
        except TimeoutError:
            log.warning(
                "hub did not acknowledge the withdrawal of exports",
                extra={"clusterSet": joined.spec.ref, "timeoutSeconds": self.options.leave_timeout},
            )

    async def _close(self, joined: Joined, *, withdraw: bool) -> None:
        """Stop the session and the importer; with ``withdraw``, remove the Gateways and imported objects."""
        try:
            if withdraw:
                await joined.gateway.remove_gateways()
                await joined.exports.remove_global_addresses()
            # Withdrawing is leaving the ClusterSet: the hub is told (rpc Leave) once the
            # withdrawals were answered, and drops this member's announce.
            await joined.session.stop(leave=withdraw)
            if withdraw:
                await joined.importer.remove_all()
        finally:
            await joined.parts.stop()  # the session (unless stopped above), the importer

    # ---- the link to the leader ------------------------------------------------

    def link(self) -> LeaderLink:
        joined = self._joined
        if joined is None:
            return LeaderLink("", connected=False, why="not joined")
        state = joined.session.state
        why = "" if state.connected else (state.last_error or "connecting to the leader")
        settled = state.connected or bool(state.last_error)
        return LeaderLink(
            joined.spec.leader_cluster_id,
            connected=state.connected,
            why=why,
            settled=settled,
            reason="" if state.connected else state.refused_reason,
        )

    def watch_link(self, listener: Callable[[], None]) -> None:
        self._link_listeners.append(listener)

    def _on_state_change(self, state: ConnectionState) -> None:
        joined = self._joined
        if joined is not None and state.connected:
            # The hub's verdict on this member's ranges, with every announce.
            joined.exports.set_global_addressing(state.global_cidr, state.globally_addressed)
        for listener in self._link_listeners:
            listener()
