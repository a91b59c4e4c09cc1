"""ClusterSetController: join when the member Namespace has a ClusterSet, leave when it goes,
and keep its status current.

One work queue, one worker, two keys: ``membership`` (read the ClusterSet, its claims, the
ClusterProperty ``cluster.clusterset.k8s.io`` and the token Secret; join, rejoin or leave) and
``status`` (rewrite the ClusterSet status from the hub session's state). One worker serialises
them, so a status is never written for a session being torn down. What joining means (the hub
session, exports, imports) is the ``Membership``'s business: this controller only decides when.
Its watches: the ClusterSets, ClusterClaims and Secrets of the member Namespace, the cluster's
ClusterProperties, and the membership's link to the leader.

Once the hub took the member in, the ClusterProperties ``cluster.clusterset.k8s.io`` (unless
someone else wrote it) and ``clusterset.k8s.io`` say who the cluster is and which ClusterSet it
is a member of; leaving removes what the member wrote (member.about.properties). A new ID from the ClusterSet is leaving
one membership and joining another (the exports are withdrawn first). A new ID from the
ClusterProperty is not: KEP-2149 makes a member's ID immutable, so the member announces the new
ID as it is, without leaving, and the hub refuses it (ClusterIDImmutable, on the ClusterSet's
status) until the property says the ID it joined with again or the member leaves.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

from kube.client import KubeClient, WatchEvent
from kube.discovery import first_served
from kube.errors import KubeError, NotFound, PermanentError, TemporaryError
from kube.informer import Informer
from kube.manager import Watches
from kube.queue_worker import QueueWorker
from kube.resources import SECRETS, Obj, Resource, name_of
from kube.workqueue import WorkQueue
from mcapi.crds import PROPERTY_CLUSTER_ID
from mcapi.resources import CLUSTER_CLAIMS, CLUSTER_CLAIMS_V1ALPHA1, CLUSTER_SETS, CLUSTER_SETS_V1ALPHA1
from member.about.properties import ClusterProperties
from member.hubclient import HubEndpoint
from member.join.credentials import read_endpoint
from member.join.spec import InvalidClusterSet, JoinSpec, parse_join_spec
from member.join.status import LeaderLink, desired_status, status_differs, status_merge_patch

log = logging.getLogger(__name__)

KEY_MEMBERSHIP = "membership"
KEY_STATUS = "status"


class Membership(Protocol):
    """The joined state of a member: what joining starts and leaving stops."""

    async def join(self, spec: JoinSpec, endpoint: HubEndpoint) -> None:
        """Connect to the hub as ``spec`` says; raise to be retried (nothing left half-started)."""

    async def leave(self, *, withdraw: bool) -> None:
        """Disconnect; with ``withdraw``, first take back every export and imported object."""

    def link(self) -> LeaderLink:
        """The hub session's state, for the ClusterSet status."""

    def watch_link(self, listener: Callable[[], None]) -> None:
        """Call ``listener()`` from now on whenever the link may have changed."""


def _withdraws(joined: JoinSpec, spec: JoinSpec) -> bool:
    """Whether going from ``joined`` to ``spec`` leaves the ClusterSet (withdrawing everything):
    another ClusterSet or another ID from the ClusterSet; not a new ID from the ClusterProperty
    in the same ClusterSet, which the hub refuses as the immutable ID changing (KEP-2149)."""
    if joined.identity == spec.identity:
        return False
    return not (spec.id_from_property and joined.cluster_set_id == spec.cluster_set_id)


