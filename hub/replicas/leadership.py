"""The hub's production mode: state in CRs, members' ServiceAccount tokens, one
leader among replicas elected through a coordination.k8s.io Lease."""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import Protocol

from hub.auth.tokenreview import TokenReviewAuthenticator
from hub.clusterset.identity import ClusterSetIdentity
from hub.clusterset.status import clusterset_status, with_global_addressing, with_mismatches
from hub.config import HubConfig, KubeStoreConfig
from hub.engine import Engine
from hub.leader_cluster.cluster_profiles import ClusterProfileWriter
from hub.leader_cluster.clusterset_cr import LeaderClusterSetWatch
from hub.leader_cluster.import_outcomes import ImportOutcomeWriter, ReportSource
from hub.leader_cluster.status_writer import ClusterSetStatusWriter
from hub.replicas.pod_role import label_pod_role
from hub.store.base import StoreError
from hub.store.kube import KubeStore
from kube.backoff import Backoff, Retries
from kube.client import KubeClient, connect
from kube.errors import KubeError
from kube.leader import LeaderElector
from kube.waiting import cancel_and_wait

log = logging.getLogger(__name__)

LEASE_NAME = "mchub-hub-leader"
# After failing to load the index as leader, wait this long before competing again.
_RETRY_AFTER_FAILED_TAKEOVER = 5.0


class LeaderSeat(Protocol):
    """What the election drives: the hub process, made to serve or to stop serving."""

    @property
    def config(self) -> HubConfig: ...

    @property
    def engine(self) -> Engine: ...

    def now(self) -> datetime: ...

    def is_leader(self) -> bool:
        """This replica serves now (it holds the Lease and loaded its index)."""

    async def take_over(self, engine: Engine) -> None:
        """This replica now holds the Lease: serve from `engine` (not started yet)."""

    async def step_down(self) -> None:
        """This replica lost the Lease: stop serving."""

    async def adopt_identity(self, identity: ClusterSetIdentity) -> None:
        """Serve the ClusterSet the leader's ClusterSet CR describes."""


class KubeLeadership:
    def __init__(self, app: LeaderSeat, client: KubeClient, settings: KubeStoreConfig) -> None:
        self.app = app
        self.client = client
        self._settings = settings
        cfg = app.config
        self.authenticator = TokenReviewAuthenticator(client, cfg.namespace)
        self.elector = self._elector()
        self.status = ClusterSetStatusWriter(client, cfg.namespace, cfg.cluster_set_id)
        # Every member's ClusterProfile (KEP-4322), written while this replica leads.
        self.profiles = ClusterProfileWriter(client, cfg.namespace)
        self.clusterset = LeaderClusterSetWatch(
            client,
            cfg.namespace,
            cfg.cluster_set_id,
            leader_cluster_id=cfg.leader_cluster_id,
            now=app.now,
            on_deleted=self._clusterset_deleted,
            on_created=self._clusterset_created,
            on_identity=app.adopt_identity,
        )
        # Members' import reports -> ResourceImport status and ACNPImportFailed Events.
        self.import_outcomes = ImportOutcomeWriter(
            client,
            cfg.namespace,
            ReportSource(lambda: self.app.engine.index.imports, lambda: self.app.engine.import_status),
        )
        self._takeover: asyncio.Task[None] | None = None

    @classmethod
    async def connect(cls, app: LeaderSeat, settings: KubeStoreConfig) -> KubeLeadership:
        return cls(app, await connect(settings.kubeconfig), settings)

    def _elector(self) -> LeaderElector:
        cfg = self.app.config
        return LeaderElector(
            self.client,
            cfg.namespace,
            LEASE_NAME,
            self._settings.replica_id,
            timing=self._settings.lease,
            on_started_leading=self._started,
            on_stopped_leading=self._stopped,
        )

    def new_engine(self) -> Engine:
        cfg = self.app.config
        engine = Engine(KubeStore(self.client, cfg.namespace), cfg, self.app.now)
        engine.import_status.listeners.append(self.import_outcomes.observe)
        return engine

    def start(self) -> None:
        self.clusterset.start()
        self.elector.start()

    async def _started(self) -> None:
        # Loading the index takes a while: do it beside the election loop, which must keep renewing.
        self._takeover = asyncio.create_task(self._take_over(), name="hub-takeover")

    async def _take_over(self) -> None:
        try:
            engine = self.new_engine()
            # A ClusterSet deleted before: members are refused from the first call this replica serves.
            engine.adopt_end(self.clusterset.ended)
            await self.app.take_over(engine)
            # Then (and also if the CR came or went while the index loaded) what is left goes.
            if self.clusterset.ended:
                await engine.end_clusterset(self.clusterset.ended)
            else:
                engine.reopen()
        except (StoreError, KubeError) as exc:
            log.error("leader could not load the hub state; giving up the lease", extra={"error": str(exc)})
            await self.elector.stop(release=True)
            await asyncio.sleep(_RETRY_AFTER_FAILED_TAKEOVER)
            self.elector = self._elector()
            self.elector.start()

    async def _stopped(self) -> None:
        await cancel_and_wait(self._takeover)
        await self.app.step_down()

    async def _clusterset_deleted(self, reason: str) -> None:
        """The leader ClusterSet CR was deleted: the serving replica deletes what the hub wrote.

        Retried while the store fails (members are refused meanwhile); a replica that is not
        serving leaves it to the one taking over, which ends the ClusterSet before it serves.
        """
        retries = Retries(Backoff(initial=0.5, maximum=10.0, jitter=0.0))
        while self.app.is_leader() and self.clusterset.ended == reason:
            try:
                ended = await self.app.engine.end_clusterset(reason)
            except StoreError as exc:
                log.warning("removing the deleted clusterset's state failed", extra={"error": str(exc)})
                await asyncio.sleep(retries.next_delay())
                continue
            log.info(
                "hub state of the deleted clusterset removed",
                extra={"members": len(ended.members), "exports": len(ended.exports), "imports": len(ended.imports)},
            )
            return

    async def _clusterset_created(self) -> None:
        if self.app.is_leader():
            self.app.engine.reopen()

    async def label_role(self, role: str) -> None:
        """Label this replica's Pod with its role (hub.replicas.pod_role)."""
        await label_pod_role(self.client, self.app.config.namespace, self._settings.pod_name, role)

    async def publish_status(self) -> None:
        members = self.app.engine.index.members
        cfg, now = self.app.config, self.app.now()
        status = clusterset_status(list(members.values()), now, cfg.disconnect_after)
        status = with_mismatches(status, self.clusterset.identity.mismatches, now)
        status = with_global_addressing(status, self.app.engine.global_addressing(), cfg.global_addressing, now)
        await self.status.write(status, name=self.clusterset.name, current=self.clusterset.current)
        await self.profiles.write(members, now, cfg.disconnect_after, cfg.cluster_set_id)

    async def stop(self) -> None:
        await self.profiles.close()
        await self.clusterset.stop()
        await self.import_outcomes.close()
        await self.elector.stop(release=True)
        await cancel_and_wait(self._takeover)

    async def close(self) -> None:
        await self.client.close()
