"""The production store: ResourceExport, ResourceImport and MemberClusterAnnounce
CRs in the leader Namespace, so `kubectl get resourceexport -n antrea-multicluster`
shows what Antrea shows.

The API server (etcd) is the durable part: `commit` returns once every write
of the batch was acknowledged. The change log lives in memory, so each `open`
starts a new epoch and resuming watchers get a snapshot — the index is rebuilt
from the CRs on every start (or leadership change).

A batch is converted whole before anything is written, so a bad record fails
its batch with nothing written. Writes that fail on the way (the API server
restarting) are retried with backoff for `write_timeout`; a batch that still
cannot land, or one with a write the API server refuses for good, raises
CommitFailed once none of its writes is still going on. What landed of it
stays in the CRs without being in the hub's index (the caller hears the
failure and retries) until it is written again or a leader loads the CRs.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from hub.store.base import (
    ImportChange,
    MemberRecord,
    Snapshot,
    Store,
    StoreError,
    WriteBatch,
)
from hub.store.changelog import ChangeLog
from hub.store.kube_authorship import Authorship, authorship
from hub.store.kube_codec import (
    MAX_CR_BYTES,
    InvalidRecord,
    change_stamp,
    clearing_deleting_mark,
    deleting_patch,
    export_from_cr,
    import_from_cr,
    member_from_cr,
    member_to_cr,
    stamped,
    storable,
)
from hub.store.kube_measured import MeasuredCRs
from hub.store.packed import M, PackedMessages
from kube.backoff import Backoff, Retries
from kube.client import KubeClient, PatchType
from kube.errors import AlreadyExists, KubeError, NotFound, TemporaryError
from kube.resources import NAMESPACES, Resource, name_of
from mcapi import names
from mcapi.convert import ConversionError
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.resources import MEMBER_CLUSTER_ANNOUNCES, RESOURCE_EXPORTS, RESOURCE_IMPORTS

log = logging.getLogger(__name__)

# A write the API server refused for a moment (TemporaryError): 50 ms doubling up to 2 s, +-50 %.
_WRITE_BACKOFF = Backoff(initial=0.05, maximum=2.0, jitter=0.5)


def _no_facet(_: object) -> tuple[str, str]:
    return "", ""


def _packed(parse: Callable[[bytes], M]) -> PackedMessages[M]:
    return PackedMessages(parse, _no_facet)


__all__ = ["CommitFailed", "InvalidRecord", "KubeStore", "StoreUnavailable"]


class CommitFailed(StoreError):
    """A batch could not be written (write timeout, or a write the API server refused for good);
    part of it may have landed, and none of it is still being written."""


class StoreUnavailable(StoreError):
    """The leader Namespace or the CRDs are missing, or the API server refuses us."""


class KubeStore(Store):
    def __init__(
        self,
        client: KubeClient,
        namespace: str = names.DEFAULT_LEADER_NAMESPACE,
        *,
        compact_keep: int = 10_000,
        concurrency: int = 16,
        write_timeout: float = 30.0,
    ) -> None:
        self._client = client
        self.namespace = namespace
        self._slots = asyncio.Semaphore(concurrency)
        self._write_timeout = write_timeout
        self._lock = asyncio.Lock()
        self._revision = 0
        self._import_revision = 0
        self._log = ChangeLog(compact_keep)
        # What the CRs hold as the hub wrote them, kept packed (hub.store.packed) like the engine's index.
        self._exports: PackedMessages[pb.ResourceExport] = _packed(pb.ResourceExport.FromString)
        self._imports: PackedMessages[pb.ResourceImport] = _packed(pb.ResourceImport.FromString)
        self._members: dict[str, MemberRecord] = {}
        # Names known to exist, so a put patches instead of trying a create first.
        self._existing: dict[Resource, set[str]] = {}
        # The CRs record_bytes made, for the commit that writes them (converted once).
        self._measured = MeasuredCRs(namespace)

    @property
    def epoch(self) -> str:
        return self._log.epoch

    @property
    def revision(self) -> int:
        return self._revision

    @property
    def max_record_bytes(self) -> int:
        """What etcd takes in one write, less room for what the API server adds (kube_codec)."""
        return MAX_CR_BYTES

    def record_bytes(self, record: pb.ResourceExport | pb.ResourceImport) -> int:
        """The size of the CR the record becomes, as JSON (the CR is kept for the commit)."""
        return self._measured.size(record)

    @property
    def watch_revision(self) -> int:
        """The last revision that changed imports: what a follower replica can know of (the CRs
        of other kinds reach it on other watches, in no order with these)."""
        return self._import_revision

    async def open(self) -> Snapshot:
        try:
            await self._client.get(NAMESPACES, self.namespace)
        except NotFound as exc:
            raise StoreUnavailable(
                f"the leader Namespace {self.namespace!r} does not exist; create it (the leader manifest does)"
            ) from exc
        exports, imports, members = {}, {}, {}
        try:
            for obj in (await self._client.list_all(RESOURCE_EXPORTS, namespace=self.namespace)).items:
                if authorship(obj) is not Authorship.HUB:
                    # A person's (kubectl) or one changed since the hub wrote it: not the hub's
                    # state. hub.leader_cluster.kubectl_exports takes policies in; members resend their own.
                    log.info("kube store skips a ResourceExport it did not write", extra={"object": name_of(obj)})
                    continue
                export = export_from_cr(obj)
                exports[export.export_name] = export
            for obj in (await self._client.list_all(RESOURCE_IMPORTS, namespace=self.namespace)).items:
                imp = import_from_cr(obj)
                imports[imp.import_name] = imp
            for obj in (await self._client.list_all(MEMBER_CLUSTER_ANNOUNCES, namespace=self.namespace)).items:
                member = member_from_cr(obj)
                members[member.cluster_id] = member
        except NotFound as exc:
            raise StoreUnavailable("the mchub CRDs are not installed (kubectl apply -f deploy/crds/)") from exc
        except ConversionError as exc:
            raise StoreUnavailable(f"a CR in {self.namespace!r} cannot be read: {exc}") from exc
        self._existing = {
            RESOURCE_EXPORTS: set(exports),
            RESOURCE_IMPORTS: set(imports),
            MEMBER_CLUSTER_ANNOUNCES: {names.member_announce_name(c) for c in members},
        }
        self._revision = 0
        self._import_revision = 0
        self._log.start(uuid.uuid4().hex, 0)
        self._exports, self._imports = _packed(pb.ResourceExport.FromString), _packed(pb.ResourceImport.FromString)
        self._exports.update(exports)
        self._imports.update(imports)
        self._members = members
        log.info(
            "kube store loaded",
            extra={"namespace": self.namespace, "exports": len(exports), "imports": len(imports), "epoch": self.epoch},
        )
        return self._copy()

    async def close(self) -> None:
        """The client belongs to the caller; nothing to release here."""

    def _copy(self) -> Snapshot:
        return Snapshot(self.epoch, self._revision, dict(self._exports), dict(self._imports), dict(self._members))

    async def snapshot(self) -> Snapshot:
        return self._copy()

    async def commit(self, batch: WriteBatch) -> int:
        if batch.is_empty():
            return self._revision
        ns = self.namespace
        async with self._lock:
            # The stamp followers count this revision's import changes by (kube_codec).
            deleted_imports = [n for n in batch.delete_imports if n in self._imports]
            stamp = change_stamp(self.epoch, self._revision + 1, len(batch.put_imports) + len(deleted_imports))
            # Convert everything first (or take the CRs record_bytes made): a bad record fails
            # its batch before any write. What was measured for other writes is forgotten.
            try:
                writes: list[tuple[Resource, dict[str, Any]]] = [
                    (RESOURCE_EXPORTS, storable(*self._measured.take(e, pb.ResourceExport))) for e in batch.put_exports
                ]
                writes += [
                    (RESOURCE_IMPORTS, stamped(storable(*self._measured.take(i, pb.ResourceImport)), stamp))
                    for i in batch.put_imports
                ]
            finally:
                self._measured.clear()
            writes += [(MEMBER_CLUSTER_ANNOUNCES, member_to_cr(m, ns)) for m in batch.put_members]
            deletes = [(RESOURCE_EXPORTS, n) for n in batch.delete_exports]
            deletes += [(MEMBER_CLUSTER_ANNOUNCES, names.member_announce_name(c)) for c in batch.delete_members]
            jobs = [self._retrying(functools.partial(self._put, r, o)) for r, o in writes]
            jobs += [self._retrying(functools.partial(self._delete, r, n)) for r, n in deletes]
            jobs += [self._retrying(functools.partial(self._delete_import, n, stamp)) for n in batch.delete_imports]
            tasks = [asyncio.ensure_future(job) for job in jobs]
            try:
                async with asyncio.timeout(self._write_timeout):
                    await asyncio.gather(*tasks)
            except TimeoutError as exc:
                raise CommitFailed(f"a batch of {len(jobs)} writes did not land within {self._write_timeout}s") from exc
            except KubeError as exc:
                raise CommitFailed(f"the API server refused a write of the batch: {exc}") from exc
            finally:
                # gather leaves the others running when one fails: stop them, so no write of
                # this batch lands after it was reported failed (over a newer batch's write).
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
            self._revision += 1
            self._apply(batch)
            return self._revision

    def _apply(self, batch: WriteBatch) -> None:
        for e in batch.put_exports:
            self._exports[e.export_name] = e
        for name in batch.delete_exports:
            if name in self._exports:
                del self._exports[name]
        changes = []
        for i in batch.put_imports:
            self._imports[i.import_name] = i
            changes.append(ImportChange(self._revision, i.import_name, i))
        for name in batch.delete_imports:
            if name in self._imports:
                del self._imports[name]
                changes.append(ImportChange(self._revision, name, None))
        for m in batch.put_members:
            # As a restart will read it back: UTC, whole seconds.
            self._members[m.cluster_id] = member_from_cr(member_to_cr(m, self.namespace))
        for cluster_id in batch.delete_members:
            self._members.pop(cluster_id, None)
        self._log.append(self._revision, changes)
        if changes:
            self._import_revision = self._revision

    async def _retrying(self, write: Callable[[], Awaitable[None]]) -> None:
        retries = Retries(_WRITE_BACKOFF)
        while True:
            try:
                async with self._slots:
                    await write()
                return
            except TemporaryError as exc:
                delay = retries.next_delay()
                log.warning("kube store write retried", extra={"error": str(exc), "delaySeconds": delay})
                await asyncio.sleep(delay)

    async def _put(self, resource: Resource, obj: dict[str, Any]) -> None:
        name = obj["metadata"]["name"]
        known = self._existing.setdefault(resource, set())
        status = obj.pop("status", None)
        if name not in known:
            try:
                await self._client.create(resource, obj, namespace=self.namespace)
            except AlreadyExists:
                await self._patch(resource, name, obj)
            known.add(name)
        else:
            try:
                await self._patch(resource, name, obj)
            except NotFound:
                await self._client.create(resource, obj, namespace=self.namespace)
        if status is not None:
            await self._client.patch_status(
                resource, name, {"status": status}, namespace=self.namespace, patch_type=PatchType.MERGE
            )

    async def _patch(self, resource: Resource, name: str, obj: dict[str, Any]) -> None:
        # A merge patch of the whole object: maps merge, lists are replaced, and
        # fields (labels, annotations) others added stay.
        if resource == RESOURCE_IMPORTS:
            obj = clearing_deleting_mark(obj)
        await self._client.patch(resource, name, obj, namespace=self.namespace, patch_type=PatchType.MERGE)

    async def _delete(self, resource: Resource, name: str) -> None:
        with contextlib.suppress(NotFound):
            await self._client.delete(resource, name, namespace=self.namespace, propagation_policy="Background")
        self._existing.get(resource, set()).discard(name)

    async def _delete_import(self, name: str, stamp: str) -> None:
        """Stamp, then delete: the DELETED event followers see names the revision that deleted it."""
        try:
            await self._client.patch(
                RESOURCE_IMPORTS, name, deleting_patch(stamp), namespace=self.namespace, patch_type=PatchType.MERGE
            )
        except NotFound:
            self._existing.get(RESOURCE_IMPORTS, set()).discard(name)
            return
        await self._delete(RESOURCE_IMPORTS, name)

    async def import_changes_since(self, epoch: str, revision: int) -> list[ImportChange]:
        return self._log.since(epoch, revision)

    async def compact(self, keep_after: int) -> None:
        self._log.compact(keep_after)