class ClusterSetController:
    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        membership: Membership,
        *,
        status_resync: float,
        properties: ClusterProperties | None = None,
    ) -> None:
        """``properties``: the cluster's ClusterProperties (None: the ID comes from the ClusterSet only)."""
        self._client = client
        self._namespace = namespace
        self._membership = membership
        self._properties = properties
        self._status_resync = status_resync
        self._queue: WorkQueue[str] = WorkQueue("clusterset")
        self._watches = Watches()
        self._cluster_sets: Informer | None = None
        self._claims: Informer | None = None
        self._worker: QueueWorker[str] = QueueWorker(self._queue, self._reconcile)
        self._resource: Resource = CLUSTER_SETS
        # What we joined with (None: not joined), and why we could not join the ClusterSet seen.
        self._joined: tuple[JoinSpec, HubEndpoint] | None = None
        self._problem = ""
        # Status reconciles done (written or not): lets tests see a pass happened.
        self.status_passes = 0

    @property
    def joined(self) -> JoinSpec | None:
        return self._joined[0] if self._joined is not None else None

    # ---- lifecycle -----------------------------------------------------------

    async def start(self) -> None:
        ns = self._namespace
        served = await first_served(self._client, (CLUSTER_SETS, CLUSTER_SETS_V1ALPHA1), ns)
        if served is None:
            raise PermanentError("the ClusterSet CRD (multicluster.crd.antrea.io) is not installed")
        self._resource = served
        self._cluster_sets = Informer(self._client, served, namespace=ns, handler=self._on_event)
        informers = [self._cluster_sets]
        # Legacy claims carry their well-known name in a v1alpha1-only field: read them as v1alpha1.
        claims = await first_served(self._client, (CLUSTER_CLAIMS_V1ALPHA1, CLUSTER_CLAIMS), ns)
        if claims is not None:
            self._claims = Informer(self._client, claims, namespace=ns, handler=self._on_event)
            informers.append(self._claims)
        informers.append(Informer(self._client, SECRETS, namespace=ns, handler=self._on_secret))
        self._watches = Watches(*informers)
        await self._watches.start()
        self._membership.watch_link(self.status_changed)
        if self._properties is not None:
            self._properties.add_listener(self._on_property)
        self._worker.start()
        self._queue.add(KEY_MEMBERSHIP)

    async def stop(self) -> None:
        """Stop watching; the membership itself is left to the caller (a process stop is not a leave)."""
        await self._worker.close()
        await self._watches.stop()

    def status_changed(self) -> None:
        """The hub session's state changed: the ClusterSet status follows."""
        self._queue.add(KEY_STATUS)

    # ---- events --------------------------------------------------------------

    async def _on_event(self, event: WatchEvent) -> None:
        self._queue.add(KEY_MEMBERSHIP)

    def _on_property(self, name: str) -> None:
        if name == PROPERTY_CLUSTER_ID or self._joined is not None:
            self._queue.add(KEY_MEMBERSHIP)  # the ID, or a well-known property the member keeps

    async def _on_secret(self, event: WatchEvent) -> None:
        # Only the token Secret matters: a rotated token or a Secret created after the ClusterSet.
        wanted = self._joined[0].secret if self._joined else None
        if wanted is None or name_of(event.object) == wanted or self._problem:
            self._queue.add(KEY_MEMBERSHIP)

    # ---- reconcile -----------------------------------------------------------

    async def _reconcile(self, key: str) -> float | None:
        if key == KEY_MEMBERSHIP:
            try:
                await self._reconcile_membership()
            finally:
                self._queue.add(KEY_STATUS)
            return None
        return await self._reconcile_status()

    def _current_cluster_sets(self) -> list[Obj]:
        assert self._cluster_sets is not None
        found = self._cluster_sets.list(self._namespace)
        return [o for o in found if not (o.get("metadata") or {}).get("deletionTimestamp")]

    async def _reconcile_membership(self) -> None:
        cluster_sets = self._current_cluster_sets()
        if not cluster_sets:
            self._problem = ""
            if self._joined is not None:
                log.info("clusterset deleted, leaving", extra={"clusterSet": self._joined[0].ref})
                await self._membership.leave(withdraw=True)
                self._joined = None
                if self._properties is not None:
                    await self._properties.release()
            return
        if len(cluster_sets) > 1:
            names = sorted(name_of(o) for o in cluster_sets)
            self._problem = f"Namespace {self._namespace} has {len(names)} ClusterSets ({', '.join(names)}); only one"
            raise InvalidClusterSet(self._problem)
        claims = self._claims.list(self._namespace) if self._claims is not None else []
        id_property = self._properties.cluster_id_of_a_person() if self._properties is not None else ""
        try:
            spec = parse_join_spec(cluster_sets[0], claims, id_property)
            endpoint = await read_endpoint(self._client, spec)
        except (PermanentError, TemporaryError, KubeError) as err:
            self._problem = str(err)
            raise
        self._problem = ""
        if self._joined == (spec, endpoint):
            await self._claim()
            return
        if self._joined is not None:
            withdraw = _withdraws(self._joined[0], spec)
            log.info(
                "clusterset changed, reconnecting",
                extra={"clusterSet": spec.ref, "clusterID": spec.cluster_id, "withdraw": withdraw},
            )
            await self._membership.leave(withdraw=withdraw)
            self._joined = None
        log.info(
            "joining clusterset",
            extra={"clusterSet": spec.ref, "clusterID": spec.cluster_id, "leader": spec.server, "legacy": spec.legacy},
        )
        try:
            await self._membership.join(spec, endpoint)
        except Exception as err:
            # The ClusterSet status says why; and even a "permanent" failure is tried again: what is
            # missing (a CRD installed after the member, RBAC) gets fixed without touching the ClusterSet.
            self._problem = f"cannot join: {err or type(err).__name__}"
            if isinstance(err, PermanentError):
                raise TemporaryError(self._problem, delay=self._status_resync) from err
            raise
        self._joined = (spec, endpoint)

    async def _claim(self) -> None:
        """Once the hub took this member in (it may refuse its ID), the well-known ClusterProperties
        say who it is (written only when they differ)."""
        if self._properties is None or self._joined is None or not self._membership.link().connected:
            return
        spec = self._joined[0]
        await self._properties.claim(spec.cluster_id, spec.cluster_set_id)

    def _link(self, cluster_set: Obj) -> LeaderLink:
        if self._joined is not None:
            return self._membership.link()
        leaders = (cluster_set.get("spec") or {}).get("leaders") or [{}]
        leader_id = str(leaders[0].get("clusterID") or "") if isinstance(leaders[0], dict) else ""
        return LeaderLink(leader_id, connected=False, why=self._problem or "not joined yet")

    async def _reconcile_status(self) -> float | None:
        try:
            await self._claim()
            return await self._write_status()
        finally:
            self.status_passes += 1

    async def _write_status(self) -> float | None:
        cluster_sets = self._current_cluster_sets()
        if len(cluster_sets) != 1:
            return None
        name = name_of(cluster_sets[0])
        try:
            live = await self._client.get(self._resource, name, self._namespace)
        except NotFound:
            return None
        link = self._link(live)
        if not link.settled:
            # A session that has not reached the hub yet knows nothing new: writing "Disconnected"
            # now would flap the status of every restarted member. Its first answer re-queues us.
            return self._status_resync
        generation = (live.get("metadata") or {}).get("generation")
        current = live.get("status")
        desired = desired_status(current, generation if isinstance(generation, int) else None, link, datetime.now(UTC))
        if status_differs(current, desired):
            patch = {
                "metadata": {"resourceVersion": live["metadata"]["resourceVersion"]},
                "status": status_merge_patch(current, desired),
            }
            await self._client.patch_status(self._resource, name, patch, self._namespace)
            log.info(
                "clusterset status updated",
                extra={"clusterSet": f"{self._namespace}/{name}", "readyClusters": desired["readyClusters"]},
            )
        return self._status_resync
