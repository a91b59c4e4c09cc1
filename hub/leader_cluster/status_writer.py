"""Keeps the leader ClusterSet CR's status current (kube store only).

The user creates the leader's ClusterSet (as in Antrea); the hub writes its
status: totalClusters, readyClusters, Ready, and per-member ClusterConnected.
A condition's lastTransitionTime moves only when its status flips (kube.conditions).
"""

from __future__ import annotations

import logging
from typing import Any

from kube.client import KubeClient, PatchType
from kube.conditions import keep_transition_times
from kube.errors import KubeError, NotFound
from kube.resources import Obj
from kube.writecache import newer
from mcapi.resources import CLUSTER_SETS

log = logging.getLogger(__name__)


def merge_status(status: dict[str, Any], current: dict[str, Any]) -> dict[str, Any]:
    """`status` with the transition times of conditions whose status did not change."""
    merged = dict(status)
    merged["conditions"] = keep_transition_times(status["conditions"], current.get("conditions") or [])
    old_clusters = {c.get("clusterID"): c for c in current.get("clusterStatuses") or []}
    merged["clusterStatuses"] = [
        {
            **cluster,
            "conditions": keep_transition_times(
                cluster["conditions"], (old_clusters.get(cluster["clusterID"]) or {}).get("conditions") or []
            ),
        }
        for cluster in status["clusterStatuses"]
    ]
    return merged


class ClusterSetStatusWriter:
    def __init__(self, client: KubeClient, namespace: str, name: str) -> None:
        self._client = client
        self._namespace = namespace
        self._name = name
        self._missing_logged = False
        # The server's answer to our last write: a watch's copy older than it (the watch lags
        # under load) must not be taken for the status, or a change back to what that older copy
        # says would look written already and never be (kube.writecache does the same for others).
        self._written: Obj | None = None

    async def write(self, status: dict[str, Any], *, name: str = "", current: Obj | None = None) -> None:
        """Write `status` into ClusterSet `name` (default: the one given at construction) if it
        changed; `current`: the CR as a watch last saw it, which spares a GET (None: GET it)."""
        if name and name != self._name:
            self._name, self._written = name, None
        if current is not None:
            await self._write(status, current)
            return
        try:
            clusterset = await self._client.get(CLUSTER_SETS, self._name, self._namespace)
        except NotFound:
            if not self._missing_logged:
                log.info("leader ClusterSet not found; its status is not written", extra={"clusterSet": self._name})
                self._missing_logged = True
            return
        except KubeError as exc:
            log.warning("reading the leader ClusterSet failed", extra={"error": str(exc)})
            return
        await self._write(status, clusterset)

    async def _write(self, status: dict[str, Any], clusterset: Obj) -> None:
        self._missing_logged = False
        if self._written is not None and newer(self._written, clusterset):
            clusterset = self._written
        current = clusterset.get("status") or {}
        desired = merge_status(status, current)
        desired["observedGeneration"] = (clusterset.get("metadata") or {}).get("generation", 0)
        if desired == {k: current.get(k) for k in desired}:
            return
        try:
            self._written = await self._client.patch_status(
                CLUSTER_SETS, self._name, {"status": desired}, namespace=self._namespace, patch_type=PatchType.MERGE
            )
        except KubeError as exc:
            log.warning("writing the leader ClusterSet status failed", extra={"error": str(exc)})
