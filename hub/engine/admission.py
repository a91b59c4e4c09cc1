"""Admission: which exports a caller may write, and what writing them does.

An export is let in when it is valid (hub.merge.validate), the caller may write it (a member
its own kinds under names derived from its cluster ID, once it announced; the admin only
AntreaClusterNetworkPolicy), it does not take over another owner's export, and it keeps what
is immutable. What the admitted exports write is the merge of every group they touch
(hub.merge.regroup), held to the limits of the store and of members' watches
(hub.engine.fit); then the ledger commits and publishes it. Deletes, the end of a sync
bracket and a member's removal re-merge the same way.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, replace

from google.protobuf.timestamp_pb2 import Timestamp

from hub.auth.identity import Identity
from hub.config import HubConfig
from hub.engine.clock import Clock
from hub.engine.ending import Ending
from hub.engine.fit import Planned, RecordLimits, fit, refusal
from hub.engine.ledger import Ledger
from hub.engine.selection import MemberProperties
from hub.errors import Forbidden, HubError, InvalidRequest, NotJoined, quote
from hub.merge import GroupKey, MergeConfig, MergeContext, expected_export_name, validate_export
from hub.merge.ownership import ADMIN_OWNER, describe_owner, is_admin_export, owner_of
from hub.merge.regroup import regroup
from hub.store.base import WriteBatch
from mcapi.mchub.v1 import common_area_pb2 as pb

log = logging.getLogger(__name__)

# A refusal lists at most this many of an export's problems (and counts the rest).
_PROBLEMS_SHOWN = 8


@dataclass(frozen=True)
class Admitted:
    """What an upsert of several exports did: the answer of each export admitted, the refusal of
    the one after them (None: all were), and the revision to wait for before answering."""

    responses: list[pb.ExportResponse]
    refusal: HubError | None
    revision: int


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


def _owner(who: Identity) -> str:
    """The owner key of what this identity writes (hub.merge.ownership)."""
    return ADMIN_OWNER if who.admin else who.cluster_id


def _check_immutable(existing: pb.ResourceExport, export: pb.ResourceExport) -> None:
    for field_name in ("cluster_id", "namespace", "name"):
        if getattr(existing, field_name) != getattr(export, field_name):
            raise InvalidRequest(f"{field_name} of export {quote(export.export_name)} is immutable")
    if existing.WhichOneof("payload") != export.WhichOneof("payload"):
        raise InvalidRequest(f"kind of export {quote(export.export_name)} is immutable")


class Admission:
    def __init__(self, ledger: Ledger, ending: Ending, settings: Callable[[], HubConfig], clock: Clock) -> None:
        self._ledger = ledger
        self._ending = ending
        # The configuration now: the ClusterSet and leader IDs may come from the leader's CR later.
        self._settings = settings
        self._clock = clock
        config = settings()
        merge_config = MergeConfig(strict_ports=config.strict_ports, global_cidr=config.global_addressing)
        self._merge = MergeContext(config=merge_config, used_label_ids=set())
        self._limits = RecordLimits(ledger.store, config.max_message_bytes)

    # ---- upserts -------------------------------------------------------------

    async def upsert_many(
        self, who: Identity, items: list[tuple[pb.ResourceExport, int]]
    ) -> tuple[list[pb.ExportResponse], HubError | None]:
        """Upsert several exports as ONE durable write, answering each (admit_many, once durable)."""
        admitted = await self.admit_many(who, items)
        await self._ledger.published(admitted.revision)
        return admitted.responses, admitted.refusal

    async def admit_many(self, who: Identity, items: list[tuple[pb.ResourceExport, int]]) -> Admitted:
        """Upsert several exports as ONE write, answering each; the answers may be sent once
        `published(revision)` returned. Meanwhile the next write can be decided (hub.engine.ledger).

        Items are admitted in order; at the first one refused, those before it
        are still written and answered and the refusal is returned beside
        their answers (the rest are not looked at), so a bad item changes
        nothing but itself.
        """
        ledger = self._ledger
        async with ledger.lock:
            refusal: HubError | None = self._ending.refusal()
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
                revision = await ledger.write(batch, answered=set(latest))
            # The verdicts the write gave, and the stored ones of exports it left as they were.
            written_status = {e.export_name: e.status for e in batch.put_exports} if batch is not None else {}
            responses = []
            for export, sequence in admitted:
                status = written_status.get(export.export_name)
                if status is None:
                    stored = ledger.index.exports.get(export.export_name)
                    status = stored.status if stored is not None else pb.ExportStatus()
                written = revision if export.export_name in latest else 0
                responses.append(
                    pb.ExportResponse(
                        sequence=sequence, export_name=export.export_name, status=status, revision=written
                    )
                )
            # The answers tell what the index holds, which may be an earlier write not durable yet.
            return Admitted(responses, refusal, ledger.revision)

    def _as_written_by(self, who: Identity, export: pb.ResourceExport) -> pb.ResourceExport:
        """The export as stored: an admin's policy that names no cluster carries the leader's ID."""
        if not who.admin or export.cluster_id:
            return export
        filled = pb.ResourceExport()
        filled.CopyFrom(export)
        filled.cluster_id = self._settings().leader_cluster_id
        return filled

    def _admit(self, who: Identity, export: pb.ResourceExport) -> None:
        problems = validate_export(export)
        if problems:
            raise InvalidRequest(_problems_text(problems))
        self._authorize(who, export)
        self._check_global_addresses(export)
        existing = self._ledger.index.exports.get(export.export_name)
        if existing is not None:
            owner = owner_of(existing)
            if owner != _owner(who):
                raise Forbidden(
                    f"export {quote(export.export_name)} belongs to {describe_owner(owner)}; "
                    f"{who.describe()} cannot overwrite it"
                )
            _check_immutable(existing, export)

    def _authorize(self, who: Identity, export: pb.ResourceExport) -> None:
        if who.admin:
            if not is_admin_export(export):
                raise Forbidden("the admin exports only AntreaClusterNetworkPolicy; members export the rest")
            # A policy applies to every member and is the admin's whatever its body says; a
            # clusterID naming a member would read as "this member's" (or "only for this
            # member"), so it is refused rather than silently rewritten.
            leader = self._settings().leader_cluster_id
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
        if who.cluster_id not in self._ledger.index.members:
            raise NotJoined(f"cluster {quote(who.cluster_id)} must announce before it exports")

    def _check_global_addresses(self, export: pb.ResourceExport) -> None:
        """A member's endpoints may carry global addresses of its own block only: another block's
        would draw other members' traffic for that member's Services to this one."""
        if export.WhichOneof("payload") != "endpoints":
            return
        given = {a.global_ip for s in export.endpoints.subsets for a in s.addresses if a.global_ip}
        if not given:
            return
        member = self._ledger.index.members.get(export.cluster_id)
        block = member.global_cidr if member is not None else ""
        outside = sorted(ip for ip in given if not block or ipaddress.ip_address(ip) not in ipaddress.ip_network(block))
        if outside:
            held = f"its global block {block}" if block else "no global block"
            raise InvalidRequest(
                f"export {quote(export.export_name)} gives global addresses {quote(', '.join(outside))} outside "
                f"cluster {quote(export.cluster_id)}'s: it holds {held}"
            )

    def _plan(self, exports: Sequence[pb.ResourceExport]) -> Planned:
        """What upserting the admitted exports writes (nothing is written: hub.engine.fit)."""
        latest = self._to_write(exports)
        batch = self.regroup(deleted=set(), put=list(latest.values())) if latest else None
        return Planned(latest, batch)

    def _to_write(self, exports: Sequence[pb.ResourceExport]) -> dict[str, pb.ResourceExport]:
        """The admitted exports as stored, by name, leaving out those back to what is stored."""
        latest: dict[str, pb.ResourceExport] = {}
        # One creation time for the call's new exports, converted once (FromDatetime is slow).
        now = Timestamp()
        now.FromDatetime(self._clock())
        for export in exports:
            existing = self._ledger.index.exports.get(export.export_name)
            if existing is not None and _same_payload(existing, export):
                latest.pop(export.export_name, None)  # back to what is stored: nothing to write
                continue
            new = pb.ResourceExport()
            new.CopyFrom(export)
            new.ClearField("status")
            if existing is not None:
                new.create_time.CopyFrom(existing.create_time)
            else:
                new.create_time.CopyFrom(now)
            latest[export.export_name] = new
        return latest

    # ---- deletes -------------------------------------------------------------

    async def delete(self, who: Identity, export_name: str, sequence: int = 0) -> pb.ExportResponse:
        if not export_name:
            raise InvalidRequest("delete needs an export name")
        if not who.admin and not export_name.startswith(who.cluster_id + "-"):
            # Every name a member may export starts with its ID (and no member ID is a
            # dash-prefix of another's): this one is not the caller's, whether it exists or not.
            raise Forbidden(f"export name {quote(export_name)} is not derived from cluster {quote(who.cluster_id)}")
        ledger = self._ledger
        async with ledger.lock:
            existing = ledger.index.exports.get(export_name)
            if existing is None:
                return pb.ExportResponse(
                    sequence=sequence,
                    export_name=export_name,
                    status=pb.ExportStatus(verdict=pb.VERDICT_DELETED, message="no such export"),
                )
            owner = owner_of(existing)
            if owner != _owner(who):
                raise Forbidden(f"export {quote(export_name)} belongs to {describe_owner(owner)}, not {who.describe()}")
            batch = self._regroup_deletes({export_name}, f"deleting export {quote(export_name)}")
            revision = await ledger.commit_and_publish(batch, {export_name})
            stored = ledger.index.exports.get(export_name)
            status = stored.status if stored is not None else pb.ExportStatus(verdict=pb.VERDICT_DELETED)
            return pb.ExportResponse(sequence=sequence, export_name=export_name, status=status, revision=revision)

    async def sweep(self, who: Identity, keep: set[str], sequence: int = 0) -> pb.ExportResponse:
        """End of a sync bracket: delete what the caller owns but did not mention."""
        ledger = self._ledger
        async with ledger.lock:
            stale = ledger.index.owned_by(who.cluster_id, admin=who.admin) - keep
            response = pb.ExportResponse(sequence=sequence, sync_end=pb.SyncEndAck(deleted=sorted(stale)))
            if stale:
                exports = "export" if len(stale) == 1 else "exports"
                batch = self._regroup_deletes(stale, f"deleting the {len(stale)} {exports} the sync did not mention")
                response.revision = await ledger.commit_and_publish(batch)
                log.info("sync swept stale exports", extra={"owner": who.describe(), "count": len(stale)})
            return response

    # ---- re-merging ----------------------------------------------------------

    def regroup(
        self,
        *,
        deleted: set[str],
        put: list[pb.ResourceExport],
        also: Collection[GroupKey] = (),
        members: Mapping[str, Mapping[str, str]] | None = None,
        blocks: Mapping[str, str] | None = None,
    ) -> WriteBatch:
        """The write of a change of exports, or of the members' global blocks (nothing is written:
        hub.merge.regroup); ``also``: groups to merge again whose exports did not change,
        ``members``: every member's ClusterProperties as they will be (by default, as the member
        records hold them now)."""
        index = self._ledger.index
        merge = replace(
            self._merge, member_properties=members if members is not None else MemberProperties(index.members)
        )
        return regroup(index, merge, deleted=deleted, put=put, also=also, blocks=blocks)

    @property
    def merge(self) -> MergeContext:
        return self._merge

    def _regroup_deletes(self, deleted: set[str], cause: str) -> WriteBatch:
        """The write of deleting these exports; TooLarge (`cause` refused) if a record it puts
        does not fit: a delete can let skipped exports join (hub.engine.fit)."""
        batch = self.regroup(deleted=deleted, put=[])
        self.refuse_misfit(batch, cause)
        return batch

    def refuse_misfit(self, batch: WriteBatch, cause: str) -> None:
        """TooLarge (`cause` refused) when a record the batch puts does not fit the store."""
        oversize = self._limits.first_misfit(batch)
        if oversize is not None:
            raise refusal(cause, oversize)
