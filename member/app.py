"""MemberApp: one member controller — ClusterSet join/leave, ServiceExports out, imports in.

``await start()`` reads the MultiClusterConfig (ConfigError when invalid) and watches the
member Namespace for its ClusterSet; ``await stop()`` stops everything without leaving (the
hub keeps this member's exports; a restarted member re-syncs them in one sync bracket).

Joining (the ClusterSetController decides when): ServiceExport informers synced, the full
desired set of exports handed to a new HubSession before it starts (so its first bracket
sweeps only what really went away), imports applied by an ImportApplier. Leaving (ClusterSet
deleted): exports withdrawn and acknowledged by the hub, the hub told that the member leaves
(rpc Leave: it drops the member's announce), session stopped, imported objects removed.
With ``enableStretchedNetworkPolicy`` the label identities of the cluster's Pods are exported
too (member.identities), in the same first bracket. Several MemberApps may run in one process,
each with its own KubeClient.

The member owns its import caches (member.imports.caches) from start to stop: the ImportApplier
of every join works from them (one watch per imported kind, kept across rejoins), and with DNS on
(``options.dns``) the clusterset.local DNS reads them from the start.

``registry`` holds the member's metrics: its client's requests (rest_client_requests_total,
the QPS limit) and its work queues (workqueue_depth, controller_runtime_reconcile_total...);
the health server serves it on /metrics.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry

from kube.client import KubeClient
from kube.events import EventRecorder
from mcapi.config import MultiClusterConfig
from mcapi.names import DEFAULT_MEMBER_NAMESPACE
from member.config import MemberOptions, load_multicluster_config
from member.dns.service import ClustersetDns, DnsOptions
from member.exports.controller import ServiceExportController
from member.gateway.controller import GatewayController
from member.hubclient import ConnectionState, HubEndpoint, HubSession, HubSessionConfig, ImportEvent
from member.identities import LabelIdentityController
from member.imports import ImportApplier
from member.imports.caches import ImportCaches
from member.join.controller import ClusterSetController
from member.join.spec import JoinSpec
from member.join.status import LeaderLink

log = logging.getLogger(__name__)

COMPONENT = "mchub-member"


@dataclass
class _Joined:
    spec: JoinSpec
    session: HubSession
    exports: ServiceExportController
    importer: ImportApplier
    gateway: GatewayController
    # With enableStretchedNetworkPolicy: the label identities of the cluster's Pods.
    identities: LabelIdentityController | None = None


class _ImportRelay:
    """Hands the session's import events to the importer, which is built after the session
    (it reports through it)."""

    def __init__(self) -> None:
        self.importer: ImportApplier | None = None

    async def __call__(self, event: ImportEvent) -> None:
        if self.importer is None:
            raise RuntimeError("import event before the importer exists")
        await self.importer.handle(event)


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
        self._clusterset: ClusterSetController | None = None
        self._joined: _Joined | None = None
        self._lock = asyncio.Lock()
        self.registry = CollectorRegistry()  # the member's metrics
        client.metrics.register(self.registry)  # its API requests and rate limit
        self.dns: ClustersetDns | None = None
        self._import_caches: ImportCaches | None = None  # from start to stop

    @property
    def namespace(self) -> str:
        return self.options.namespace

    # ---- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        """Load the config (ConfigError when invalid) and start watching for the ClusterSet."""
        if self._clusterset is not None:
            raise RuntimeError("the member is already started")
        self.config = await load_multicluster_config(self.client, self.namespace)
        # Before the ClusterSet controller: a join may follow at once, and its importer needs them.
        await self._start_imports(self.options.dns)
        controller = ClusterSetController(self.client, self.namespace, self, status_resync=self.options.status_resync)
        try:
            await controller.start()
        except BaseException:
            await self._stop_imports()
            raise
        self._clusterset = controller
        log.info(
            "member started",
            extra={"namespace": self.namespace, "endpointIPType": self.config.endpoint_ip_type},
        )

    async def stop(self) -> None:
        """Stop watching and disconnect; exports stay at the hub (this is not a leave)."""
        if self._clusterset is not None:
            await self._clusterset.stop()
            self._clusterset = None
        try:
            await self.leave(withdraw=False)
        finally:
            await self._stop_imports()
        log.info("member stopped", extra={"namespace": self.namespace})

    async def _start_imports(self, dns_options: DnsOptions | None) -> None:
        """The import caches, and the DNS that reads them when it is on."""
        caches = ImportCaches(self.client, self.namespace)
        self._import_caches = caches
        try:
            await caches.start()
            if dns_options is not None:
                dns = ClustersetDns(self.client, caches, dns_options, self.registry)
                await dns.start()
                self.dns = dns
        except BaseException:
            await self._stop_imports()
            raise

    async def _stop_imports(self) -> None:
        dns, self.dns = self.dns, None
        caches, self._import_caches = self._import_caches, None
        if dns is not None:
            await dns.stop()
        if caches is not None:
            await caches.stop()

    # ---- what tests and the CLI look at --------------------------------------

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

    # ---- Membership ----------------------------------------------------------

    async def join(self, spec: JoinSpec, endpoint: HubEndpoint) -> None:
        async with self._lock:
            if self._joined is not None:
                raise RuntimeError(f"already joined {self._joined.spec.ref}")
            exports = ServiceExportController(
                self.client,
                spec.cluster_id,
                self.config.endpoint_ip_type,
                workers=self.options.export_workers,
                registry=self.registry,
            )
            gateway = GatewayController(
                self.client, self.namespace, self.config, spec.cluster_id, recorder=self.recorder
            )
            identities = (
                LabelIdentityController(self.client, spec.cluster_id, registry=self.registry)
                if self.config.enable_stretched_network_policy
                else None
            )
            session: HubSession | None = None
            importer: ImportApplier | None = None
            try:
                await exports.start_watching(self.options.sync_timeout)
                await gateway.start(self.options.sync_timeout)
                if identities is not None:
                    await identities.start_watching(self.options.sync_timeout)
                session, importer = self._connect(spec, endpoint, exports)
                # The whole desired set before the first bracket: only what really went away is
                # swept, and an unchanged ClusterInfo or label identity is not dropped and
                # re-added on a restart.
                session.replace_all(
                    [
                        *exports.desired_exports(),
                        *gateway.desired_exports(),
                        *(identities.desired_exports() if identities is not None else ()),
                    ]
                )
                await importer.start()
                await session.start()
                exports.attach(session)
                gateway.attach(session.set_export, session.remove_export, session.report_import_status)
                if identities is not None:
                    identities.attach(session)
            except BaseException:
                await exports.stop()
                await gateway.stop()
                if identities is not None:
                    await identities.stop()
                if session is not None:
                    await session.stop()
                if importer is not None:
                    await importer.stop()
                raise
            self._joined = _Joined(spec, session, exports, importer, gateway, identities)
            log.info("member joined", extra={"clusterSet": spec.ref, "clusterID": spec.cluster_id})

    def _connect(
        self, spec: JoinSpec, endpoint: HubEndpoint, exports: ServiceExportController
    ) -> tuple[HubSession, ImportApplier]:
        """A hub session (not started) and the importer it feeds."""
        if self._import_caches is None:
            raise RuntimeError("the member is not started: it has no import caches to join with")
        relay = _ImportRelay()
        session = HubSession(
            endpoint,
            HubSessionConfig(
                cluster_id=spec.cluster_id,
                cluster_set_id=spec.cluster_set_id,
                leader_cluster_id=spec.leader_cluster_id,
                **self.options.session_overrides,
            ),
            on_import_event=relay,
            on_verdict=exports.on_verdict,
            on_rejected=exports.on_rejected,
            on_state_change=self._on_state_change,
        )
        importer = ImportApplier(
            self.client,
            cluster_id=spec.cluster_id,
            report=session.report_import_status,
            recorder=self.recorder,
            workers=self.options.import_workers,
            registry=self.registry,
            caches=self._import_caches,
        )
        relay.importer = importer
        return session, importer

    async def leave(self, *, withdraw: bool) -> None:
        async with self._lock:
            joined, self._joined = self._joined, None
            if joined is None:
                return
            try:
                await joined.exports.stop()
                await joined.gateway.stop()
                if joined.identities is not None:
                    await joined.identities.stop()
                if withdraw:
                    await self._withdraw(joined)
            finally:
                # Also when cancelled (the member stopped while waiting for the hub): the session
                # and the importer are detached from self._joined, so nothing else would stop them.
                await self._close(joined, withdraw=withdraw)
            log.info("member left", extra={"clusterSet": joined.spec.ref, "withdrawn": withdraw})

    async def _close(self, joined: _Joined, *, withdraw: bool) -> None:
        """Stop the session and the importer; with ``withdraw``, remove the Gateways and imported objects."""
        try:
            if withdraw:
                await joined.gateway.remove_gateways()
            # Withdrawing is leaving the ClusterSet: the hub is told (rpc Leave) once the
            # withdrawals were answered, and drops this member's announce.
            await joined.session.stop(leave=withdraw)
            if withdraw:
                await joined.importer.remove_all()
        finally:
            await joined.session.stop()  # a no-op unless a step above failed before it
            await joined.importer.stop()

    async def _withdraw(self, joined: _Joined) -> None:
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

    def readiness(self) -> tuple[bool, str]:
        """Ready with no ClusterSet to join yet, or once connected to the leader hub."""
        if self._joined is None:
            return True, "no ClusterSet joined; waiting for one"
        link = self.link()
        return link.connected, link.why or "connected to the leader hub"

    def link(self) -> LeaderLink:
        joined = self._joined
        if joined is None:
            return LeaderLink("", connected=False, why="not joined")
        state = joined.session.state
        why = "" if state.connected else (state.last_error or "connecting to the leader")
        settled = state.connected or bool(state.last_error)
        return LeaderLink(joined.spec.leader_cluster_id, connected=state.connected, why=why, settled=settled)

    def _on_state_change(self, state: ConnectionState) -> None:
        if self._clusterset is not None:
            self._clusterset.status_changed()
