"""Membership: a member joins by announcing, and leaves, or is removed, with everything it exported.

An announce is a member's heartbeat too: the hub writes its MemberClusterAnnounce with the time
(a member without one for `disconnect_after` is Disconnected). A member goes by `Leave`, or
by the operator's removal; either deletes its announce and every export it made, re-merging
the groups they were in, and ends its open Export streams so that a member still running
announces again and resends its exports rather than believing exports the hub no longer has.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from hub.auth.identity import Identity
from hub.config import HubConfig
from hub.engine.admission import Admission
from hub.engine.clock import Clock
from hub.engine.ending import Ending
from hub.engine.identity import check_cluster_id, inventory_of
from hub.engine.ledger import Ledger
from hub.engine.selection import MemberProperties, selective_groups, selects_differently
from hub.errors import Forbidden, InvalidRequest, quote
from hub.store.base import MemberRecord, WriteBatch
from mcapi import names
from mcapi.mchub.v1 import common_area_pb2 as pb

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MemberRemoval:
    """What removing a member takes (a plan: revision 0) or took: its exports and what they made."""

    cluster_id: str
    exports: list[str]
    imports_deleted: list[str]
    imports_changed: list[str]
    revision: int = 0


def _with(members: Mapping[str, MemberRecord], record: MemberRecord) -> MemberProperties:
    """Every member's properties, with ``record`` in place of (or beside) its earlier self."""
    return MemberProperties({**members, record.cluster_id: record})


