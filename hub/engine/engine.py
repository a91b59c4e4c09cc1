"""The hub's decisions: authorize, merge, commit durably, then tell everyone.

One writer at a time: every mutation takes the engine's lock, re-merges only
the groups it touched, commits one batch (the store fsyncs before `commit`
returns), updates the index and publishes, in that order. A verdict is
therefore never sent for a write that a crash could lose, and watchers see
revisions in commit order.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections.abc import Callable, Coroutine, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from hub.auth.identity import Identity
from hub.config import HubConfig
from hub.engine.fit import Planned, RecordLimits, fit, refusal
from hub.engine.index import Index
from hub.engine.reports import ImportStatusBook, record_reports
from hub.errors import ClusterSetEnded, Forbidden, HubError, InvalidRequest, NotJoined, bounded, quote
from hub.merge import MergeConfig, MergeContext, expected_export_name, validate_export
from hub.merge.ownership import ADMIN_OWNER, describe_owner, is_admin_export, owner_of
from hub.merge.regroup import regroup
from hub.store.base import ImportChange, MemberRecord, Store, WriteBatch
from hub.watch.batches import ImportBatch
from hub.watch.bus import Bus
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb

log = logging.getLogger(__name__)

Clock = Callable[[], datetime]
T = TypeVar("T")


def utc_now() -> datetime:
    return datetime.now(UTC)


async def _to_the_end(work: Coroutine[Any, Any, T]) -> T:
    """Run a commit to its end even if the caller is cancelled meanwhile.

    A batch handed to the store may become durable whatever its caller does
    (the sqlite writer finishes what it took). The index, the revision and the
    watchers must then follow it, and the engine lock (held by the caller)
    must stay taken until they did; only then does the cancellation go on.
    """
    task = asyncio.ensure_future(work)
    cancelled = False
    while not task.done():
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            cancelled = cancelled or not task.done()
        except Exception:  # read from the task below
            pass
    if cancelled:
        if not task.cancelled() and task.exception() is not None:
            log.error("hub commit failed after its caller went away", extra={"error": bounded(str(task.exception()))})
        raise asyncio.CancelledError
    return task.result()


@dataclass(frozen=True)
class MemberRemoval:
    """What removing a member takes (a plan: revision 0) or took: its exports and what they made."""

    cluster_id: str
    exports: list[str]
    imports_deleted: list[str]
    imports_changed: list[str]
    revision: int = 0


@dataclass(frozen=True)
class ClusterSetEnd:
    """What ending the ClusterSet deletes (a plan: revision 0) or deleted: everything."""

    members: list[str]
    exports: list[str]
    imports: list[str]
    revision: int = 0


# A refusal lists at most this many of an export's problems (and counts the rest).
_PROBLEMS_SHOWN = 8


def _problems_text(problems: list[str]) -> str:
    shown = "; ".join(problems[:_PROBLEMS_SHOWN])
    hidden = len(problems) - _PROBLEMS_SHOWN
    return f"{shown} (and {hidden} more problems)" if hidden > 0 else shown


def _same_payload(a: pb.ResourceExport, b: pb.ResourceExport) -> bool:
    """Equal as the member sent them (the hub's create_time/status aside)."""
    x, y = pb.ResourceExport(), pb.ResourceExport()
    x.CopyFrom(a)
    y.CopyFrom(b)
    for m in (x, y):
        m.ClearField("create_time")
        m.ClearField("status")
    return x == y


class Engine:
    def __init__(self, store: Store, config: HubConfig, clock: Clock = utc_now) -> None:
        self._store = store
        self._config = config
        self._clock = clock
        self._merge = MergeContext(config=MergeConfig(strict_ports=config.strict_ports), used_label_ids=set())
        self._lock = asyncio.Lock()
        self._limits = RecordLimits(store, config.max_message_bytes)
        self.index = Index()
        self.revision = 0
        # What watchers are told (snapshots, bookmarks): Store.watch_revision, kept with the index.
        self.watch_revision = 0
        self.epoch = ""
        self.imports_bus: Bus[ImportBatch] = Bus(config.watch_queue_limit, lambda batch: len(batch.changes) or 1)
        # Topic: the owner key (a cluster ID, ADMIN_OWNER for the admin); items: unsolicited verdicts.
        self.verdicts_bus: Bus[pb.ExportResponse] = Bus(config.watch_queue_limit)
        self.import_status = ImportStatusBook()
        # Why the ClusterSet ended ("" while it is served): until it is made again, members are refused.
        self.ended = ""

    @property
    def store(self) -> Store:
        return self._store

    def configure(self, config: HubConfig) -> None:
        """The ClusterSet and leader IDs changed: they came from the leader's ClusterSet CR."""
        self._config = config

    async def start(self) -> None:
        snap = await self._store.open()
        self.index = Index.from_snapshot(snap)
        self.revision = self.watch_revision = snap.revision
        self.epoch = snap.epoch
        log.info(
            "hub index loaded",
            extra={"epoch": self.epoch, "revision": self.revision, "exports": len(self.index.exports)},
        )

    # ---- members -------------------------------------------------------------

    async def announce(self, who: Identity, req: pb.AnnounceRequest) -> pb.AnnounceResponse:
        if who.admin:
            raise Forbidden("the admin token cannot announce a member cluster")
        if req.cluster_id != who.cluster_id:
            raise Forbidden(f"token belongs to cluster {quote(who.cluster_id)}, not {quote(req.cluster_id)}")
        if req.cluster_set_id != self._config.cluster_set_id:
            ours = quote(self._config.cluster_set_id)
            raise InvalidRequest(f"ClusterSet {quote(req.cluster_set_id)} is not this hub's ClusterSet {ours}")
        if req.leader_cluster_id and req.leader_cluster_id != self._config.leader_cluster_id:
            ours = quote(self._config.leader_cluster_id)
            raise InvalidRequest(f"leader cluster {quote(req.leader_cluster_id)} is not this hub's leader {ours}")
        async with self._lock:
            if self.ended:
                raise ClusterSetEnded(self.ended)
            now = self._clock()
            known = self.index.members.get(who.cluster_id)
            if known is None:
                for other in self.index.members:
                    if names.is_dash_prefix(other, who.cluster_id):
                        raise Forbidden(
                            f"cluster ID {quote(who.cluster_id)} and member {quote(other)} are dash-prefixes of "
                            "each other, which makes export names ambiguous; choose another cluster ID"
                        )
            record = MemberRecord(
                cluster_id=who.cluster_id,
                cluster_set_id=req.cluster_set_id,
                leader_cluster_id=self._config.leader_cluster_id,
                joined=known.joined if known else now,
                last_heartbeat=now,
            )
            await self._commit(WriteBatch(put_members=[record]))
            if known is None:
                log.info("member joined", extra={"clusterID": who.cluster_id})
        return pb.AnnounceResponse(
            leader_cluster_id=self._config.leader_cluster_id,
            cluster_set_id=self._config.cluster_set_id,
            heartbeat_interval_seconds=max(1, math.ceil(self._config.heartbeat_interval)),
            epoch=self.epoch,
        )

    def removal_plan(self, cluster_id: str) -> MemberRemoval:
        """What remove_member would delete and change now (nothing is written)."""
        return self._removal(cluster_id)[0]

    def _removal(self, cluster_id: str) -> tuple[MemberRemoval, WriteBatch]:
        """The removal's plan, and the write that deletes the member's exports."""
        owned = self.index.owned_by(cluster_id, admin=False)
        batch = self._regroup(deleted=owned, put=[])
        changed = sorted(i.import_name for i in batch.put_imports)
        return MemberRemoval(cluster_id, sorted(owned), sorted(batch.delete_imports), changed), batch

    async def remove_member(self, cluster_id: str, reason: str) -> MemberRemoval | None:
        """Remove a member's announce and every export it made, re-merging what they were part of.

        Its open Export streams end with FAILED_PRECONDITION and `reason`: a member still
        running then announces again and resends its exports in a new sync bracket, rather
        than believing exports the hub no longer has. None when there was nothing to remove.
        """
        async with self._lock:
            plan, batch = self._removal(cluster_id)
            if cluster_id not in self.index.members and not plan.exports:
                return None
            self._refuse_misfit(batch, f"removing member {quote(cluster_id)}")
            batch.delete_members.append(cluster_id)
            revision = await self._commit_and_publish_batch(batch)
        self.verdicts_bus.end(cluster_id, reason)
        log.info("member removed", extra={"clusterID": cluster_id, "exports": len(plan.exports), "why": reason})
        return MemberRemoval(cluster_id, plan.exports, plan.imports_deleted, plan.imports_changed, revision)

    async def leave(self, who: Identity, req: pb.LeaveRequest) -> pb.LeaveResponse:
        """The caller leaves the ClusterSet (rpc Leave): its announce and exports go; idempotent."""
        if who.admin:
            raise Forbidden("the admin token is no member and cannot leave; remove a member with its REST DELETE")
        if not req.cluster_id:
            raise InvalidRequest("cluster_id is required")
        if req.cluster_id != who.cluster_id:
            raise Forbidden(f"token belongs to cluster {quote(who.cluster_id)}, not {quote(req.cluster_id)}")
        removal = await self.remove_member(who.cluster_id, f"cluster {quote(who.cluster_id)} left the ClusterSet")
        if removal is None:
            return pb.LeaveResponse(was_member=False)
        return pb.LeaveResponse(was_member=True, deleted_exports=removal.exports, revision=removal.revision)

    # ---- the ClusterSet's end ------------------------------------------------

    def end_plan(self) -> ClusterSetEnd:
        """What end_clusterset would delete now: every announce, export and import."""
        index = self.index
        return ClusterSetEnd(sorted(index.members), sorted(index.exports), sorted(index.imports))

    async def end_clusterset(self, reason: str) -> ClusterSetEnd:
        """The ClusterSet was deleted: refuse members from now on (with `reason`) and delete
        every announce, export and import. Idempotent: run again, it deletes what is left."""
        async with self._lock:
            self.ended = reason
            plan = self.end_plan()
            batch = WriteBatch(delete_exports=plan.exports, delete_imports=plan.imports, delete_members=plan.members)
            revision = await self._commit_and_publish_batch(batch) if not batch.is_empty() else 0
        for owner in (*plan.members, ADMIN_OWNER):
            self.verdicts_bus.end(owner, reason)
        if not batch.is_empty():
            log.info(
                "clusterset ended",
                extra={"members": len(plan.members), "exports": len(plan.exports), "imports": len(plan.imports)},
            )
        return ClusterSetEnd(plan.members, plan.exports, plan.imports, revision)

    def reopen(self) -> None:
        """A new ClusterSet of the same ID was made: members are admitted again."""
        self.ended = ""

    # ---- exports -------------------------------------------------------------

    @staticmethod
    def _owner(who: Identity) -> str:
        """The owner key of what this identity writes (hub.merge.ownership)."""
        return ADMIN_OWNER if who.admin else who.cluster_id

    def _as_written_by(self, who: Identity, export: pb.ResourceExport) -> pb.ResourceExport:
        """The export as stored: an admin's policy that names no cluster carries the leader's ID."""
        if not who.admin or export.cluster_id:
            return export
        filled = pb.ResourceExport()
        filled.CopyFrom(export)
        filled.cluster_id = self._config.leader_cluster_id
        return filled

    def _authorize(self, who: Identity, export: pb.ResourceExport) -> None:
        if who.admin:
            if not is_admin_export(export):
                raise Forbidden("the admin exports only AntreaClusterNetworkPolicy; members export the rest")
            # A policy applies to every member and is the admin's whatever its body says; a
            # clusterID naming a member would read as "this member's" (or "only for this
            # member"), so it is refused rather than silently rewritten.
            leader = self._config.leader_cluster_id
            if export.cluster_id != leader:
                raise InvalidRequest(
                    f"an AntreaClusterNetworkPolicy export is the ClusterSet admin's and applies to every "
                    f"member: its clusterID must be the leader's {quote(leader)} or empty, "
                    f"not {quote(export.cluster_id)}"
                )
            return
        if is_admin_export(export):
            raise Forbidden("only the ClusterSet admin may export an AntreaClusterNetworkPolicy")
        if export.cluster_id != who.cluster_id:
            raise Forbidden(
                f"token belongs to cluster {quote(who.cluster_id)}; it cannot export for {quote(export.cluster_id)}"
            )
        expected = expected_export_name(export)
        if expected is not None and export.export_name != expected:
            raise Forbidden(
                f"export name {quote(export.export_name)} is not derived from cluster {quote(who.cluster_id)}; "
                f"expected {quote(expected)}"
            )
        if who.cluster_id not in self.index.members:
            raise NotJoined(f"cluster {quote(who.cluster_id)} must announce before it exports")

    async def upsert(self, who: Identity, export: pb.ResourceExport, sequence: int = 0) -> pb.ExportResponse:
        responses, refusal = await self.upsert_many(who, [(export, sequence)])
        if refusal is not None:
            raise refusal
        return responses[0]

    def _admit(self, who: Identity, export: pb.ResourceExport) -> None:
        problems = validate_export(export)
        if problems:
            raise InvalidRequest(_problems_text(problems))
        self._authorize(who, export)
        existing = self.index.exports.get(export.export_name)
        if existing is not None:
            owner = owner_of(existing)
            if owner != self._owner(who):
                raise Forbidden(
                    f"export {quote(export.export_name)} belongs to {describe_owner(owner)}; "
                    f"{who.describe()} cannot overwrite it"
                )
            self._check_immutable(existing, export)

    async def upsert_many(
        self, who: Identity, items: list[tuple[pb.ResourceExport, int]]
    ) -> tuple[list[pb.ExportResponse], HubError | None]:
        """Upsert several exports as ONE durable write (one fsync), answering each.

        Items are admitted in order; at the first one refused, those before it
        are still written and answered and the refusal is returned beside
        their answers (the rest are not looked at), so a bad item changes
        nothing but itself.
        """
        async with self._lock:
            refusal: HubError | None = ClusterSetEnded(self.ended) if self.ended else None
            admitted: list[tuple[pb.ResourceExport, int]] = []
            for given, sequence in items if refusal is None else []:
                export = self._as_written_by(who, given)
                try:
                    self._admit(who, export)
                except HubError as exc:
                    refusal = exc
                    break
                admitted.append((export, sequence))
            # Refused here, an export too large for the store (alone or merged) changes nothing.
            fitted = fit([e for e, _ in admitted], self._plan, self._limits)
            if fitted.refusal is not None:
                admitted, refusal = admitted[: fitted.kept], fitted.refusal
            latest, batch, revision = fitted.planned.latest, fitted.planned.batch, 0
            if batch is not None:
                revision = await self._commit_and_publish_batch(batch, answered=set(latest))
            responses = []
            for export, sequence in admitted:
                stored = self.index.exports.get(export.export_name)
                status = stored.status if stored is not None else pb.ExportStatus()
                written = revision if export.export_name in latest else 0
                responses.append(
                    pb.ExportResponse(
                        sequence=sequence, export_name=export.export_name, status=status, revision=written
                    )
                )
            return responses, refusal

    def _plan(self, exports: Sequence[pb.ResourceExport]) -> Planned:
        """What upserting the admitted exports writes (nothing is written: hub.engine.fit)."""
        latest = self._to_write(exports)
        batch = self._regroup(deleted=set(), put=list(latest.values())) if latest else None
        return Planned(latest, batch)

    def _to_write(self, exports: Sequence[pb.ResourceExport]) -> dict[str, pb.ResourceExport]:
        """The admitted exports as stored, by name, leaving out those back to what is stored."""
        latest: dict[str, pb.ResourceExport] = {}
        for export in exports:
            existing = self.index.exports.get(export.export_name)
            if existing is not None and _same_payload(existing, export):
                latest.pop(export.export_name, None)  # back to what is stored: nothing to write
                continue
            new = pb.ResourceExport()
            new.CopyFrom(export)
            new.ClearField("status")
            if existing is not None:
                new.create_time.CopyFrom(existing.create_time)
            else:
                new.create_time.FromDatetime(self._clock())
            latest[export.export_name] = new
        return latest

    @staticmethod
    def _check_immutable(existing: pb.ResourceExport, export: pb.ResourceExport) -> None:
        for field_name in ("cluster_id", "namespace", "name"):
            if getattr(existing, field_name) != getattr(export, field_name):
                raise InvalidRequest(f"{field_name} of export {quote(export.export_name)} is immutable")
        if existing.WhichOneof("payload") != export.WhichOneof("payload"):
            raise InvalidRequest(f"kind of export {quote(export.export_name)} is immutable")

    async def delete(self, who: Identity, export_name: str, sequence: int = 0) -> pb.ExportResponse:
        if not export_name:
            raise InvalidRequest("delete needs an export name")
        if not who.admin and not export_name.startswith(who.cluster_id + "-"):
            # Every name a member may export starts with its ID (and no member ID is a
            # dash-prefix of another's): this one is not the caller's, whether it exists or not.
            raise Forbidden(f"export name {quote(export_name)} is not derived from cluster {quote(who.cluster_id)}")
        async with self._lock:
            existing = self.index.exports.get(export_name)
            if existing is None:
                return pb.ExportResponse(
                    sequence=sequence,
                    export_name=export_name,
                    status=pb.ExportStatus(verdict=pb.VERDICT_DELETED, message="no such export"),
                )
            owner = owner_of(existing)
            if owner != self._owner(who):
                raise Forbidden(f"export {quote(export_name)} belongs to {describe_owner(owner)}, not {who.describe()}")
            batch = self._regroup_deletes({export_name}, f"deleting export {quote(export_name)}")
            return await self._commit_and_publish(batch, answer_for=(who, export_name, sequence))

    async def sweep(self, who: Identity, keep: set[str], sequence: int = 0) -> pb.ExportResponse:
        """End of a sync bracket: delete what the caller owns but did not mention."""
        async with self._lock:
            stale = self.index.owned_by(who.cluster_id, admin=who.admin) - keep
            response = pb.ExportResponse(sequence=sequence, sync_end=pb.SyncEndAck(deleted=sorted(stale)))
            if stale:
                exports = "export" if len(stale) == 1 else "exports"
                batch = self._regroup_deletes(stale, f"deleting the {len(stale)} {exports} the sync did not mention")
                response.revision = await self._commit_and_publish_batch(batch)
                log.info("sync swept stale exports", extra={"owner": who.describe(), "count": len(stale)})
            return response

    # ---- import status -------------------------------------------------------

    def report_import_status(self, who: Identity, req: pb.ReportImportStatusRequest) -> None:
        self._check_reporter(who, req.cluster_id)
        status = pb.ImportStatus(
            import_name=req.import_name, succeeded=req.succeeded, reason=req.reason, message=req.message
        )
        record_reports(self.import_status, self.index.imports, req.cluster_id, [status], self._clock())

    def report_import_statuses(self, who: Identity, req: pb.ReportImportStatusesRequest) -> None:
        self._check_reporter(who, req.cluster_id)
        record_reports(self.import_status, self.index.imports, req.cluster_id, req.statuses, self._clock())

    @staticmethod
    def _check_reporter(who: Identity, cluster_id: str) -> None:
        if who.admin or cluster_id != who.cluster_id:
            raise Forbidden(f"token belongs to {who.describe()}, not cluster {quote(cluster_id)}")

    # ---- internals -----------------------------------------------------------

    def _regroup(self, *, deleted: set[str], put: list[pb.ResourceExport]) -> WriteBatch:
        return regroup(self.index, self._merge, deleted=deleted, put=put)

    def _regroup_deletes(self, deleted: set[str], cause: str) -> WriteBatch:
        """The write of deleting these exports; TooLarge (`cause` refused) if a record it puts
        does not fit: a delete can let skipped exports join (hub.engine.fit)."""
        batch = self._regroup(deleted=deleted, put=[])
        self._refuse_misfit(batch, cause)
        return batch

    def _refuse_misfit(self, batch: WriteBatch, cause: str) -> None:
        """TooLarge (`cause` refused) when a record the batch puts does not fit the store."""
        oversize = self._limits.first_misfit(batch)
        if oversize is not None:
            raise refusal(cause, oversize)

    async def _commit(self, batch: WriteBatch) -> int:
        return await _to_the_end(self._commit_now(batch))

    async def _commit_now(self, batch: WriteBatch) -> int:
        revision = await self._store.commit(batch)
        self.index.apply(batch)
        self.revision, self.watch_revision = revision, self._store.watch_revision
        self.import_status.forget(batch)
        return revision

    async def _commit_and_publish_batch(
        self, batch: WriteBatch, answered: frozenset[str] | set[str] = frozenset()
    ) -> int:
        return await _to_the_end(self._commit_and_publish_now(batch, answered))

    async def _commit_and_publish_now(self, batch: WriteBatch, answered: frozenset[str] | set[str]) -> int:
        previous = {e.export_name: self.index.exports.get(e.export_name) for e in batch.put_exports}
        revision = await self._commit_now(batch)
        changes = [ImportChange(revision, imp.import_name, imp) for imp in batch.put_imports]
        changes += [ImportChange(revision, name, None) for name in batch.delete_imports]
        if changes:
            self.imports_bus.publish(ImportBatch(revision, changes, self.epoch))
        self._announce_verdicts((e for e in batch.put_exports if e.export_name not in answered), previous, revision)
        return revision

    def _announce_verdicts(
        self,
        exports: Iterable[pb.ResourceExport],
        previous: dict[str, pb.ResourceExport | None],
        revision: int,
    ) -> None:
        """Tell owners whose verdict changed although they asked nothing."""
        for export in exports:
            before = previous.get(export.export_name)
            if before is None or before.status == export.status:
                continue
            self.verdicts_bus.publish(
                pb.ExportResponse(export_name=export.export_name, status=export.status, revision=revision),
                owner_of(export),
            )

    async def _commit_and_publish(
        self, batch: WriteBatch, answer_for: tuple[Identity, str, int] | None
    ) -> pb.ExportResponse:
        revision = await self._commit_and_publish_batch(batch, {answer_for[1]} if answer_for else set())
        if answer_for is None:
            return pb.ExportResponse(revision=revision)
        _, name, sequence = answer_for
        export = self.index.exports.get(name)
        status = export.status if export is not None else pb.ExportStatus(verdict=pb.VERDICT_DELETED)
        return pb.ExportResponse(sequence=sequence, export_name=name, status=status, revision=revision)
