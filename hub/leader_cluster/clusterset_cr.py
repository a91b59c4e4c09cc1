"""Follows the leader's ClusterSet CR (Kubernetes store): its deletion ends the ClusterSet.

Every replica watches it, the leader and the others alike, so that a replica taking over
after the deletion knows the ClusterSet ended even though the leader that saw it is gone.
The hub may run before the ClusterSet CR exists (as it does before "Initialize ClusterSet"
of the user guide): only a CR seen and then deleted ends the ClusterSet. A replica started
after the deletion never saw the CR and serves as a fresh hub does.

It also says which ClusterSet the hub serves (hub.clusterset.identity): the CR's name is the
ClusterSet ID and its `spec.clusterID` the leader's, the configuration being the fallback
until the CR exists; `identity` holds the answer, with every mismatch spelled out, and
`current` the CR followed (its status writer reads it instead of asking the API server).

Callbacks: `on_deleted(reason)` when the CR goes (or starts terminating), `on_created()`
when a ClusterSet of that name is made again after a deletion, `on_identity(identity)` when
what the hub serves (or a mismatch) changes.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

from hub.clusterset.end import deleted_cr
from hub.clusterset.identity import ClusterSetIdentity, identity
from kube.client import KubeClient, WatchEvent
from kube.informer import Informer
from kube.resources import Obj, name_of
from kube.waiting import cancel_and_wait
from mcapi.resources import CLUSTER_SETS

log = logging.getLogger(__name__)


class LeaderClusterSetWatch:
    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        name: str,
        *,
        now: Callable[[], datetime],
        on_deleted: Callable[[str], Awaitable[None]],
        on_created: Callable[[], Awaitable[None]],
        leader_cluster_id: str = "",
        on_identity: Callable[[ClusterSetIdentity], Awaitable[None]] | None = None,
    ) -> None:
        """`name` and `leader_cluster_id`: the configured ClusterSet and leader IDs (the fallback)."""
        self._namespace = namespace
        self._configured = (name, leader_cluster_id)
        self.name = name
        self._now = now
        self._on_deleted = on_deleted
        self._on_created = on_created
        self._on_identity = on_identity
        self._informer = Informer(client, CLUSTER_SETS, namespace=namespace, handler=self._event)
        self._task: asyncio.Task[None] | None = None
        self.present = False
        # Why the ClusterSet ended ("" while it was not deleted since this replica saw it).
        self.ended = ""
        self.identity = ClusterSetIdentity(name, leader_cluster_id)
        self.current: Obj | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="hub-clusterset-watch")

    async def _run(self) -> None:
        try:
            await self._informer.run()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # e.g. the ClusterSet CRD was removed: keep serving, say so
            log.error("leader clusterset watch failed", extra={"clusterSet": self.name, "error": str(exc)})

    async def stop(self) -> None:
        await cancel_and_wait(self._task)
        self._task = None
        await self._informer.stop()

    async def _event(self, event: WatchEvent) -> None:
        name = name_of(event.object)
        terminating = bool((event.object.get("metadata") or {}).get("deletionTimestamp"))
        if name == self.name and (event.type == "DELETED" or terminating):
            self.current = None
            if not self.present:
                return
            self.present = False
            self.ended = deleted_cr(self.name, self._namespace, self._now())
            log.warning("leader clusterset deleted", extra={"clusterSet": f"{self._namespace}/{self.name}"})
            await self._on_deleted(self.ended)
            return
        await self._follow()
        if name != self.name:
            return
        self.current = event.object
        if self.present:
            return
        self.present = True
        if self.ended:
            self.ended = ""
            log.info("leader clusterset created again", extra={"clusterSet": f"{self._namespace}/{self.name}"})
            await self._on_created()

    async def _follow(self) -> None:
        """Which ClusterSet the CRs say the hub serves; once one was followed, none is no news."""
        found = identity(self._informer.list(self._namespace), *self._configured)
        if not found.followed and self.identity.followed and not found.mismatches:
            return
        if found == self.identity:
            return
        self.identity = found
        if found.followed and found.followed != self.name:
            self.name, self.present = found.followed, False
        for mismatch in found.mismatches:
            log.warning("leader clusterset mismatch", extra={"clusterSet": self.name, "mismatch": mismatch})
        log.info(
            "hub serves the leader clusterset",
            extra={"clusterSet": found.cluster_set_id, "leader": found.leader_cluster_id, "followed": found.followed},
        )
        if self._on_identity is not None:
            await self._on_identity(found)