class Membership:
    def __init__(
        self, ledger: Ledger, admission: Admission, ending: Ending, settings: Callable[[], HubConfig], clock: Clock
    ) -> None:
        self._ledger = ledger
        self._admission = admission
        self._ending = ending
        self._settings = settings
        self._clock = clock
        # The (global CIDR, block prefix) the ClusterInfo imports were last stamped with (None:
        # not since this hub started leading): the first announce after a change re-stamps them.
        self._stamped_with: tuple[str, int] | None = None

    async def announce(self, who: Identity, req: pb.AnnounceRequest) -> pb.AnnounceResponse:
        config = self._settings()
        if who.admin:
            raise Forbidden("the admin token cannot announce a member cluster")
        if req.cluster_id != who.cluster_id:
            raise Forbidden(f"token belongs to cluster {quote(who.cluster_id)}, not {quote(req.cluster_id)}")
        if req.cluster_set_id != config.cluster_set_id:
            ours = quote(config.cluster_set_id)
            raise InvalidRequest(f"ClusterSet {quote(req.cluster_set_id)} is not this hub's ClusterSet {ours}")
        if req.leader_cluster_id and req.leader_cluster_id != config.leader_cluster_id:
            ours = quote(config.leader_cluster_id)
            raise InvalidRequest(f"leader cluster {quote(req.leader_cluster_id)} is not this hub's leader {ours}")
        inventory = inventory_of(req)
        ledger = self._ledger
        async with ledger.lock:
            ended = self._ending.refusal()
            if ended is not None:
                raise ended
            now = self._clock()
            members = ledger.index.members
            known = members.get(who.cluster_id)
            check_cluster_id(who.cluster_id, inventory.cluster_uid, members)
            if known is None:
                for other in members:
                    if names.is_dash_prefix(other, who.cluster_id):
                        raise Forbidden(
                            f"cluster ID {quote(who.cluster_id)} and member {quote(other)} are dash-prefixes of "
                            "each other, which makes export names ambiguous; choose another cluster ID"
                        )
            record = MemberRecord(
                cluster_id=who.cluster_id,
                cluster_set_id=req.cluster_set_id,
                leader_cluster_id=config.leader_cluster_id,
                joined=known.joined if known else now,
                last_heartbeat=now,
                inventory=inventory,
                global_cidr=self._block_for(who.cluster_id, known, config),
            )
            await self._commit_announce(record, known, config)
            if known is None:
                log.info("member joined", extra={"clusterID": who.cluster_id, "globalCIDR": record.global_cidr})
            addressed = self._globally_addressed(who.cluster_id)
        return pb.AnnounceResponse(
            leader_cluster_id=config.leader_cluster_id,
            cluster_set_id=config.cluster_set_id,
            heartbeat_interval_seconds=max(1, math.ceil(config.heartbeat_interval)),
            epoch=ledger.epoch,
            global_cidr=record.global_cidr,
            globally_addressed=addressed,
        )

    # ---- global blocks (hub.merge.global_addressing) -------------------------------

    def _block_for(self, cluster_id: str, known: MemberRecord | None, config: HubConfig) -> str:
        """The member's block: the one it holds while the global CIDR still has it, else the
        lowest free one; "" without a global CIDR or when none is left."""
        global_cidr = config.global_addressing
        if global_cidr is None:
            return ""
        members = self._ledger.index.members
        taken = (m.global_cidr for cid, m in members.items() if cid != cluster_id and m.global_cidr)
        block = global_cidr.allocate(known.global_cidr if known else "", taken)
        if not block:
            log.warning("no global block left", extra={"clusterID": cluster_id, "globalCIDR": str(global_cidr)})
        return block

    async def _commit_announce(self, record: MemberRecord, known: MemberRecord | None, config: HubConfig) -> None:
        """Write the announce, with what it changes merged anew in the same revision: every
        ClusterInfo import re-stamped when it changes the member's block or the hub's global
        addressing changed since they were last stamped (a restart with another --global-cidr,
        another replica taking over); the selective exports' groups when what cluster selectors
        select for (and among) members changed."""
        ledger = self._ledger
        settings = (config.global_cidr, config.global_block_prefix)
        restamp = known is None or known.global_cidr != record.global_cidr or self._stamped_with != settings
        reselect = selects_differently(known, record)
        if not restamp and not reselect:
            await ledger.commit(WriteBatch(put_members=[record]))
            return
        blocks = None
        if restamp:
            blocks = {cid: m.global_cidr for cid, m in ledger.index.members.items()}
            blocks[record.cluster_id] = record.global_cidr
        batch = self._admission.regroup(
            deleted=set(),
            put=[],
            also=selective_groups(ledger.index) if reselect else (),
            members=_with(ledger.index.members, record),
            blocks=blocks,
        )
        batch.put_members.append(record)
        if batch.put_imports or batch.put_exports or batch.delete_imports:
            await ledger.commit_and_publish(batch)
        else:
            await ledger.commit(batch)
        if restamp:
            self._stamped_with = settings

    def _globally_addressed(self, cluster_id: str) -> bool:
        """What the member's ClusterInfo import says (what every other member was told)."""
        imp = self._ledger.index.imports.get(names.cluster_info_import_name(cluster_id))
        return imp is not None and imp.cluster_info.globally_addressed

    async def leave(self, who: Identity, req: pb.LeaveRequest) -> pb.LeaveResponse:
        """The caller leaves the ClusterSet (rpc Leave): its announce and exports go; idempotent."""
        if who.admin:
            raise Forbidden("the admin token is no member and cannot leave; remove a member with its REST DELETE")
        if not req.cluster_id:
            raise InvalidRequest("cluster_id is required")
        if req.cluster_id != who.cluster_id:
            raise Forbidden(f"token belongs to cluster {quote(who.cluster_id)}, not {quote(req.cluster_id)}")
        removal = await self.remove(who.cluster_id, f"cluster {quote(who.cluster_id)} left the ClusterSet")
        if removal is None:
            return pb.LeaveResponse(was_member=False)
        return pb.LeaveResponse(was_member=True, deleted_exports=removal.exports, revision=removal.revision)

    def removal_plan(self, cluster_id: str) -> MemberRemoval:
        """What `remove` would delete and change now (nothing is written)."""
        return self._removal(cluster_id)[0]

    def _removal(self, cluster_id: str) -> tuple[MemberRemoval, WriteBatch]:
        """The removal's plan, and the write that deletes the member's exports (and merges the
        selective imports again without it: it imports nothing any more)."""
        index = self._ledger.index
        owned = index.owned_by(cluster_id, admin=False)
        also = selective_groups(index) if cluster_id in index.members else set()
        batch = self._admission.regroup(
            deleted=owned, put=[], also=also, members=MemberProperties(index.members, without=cluster_id)
        )
        changed = sorted(i.import_name for i in batch.put_imports)
        return MemberRemoval(cluster_id, sorted(owned), sorted(batch.delete_imports), changed), batch

    async def remove(self, cluster_id: str, reason: str) -> MemberRemoval | None:
        """Remove a member's announce and every export it made, re-merging what they were part of.

        Its open Export streams end with FAILED_PRECONDITION and `reason`. None when there was
        nothing to remove.
        """
        ledger = self._ledger
        async with ledger.lock:
            plan, batch = self._removal(cluster_id)
            if cluster_id not in ledger.index.members and not plan.exports:
                return None
            self._admission.refuse_misfit(batch, f"removing member {quote(cluster_id)}")
            batch.delete_members.append(cluster_id)
            revision = await ledger.commit_and_publish(batch)
        ledger.verdicts_bus.end(cluster_id, reason)
        log.info("member removed", extra={"clusterID": cluster_id, "exports": len(plan.exports), "why": reason})
        return MemberRemoval(cluster_id, plan.exports, plan.imports_deleted, plan.imports_changed, revision)
