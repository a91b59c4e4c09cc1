"""Keeps a ClusterProfile (KEP-4322) for every member in the leader Namespace, as the ClusterSet's
cluster manager does (hub.clusterset.profiles says what each holds).

Both ways the hub shows itself in a leader cluster write them: the kube store's leader replica
(hub.replicas.leadership) and a SQLite hub's mirror (hub.mirror.leader), each from its status
loop: every pass compares the desired profiles with a watch of the profiles this manager keeps
(its label selects them) and writes only what differs, so a pass with nothing new costs no
request. A member that leaves, or is removed, loses its profile; profiles of other managers are
never touched. The leader Namespace is labelled ``multicluster.x-k8s.io/clusterset: <ClusterSet
ID>`` (KEP-4322: the Namespace stands for the ClusterSet).

Nothing here stands between members and the hub: a leader cluster without the ClusterProfile CRD
(an older install) is told once in the log and asked again now and then; failed writes are
logged and tried again at the next pass.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from datetime import datetime

from hub.clusterset.profiles import CLUSTER_MANAGER, desired_profile, is_ours
from hub.store.base import MemberRecord
from kube.apply import FromCache, contains, delete_object, ensure, ensure_status
from kube.client import KubeClient, WatchEvent
from kube.discovery import first_served
from kube.errors import Forbidden, KubeError, NotFound, PermanentError, TemporaryError
from kube.informer import Informer
from kube.resources import NAMESPACES, name_of
from kube.writecache import WriteThroughCache
from mcapi.crds import LABEL_CLUSTER_MANAGER, LABEL_CLUSTER_SET
from mcapi.resources import CLUSTER_PROFILES

log = logging.getLogger(__name__)

# How long the writer waits before asking again whether the ClusterProfile CRD is served.
CRD_RECHECK_SECONDS = 30.0


class ClusterProfileWriter:
    def __init__(self, client: KubeClient, namespace: str) -> None:
        self._client = client
        self._namespace = namespace
        self._informer: Informer | None = None
        self._cache: WriteThroughCache | None = None
        self._source: FromCache | None = None
        self._next_check = 0.0
        self._labelled_for = ""  # the ClusterSet ID the Namespace was labelled with

    async def _watching(self) -> bool:
        """Whether the profiles are watched (starting the watch once the CRD is served)."""
        if self._informer is not None:
            return self._informer.synced.is_set()
        loop = asyncio.get_running_loop()
        if loop.time() < self._next_check:
            return False
        if await first_served(self._client, (CLUSTER_PROFILES,), self._namespace) is None:
            self._next_check = loop.time() + CRD_RECHECK_SECONDS
            log.warning(
                "the ClusterProfile CRD (multicluster.x-k8s.io) is not installed in the leader cluster; "
                "members have no ClusterProfiles until it is",
                extra={"namespace": self._namespace, "recheckSeconds": CRD_RECHECK_SECONDS},
            )
            return False
        informer = Informer(
            self._client,
            CLUSTER_PROFILES,
            namespace=self._namespace,
            label_selector=f"{LABEL_CLUSTER_MANAGER}={CLUSTER_MANAGER}",
            handler=self._observe,
        )
        self._informer, self._cache = informer, WriteThroughCache(informer)
        self._source = FromCache(self._client, self._cache)
        informer.start()
        return False  # its first list comes in the background: the next pass writes

    async def _observe(self, event: WatchEvent) -> None:
        if self._cache is not None:
            self._cache.observe(event)

    async def write(
        self, members: Mapping[str, MemberRecord], now: datetime, disconnect_after: float, cluster_set_id: str
    ) -> None:
        """One pass: every member's profile as it should be now, and no profile of a non-member."""
        try:
            await self._label_namespace(cluster_set_id)
            if not await self._watching():
                return
            await self._converge(members, now, disconnect_after)
        except KubeError as err:
            log.warning("cluster profiles not written", extra={"namespace": self._namespace, "error": str(err)})

    async def _converge(self, members: Mapping[str, MemberRecord], now: datetime, disconnect_after: float) -> None:
        assert self._cache is not None and self._source is not None
        source = self._source
        for member in members.values():
            current = self._cache.get(member.cluster_id, self._namespace)
            desired = desired_profile(member, self._namespace, now, disconnect_after, current)
            try:
                applied = await ensure(self._client, CLUSTER_PROFILES, desired.object, is_ours, source=source)
                await ensure_status(self._client, CLUSTER_PROFILES, applied.object, desired.status, source=source)
            except KubeError:
                raise  # the API server's trouble, not this profile's: the pass ends here
            except (TemporaryError, PermanentError) as err:  # this member's profile only: the others go on
                # Another manager's profile holds the name, or ours is still being deleted (a member that
                # left and joined again): said here, tried again at the next pass.
                log.warning("cluster profile not written", extra={"clusterID": member.cluster_id, "error": str(err)})
        for profile in self._cache.list(self._namespace):
            if name_of(profile) not in members and is_ours(profile):
                await delete_object(self._client, CLUSTER_PROFILES, profile, source=source)
                log.info("cluster profile of a former member deleted", extra={"clusterID": name_of(profile)})

    async def _label_namespace(self, cluster_set_id: str) -> None:
        """The leader Namespace stands for the ClusterSet (KEP-4322's label), checked once per ClusterSet
        ID and patched only when it is not labelled so (a restart writes nothing)."""
        if not cluster_set_id or self._labelled_for == cluster_set_id:
            return
        patch = {"metadata": {"labels": {LABEL_CLUSTER_SET: cluster_set_id}}}
        try:
            if not contains(await self._client.get(NAMESPACES, self._namespace), patch):
                await self._client.patch(NAMESPACES, self._namespace, patch)
        except (Forbidden, NotFound) as err:
            log.warning(
                "the leader Namespace could not be labelled with its ClusterSet",
                extra={"namespace": self._namespace, "label": LABEL_CLUSTER_SET, "error": str(err)},
            )
        self._labelled_for = cluster_set_id

    async def close(self) -> None:
        if self._informer is not None:
            await self._informer.stop()
            self._informer = None
