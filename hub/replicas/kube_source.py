"""Following a kube-store leader: informers of the CRs it writes in the leader Namespace.

ResourceImports carry the stamp of the revision that wrote them (kube_codec:
"<epoch>/<revision>/<changes in that revision>"; a delete is stamped just before it happens).
The leader writes one revision whole before the next, so on one watch a revision's events come
together and in order. The follower collects a revision until it has all its changes (or the
next revision begins, or `flush_after` passed: a CR someone else deleted never sends its event)
and then publishes it under the leader's epoch.

Whenever the follower cannot vouch for the revision numbers — it (re)listed the CRs, or a
new leader began writing under another epoch — it serves its state under an epoch of its own
until the next revision it sees begins (the one in flight may be half in its list), then takes
the leader's epoch from there. Every such switch is a `Rebase`: open watches resume, and
resuming in a history the follower does not hold is answered with a snapshot.

Writes of anyone but the hub (a CR edited or deleted with kubectl) are not followed: the
leader's index does not follow them either. What landed of a batch that failed (the leader's
index does not have it, the CRs do) is stamped with the revision the next batch takes, and a
follower shows it with that revision, as a leader loading the CRs would. ResourceExports and MemberClusterAnnounces are
followed as they are (only the REST views read them).
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from hub.engine.ledger import Advance
from hub.replicas.follower import FollowStep, Rebase
from hub.store.base import ImportChange, MemberRecord, RevisionCompacted, Snapshot
from hub.store.kube_codec import (
    export_from_cr,
    import_from_cr,
    is_being_deleted,
    member_from_cr,
    read_change_stamp,
)
from kube.client import KubeClient, WatchEvent
from kube.informer import Informer
from kube.resources import Resource
from mcapi.convert import ConversionError
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import MEMBER_CLUSTER_ANNOUNCES, RESOURCE_EXPORTS, RESOURCE_IMPORTS

log = logging.getLogger(__name__)

Stamp = tuple[str, int, int]


class _ListingInformer(Informer):
    """An informer that says when its cache holds a fresh list (first sync and every relist)."""

    def __init__(self, client: KubeClient, resource: Resource, namespace: str, on_listed: Callable[[], None]) -> None:
        super().__init__(client, resource, namespace=namespace)
        self.listing = False
        self._on_listed = on_listed

    async def _relist(self) -> None:
        self.listing = True
        try:
            await super()._relist()
        finally:
            self.listing = False
        self._on_listed()


def _local_epoch() -> str:
    return "follower-" + uuid.uuid4().hex


class KubeFollowSource:
    def __init__(self, client: KubeClient, namespace: str, *, flush_after: float = 2.0) -> None:
        self._flush_after = flush_after
        self._steps: asyncio.Queue[FollowStep] = asyncio.Queue()
        self._imports = _ListingInformer(client, RESOURCE_IMPORTS, namespace, self._imports_listed)
        self._exports = _ListingInformer(client, RESOURCE_EXPORTS, namespace, lambda: None)
        self._members = _ListingInformer(client, MEMBER_CLUSTER_ANNOUNCES, namespace, lambda: None)
        self._imports.add_handler(self._on_import)
        self._exports.add_handler(self._on_export)
        self._members.add_handler(self._on_member)
        # What the follower holds, and the stamp each import came with.
        self._state: dict[str, pb.ResourceImport] = {}
        self._stamps: dict[str, Stamp] = {}
        # Stamps seen while serving our own epoch: a revision among them may be only partly ours.
        self._local_stamps: set[Stamp] = set()
        self._epoch = ""
        self._revision = 0
        self._leading = False  # serving the leader's epoch (else one of our own)
        self._pending: dict[str, ImportChange] = {}
        self._pending_stamp: Stamp | None = None
        self._flusher: asyncio.TimerHandle | None = None

    async def close(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
        for informer in (self._imports, self._exports, self._members):
            await informer.stop()

    async def durable_changes_since(self, epoch: str, revision: int) -> list[ImportChange]:
        """None to give: the CRs hold each import's last state, not the changes that led there."""
        raise RevisionCompacted(revision, self._revision)

    async def follow(self) -> AsyncIterator[FollowStep]:
        for informer in (self._exports, self._members, self._imports):
            await informer.wait_synced()
        while True:
            step = await self._steps.get()
            yield step

    # ---- imports -------------------------------------------------------------

    def _imports_listed(self) -> None:
        """A fresh list is the state: serve it under an epoch of our own."""
        self._state, self._stamps, self._local_stamps, self._leading = {}, {}, set(), False
        for obj in self._imports.list():
            self._hold(obj)
        self._pending, self._pending_stamp = {}, None
        self._rebase(_local_epoch(), 0, leading=False)

    def _hold(self, obj: dict[str, Any]) -> pb.ResourceImport | None:
        try:
            imp = import_from_cr(obj)
        except ConversionError as exc:
            log.warning("hub follower skips a ResourceImport it cannot read", extra={"error": str(exc)})
            return None
        self._state[imp.import_name] = imp
        stamp = read_change_stamp(obj)
        if stamp is not None:
            self._stamps[imp.import_name] = stamp
            if not self._leading:
                self._local_stamps.add(stamp)
        return imp

    def _rebase(self, epoch: str, revision: int, *, leading: bool) -> None:
        self._epoch, self._revision, self._leading = epoch, revision, leading
        if not leading:
            self._local_stamps = set(self._stamps.values())
        exports = {}
        for obj in self._exports.list():
            try:
                export = export_from_cr(obj)
            except ConversionError:
                continue
            exports[export.export_name] = export
        members = {}
        for obj in self._members.list():
            try:
                member = member_from_cr(obj)
            except (ConversionError, ValueError):
                continue
            members[member.cluster_id] = member
        self._steps.put_nowait(Rebase(Snapshot(epoch, revision, exports, dict(self._state), members)))

    async def _on_import(self, event: WatchEvent) -> None:
        if self._imports.listing:
            return  # the cache is taken whole once listed (_imports_listed)
        obj = event.object
        stamp = read_change_stamp(obj)
        name = str((obj.get("metadata") or {}).get("name", ""))
        if stamp is None or (event.type == "DELETED") != is_being_deleted(obj):
            return  # not the hub's write (or the stamp before a delete): the leader ignores it too
        if event.type != "DELETED" and self._stamps.get(name) == stamp:
            return  # the same write again (someone else edited labels or the like)
        epoch, revision, _ = stamp
        if self._leading and epoch == self._epoch and revision <= self._revision:
            return  # already published
        if not self._leading or epoch != self._epoch:
            self._enter(stamp)
        if self._leading:
            self._collect(event, stamp)
        else:
            self._apply_local(event)

    def _enter(self, stamp: Stamp) -> None:
        """A write of another history: take its epoch from here unless its revision may be half in our list."""
        epoch, revision, _ = stamp
        if self._leading:
            # A new leader: it loaded what we hold (the former one's writes came first on this watch).
            self._flush()
        elif stamp in self._local_stamps:
            return  # this revision is partly in what we listed: wait for the next one
        self._rebase(epoch, revision - 1, leading=True)

    def _apply_local(self, event: WatchEvent) -> None:
        """Under our own epoch every write is a revision of its own."""
        change = self._change(event)
        if change is not None:
            self._revision += 1
            self._steps.put_nowait(Advance(self._revision, [ImportChange(self._revision, change[0], change[1])]))

    def _change(self, event: WatchEvent) -> tuple[str, pb.ResourceImport | None] | None:
        name = str((event.object.get("metadata") or {}).get("name", ""))
        if event.type == "DELETED":
            self._state.pop(name, None)
            self._stamps.pop(name, None)
            return name, None
        imp = self._hold(event.object)
        return None if imp is None else (imp.import_name, imp)

    def _collect(self, event: WatchEvent, stamp: Stamp) -> None:
        if self._pending_stamp is not None and stamp[1] != self._pending_stamp[1]:
            self._flush()  # the next revision began: the former one is as whole as it will get
        change = self._change(event)
        if change is None:
            return
        self._pending_stamp = stamp
        self._pending[change[0]] = ImportChange(stamp[1], change[0], change[1])
        if len(self._pending) >= stamp[2]:
            self._flush()
        elif self._flusher is None:
            self._flusher = asyncio.get_running_loop().call_later(self._flush_after, self._flush)

    def _flush(self) -> None:
        if self._flusher is not None:
            self._flusher.cancel()
            self._flusher = None
        if self._pending_stamp is None:
            return
        revision = self._pending_stamp[1]
        # The leader's order of a revision's changes (hub.merge.regroup): upserts by name, then deletes by name.
        changes = sorted(self._pending.values(), key=lambda c: (c.resource is None, c.import_name))
        self._pending, self._pending_stamp = {}, None
        self._revision = revision
        self._steps.put_nowait(Advance(revision, changes))

    # ---- what only the REST views read ----------------------------------------

    async def _on_export(self, event: WatchEvent) -> None:
        name = str((event.object.get("metadata") or {}).get("name", ""))
        export: pb.ResourceExport | None = None
        if event.type != "DELETED":
            try:
                export = export_from_cr(event.object)
            except ConversionError:
                return
            name = export.export_name
        self._steps.put_nowait(Advance(self._revision, exports={name: export}))

    async def _on_member(self, event: WatchEvent) -> None:
        try:
            member: MemberRecord | None = member_from_cr(event.object)
        except (ConversionError, ValueError):
            return
        assert member is not None
        if event.type == "DELETED":
            member = None
        self._steps.put_nowait(Advance(self._revision, members={member_from_cr(event.object).cluster_id: member}))
