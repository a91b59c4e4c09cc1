"""`mchub hub --mirror-kubeconfig K`: a SQLite hub that shows itself in a leader cluster.

Everything the leader Namespace of K holds for kubectl, beside the hub's own store:

- the mirror of ResourceExports, ResourceImports and MemberClusterAnnounces (hub.mirror.mirror);
- AntreaClusterNetworkPolicy ResourceExports a person applies there, taken in as admin
  exports (hub.leader_cluster.kubectl_exports), so the user guide's policy replication works as with the
  kube store;
- the leader ClusterSet CR (hub.leader_cluster.clusterset_cr): the ClusterSet and leader IDs the hub
  serves (the configuration is the fallback), its status (total and ready clusters,
  ClusterConnected per member, HubConfigMatches), and its deletion, which ends the
  ClusterSet as `DELETE /api/v1/clusterset` does (recorded in the data dir);
- members' import reports as ResourceImport status and ACNPImportFailed Events
  (hub.leader_cluster.import_outcomes);
- every member's ClusterProfile (hub.leader_cluster.cluster_profiles), as the ClusterSet's
  cluster manager keeps them (KEP-4322).

None of it stands between members and the hub: a leader cluster that is down makes the
mirror lag, and it catches up when the cluster is back.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import datetime
from typing import TYPE_CHECKING, Protocol

from hub.clusterset.end import EndRecord
from hub.clusterset.identity import ClusterSetIdentity
from hub.clusterset.status import clusterset_status, with_global_addressing, with_mismatches
from hub.config import HubConfig, MirrorConfig
from hub.leader_cluster.cluster_profiles import ClusterProfileWriter
from hub.leader_cluster.clusterset_cr import LeaderClusterSetWatch
from hub.leader_cluster.import_outcomes import ImportOutcomeWriter, ReportSource
from hub.leader_cluster.kubectl_exports import KubectlExports
from hub.leader_cluster.status_writer import ClusterSetStatusWriter
from hub.mirror.feed import ChangeFeed
from hub.mirror.mirror import LeaderMirror
from kube.client import KubeClient, connect
from kube.waiting import cancel_and_wait

if TYPE_CHECKING:
    from prometheus_client import CollectorRegistry

    from hub.engine import Engine

log = logging.getLogger(__name__)


class MirrorSeat(Protocol):
    """What the mirror needs of the hub process."""

    @property
    def config(self) -> HubConfig: ...

    @property
    def engine(self) -> Engine: ...

    @property
    def end_record(self) -> EndRecord: ...

    def now(self) -> datetime: ...

    async def adopt_identity(self, identity: ClusterSetIdentity) -> None:
        """Serve the ClusterSet the leader's CR describes."""


class LeaderCluster:
    """The leader cluster of a SQLite hub (see the module doc). `start()`, then `stop()`."""

    def __init__(self, app: MirrorSeat, client: KubeClient, feed: ChangeFeed, registry: CollectorRegistry) -> None:
        self.app = app
        self.client = client
        cfg = app.config
        ns = cfg.namespace
        client.metrics.register(registry)
        self.intake = KubectlExports(client, ns, lambda: app.engine, mirrored=True, clock=app.now)
        self.mirror = LeaderMirror(
            client,
            ns,
            lambda: app.engine,
            feed,
            intake=self.intake,
            registry=registry,
            clock=app.now,
            on_import_created=self._import_created,
        )
        self.clusterset = LeaderClusterSetWatch(
            client,
            ns,
            cfg.cluster_set_id,
            leader_cluster_id=cfg.leader_cluster_id,
            now=app.now,
            on_deleted=self._clusterset_deleted,
            on_created=self._clusterset_created,
            on_identity=app.adopt_identity,
        )
        self.status = ClusterSetStatusWriter(client, ns, cfg.cluster_set_id)
        self.profiles = ClusterProfileWriter(client, ns)
        self.import_outcomes = ImportOutcomeWriter(
            client, ns, ReportSource(lambda: app.engine.index.imports, lambda: app.engine.import_status)
        )
        app.engine.import_status.listeners.append(self.import_outcomes.observe)
        self._status_task: asyncio.Task[None] | None = None

    @classmethod
    async def connect(
        cls, app: MirrorSeat, mirror: MirrorConfig, feed: ChangeFeed, registry: CollectorRegistry
    ) -> LeaderCluster:
        qps = mirror.qps
        return cls(app, await connect(mirror.kubeconfig, qps=qps, burst=int(2 * qps)), feed, registry)

    def _import_created(self, name: str) -> None:
        """Reports about an import that came before its CR existed: written into it now."""
        for cluster_id, entry in (self.app.engine.import_status.get(name) or {}).items():
            self.import_outcomes.observe(name, cluster_id, entry)

    def start(self) -> None:
        self.clusterset.start()
        self.mirror.start()
        self._status_task = asyncio.create_task(self._status_loop(), name="hub-mirror-clusterset-status")
        log.info("hub mirrors into the leader cluster", extra={"namespace": self.app.config.namespace})

    async def stop(self) -> None:
        await cancel_and_wait(self._status_task)
        self._status_task = None
        await self.mirror.stop()
        await self.profiles.close()
        await self.clusterset.stop()
        await self.intake.close()
        await self.import_outcomes.close()
        await self.client.close()

    async def publish_status(self) -> None:
        """The leader ClusterSet's status and every member's ClusterProfile, written when they
        changed (no request when they did not)."""
        app = self.app
        members, now, cfg = app.engine.index.members, app.now(), app.config
        await self.profiles.write(members, now, cfg.disconnect_after, cfg.cluster_set_id)
        current = self.clusterset.current
        if current is None:
            return
        status = clusterset_status(list(members.values()), now, cfg.disconnect_after)
        status = with_mismatches(status, self.clusterset.identity.mismatches, now)
        status = with_global_addressing(status, app.engine.global_addressing(), cfg.global_addressing, now)
        await self.status.write(status, name=self.clusterset.name, current=current)

    async def _status_loop(self) -> None:
        while True:
            try:
                await self.publish_status()
            except Exception:
                log.exception("leader clusterset status not written")
            await asyncio.sleep(self.app.config.status_interval)

    async def _clusterset_deleted(self, reason: str) -> None:
        """The guide's "Remove a Leader Cluster": the ClusterSet ends, recorded in the data dir
        first (members are refused from then on, also after a restart), then everything goes."""
        app = self.app
        app.end_record.write(app.config.cluster_set_id, reason)
        ended = await app.engine.end_clusterset(reason)
        log.info(
            "clusterset ended: its leader ClusterSet CR was deleted",
            extra={"members": len(ended.members), "exports": len(ended.exports), "imports": len(ended.imports)},
        )

    async def _clusterset_created(self) -> None:
        log.warning(
            "a leader ClusterSet was created again, but this hub's data dir keeps the ended ClusterSet: "
            "start the hub on a new data dir (or another ClusterSet ID) to serve it",
            extra={"clusterSet": self.clusterset.name},
        )
