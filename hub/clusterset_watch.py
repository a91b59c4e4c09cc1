"""Follows the leader's ClusterSet CR (Kubernetes store): its deletion ends the ClusterSet.

Every replica watches it, the leader and the others alike, so that a replica taking over
after the deletion knows the ClusterSet ended even though the leader that saw it is gone.
The hub may run before the ClusterSet CR exists (as it does before "Initialize ClusterSet"
of the user guide): only a CR seen and then deleted ends the ClusterSet. A replica started
after the deletion never saw the CR and serves as a fresh hub does.

Callbacks: `on_deleted(reason)` when the CR goes (or starts terminating), `on_created()`
when a ClusterSet of that name is made again after a deletion.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime

from hub.clusterset_end import deleted_cr
from kube.client import KubeClient, WatchEvent
from kube.informer import Informer
from kube.resources import CLUSTER_SETS, name_of

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
    ) -> None:
        self._namespace = namespace
        self._name = name
        self._now = now
        self._on_deleted = on_deleted
        self._on_created = on_created
        self._informer = Informer(client, CLUSTER_SETS, namespace=namespace, handler=self._event)
        self._task: asyncio.Task[None] | None = None
        self.present = False
        # Why the ClusterSet ended ("" while it was not deleted since this replica saw it).
        self.ended = ""

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="hub-clusterset-watch")

    async def _run(self) -> None:
        try:
            await self._informer.run()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # e.g. the ClusterSet CRD was removed: keep serving, say so
            log.error("leader clusterset watch failed", extra={"clusterSet": self._name, "error": str(exc)})

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        await self._informer.stop()

    async def _event(self, event: WatchEvent) -> None:
        if name_of(event.object) != self._name:
            return
        terminating = bool((event.object.get("metadata") or {}).get("deletionTimestamp"))
        if event.type == "DELETED" or terminating:
            if not self.present:
                return
            self.present = False
            self.ended = deleted_cr(self._name, self._namespace, self._now())
            log.warning("leader clusterset deleted", extra={"clusterSet": f"{self._namespace}/{self._name}"})
            await self._on_deleted(self.ended)
            return
        if self.present:
            return
        self.present = True
        if self.ended:
            self.ended = ""
            log.info("leader clusterset created again", extra={"clusterSet": f"{self._namespace}/{self._name}"})
            await self._on_created()
