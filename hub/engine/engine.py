"""The Engine: the hub's decisions, as every face of the hub (gRPC, REST, kubectl) asks for them.

A write goes: admitted (hub.engine.admission: who may write what, and what writing it
merges into), committed and published (hub.engine.ledger: the store first, then the index,
then watchers and owners), one writer at a time. Members join and go through
hub.engine.membership; the ClusterSet's end is held and carried out by hub.engine.ending;
what members report about applying imports is kept in hub.engine.reports.

The engine's state is its parts': read through the properties below, changed only through
the methods. A replica that follows the leader runs an engine whose store refuses writes and
moves it along the leader's history (`rebase`, `advance`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Generic, Never, TypeVar, cast, overload

from hub.auth.identity import Identity
from hub.config import HubConfig
from hub.engine.admission import Admission, Admitted
from hub.engine.clock import Clock, utc_now
from hub.engine.ending import ClusterSetEnd, Ending
from hub.engine.index import Index
from hub.engine.ledger import Advance, Ledger
from hub.engine.membership import MemberRemoval, Membership
from hub.engine.reports import ImportStatusBook, record_reports
from hub.errors import HubError
from hub.merge.global_addressing import AddressingReport, report
from hub.merge.grouping import GROUP_CLUSTER_INFO
from hub.merge.ordering import oldest_first
from hub.store.base import Snapshot, Store
from hub.watch.batches import ImportBatch
from hub.watch.bus import Bus
from mcapi.mchub.v1 import common_area_pb2 as pb

T = TypeVar("T")


class _Committed(Generic[T]):
    """A read-only attribute of the engine: its ledger's field of the same name."""

    def __set_name__(self, owner: type[Engine], name: str) -> None:
        self._name = name

    @overload
    def __get__(self, engine: None, owner: type[Engine]) -> _Committed[T]: ...

    @overload
    def __get__(self, engine: Engine, owner: type[Engine] | None = None) -> T: ...

    def __get__(self, engine: Engine | None, owner: type[Engine] | None = None) -> T | _Committed[T]:
        if engine is None:
            return self
        return cast(T, getattr(engine._ledger, self._name))

    def __set__(self, engine: Engine, value: Never) -> None:
        raise AttributeError(f"the engine's {self._name} changes only through its methods")


class Engine:
    def __init__(self, store: Store, config: HubConfig, clock: Clock = utc_now) -> None:
        self._config = config
        self._clock = clock
        self._reports = ImportStatusBook()
        self._ledger = Ledger(store, config.watch_queue_limit, self._reports)
        self._ending = Ending(self._ledger)
        self._admission = Admission(self._ledger, self._ending, self._settings, clock)
        self._membership = Membership(self._ledger, self._admission, self._ending, self._settings, clock)

    def _settings(self) -> HubConfig:
        return self._config

    def configure(self, config: HubConfig) -> None:
        """The ClusterSet and leader IDs changed: they came from the leader's ClusterSet CR."""
        self._config = config

    async def start(self) -> None:
        """Open the store and serve what it holds."""
        await self._ledger.load()

    # ---- what it holds (the ledger's, read-only) ---------------------------------

    store = _Committed[Store]()
    index = _Committed[Index]()
    revision = _Committed[int]()
    # The revision of a snapshot of the index (Store.watch_revision): tell it only once
    # `published(revision)` returned.
    watch_revision = _Committed[int]()
    # The watch revision every change up to which was published (bookmarks).
    published_revision = _Committed[int]()
    epoch = _Committed[str]()
    # Every commit's import changes, to every watch (topic "").
    imports_bus = _Committed[Bus[ImportBatch]]()
    # Verdicts nobody asked for, by owner (a cluster ID, or ADMIN_OWNER for the admin).
    verdicts_bus = _Committed[Bus[pb.ExportResponse]]()

    @property
    def import_status(self) -> ImportStatusBook:
        return self._reports

    @property
    def ended(self) -> str:
        """Why the ClusterSet ended ("" while it is served): until it is made again, members are refused."""
        return self._ending.reason

    async def published(self, revision: int) -> None:
        """Until every write up to `revision` is durable and published (hub.engine.ledger): what
        reads the index to tell a member (a snapshot) waits for it."""
        await self._ledger.published(revision)

    def global_addressing(self) -> AddressingReport:
        """Every member's global block and verdict as the store holds them now, and the
        overlaps and conflicts behind them (hub.merge.global_addressing)."""
        index = self.index
        infos: dict[str, pb.ClusterInfo] = {}
        for key, names in index.groups.items():
            if key[0] == GROUP_CLUSTER_INFO and names:
                source = oldest_first(index.exports[n] for n in names)[0]
                infos[source.cluster_id] = source.cluster_info
        blocks = {cid: m.global_cidr for cid, m in index.members.items()}
        return report(infos, blocks, self._config.global_addressing)

    def close_watches(self) -> None:
        """End every watch and Export stream (they resume wherever they reconnect)."""
        self._ledger.close()

    # ---- members ---------------------------------------------------------------

    async def announce(self, who: Identity, req: pb.AnnounceRequest) -> pb.AnnounceResponse:
        return await self._membership.announce(who, req)

    async def leave(self, who: Identity, req: pb.LeaveRequest) -> pb.LeaveResponse:
        return await self._membership.leave(who, req)

    def removal_plan(self, cluster_id: str) -> MemberRemoval:
        return self._membership.removal_plan(cluster_id)

    async def remove_member(self, cluster_id: str, reason: str) -> MemberRemoval | None:
        """Remove a member's announce and every export it made (hub.engine.membership)."""
        return await self._membership.remove(cluster_id, reason)

    # ---- exports ---------------------------------------------------------------

    async def upsert(self, who: Identity, export: pb.ResourceExport, sequence: int = 0) -> pb.ExportResponse:
        responses, refusal = await self.upsert_many(who, [(export, sequence)])
        if refusal is not None:
            raise refusal
        return responses[0]

    async def upsert_many(
        self, who: Identity, items: list[tuple[pb.ResourceExport, int]]
    ) -> tuple[list[pb.ExportResponse], HubError | None]:
        """Upsert several exports as one durable write (hub.engine.admission)."""
        return await self._admission.upsert_many(who, items)

    async def admit_many(self, who: Identity, items: list[tuple[pb.ResourceExport, int]]) -> Admitted:
        """upsert_many without waiting for durability: answer once `published(revision)` returned."""
        return await self._admission.admit_many(who, items)

    async def delete(self, who: Identity, export_name: str, sequence: int = 0) -> pb.ExportResponse:
        return await self._admission.delete(who, export_name, sequence)

    async def sweep(self, who: Identity, keep: set[str], sequence: int = 0) -> pb.ExportResponse:
        """End of a sync bracket: delete what the caller owns but did not mention."""
        return await self._admission.sweep(who, keep, sequence)

    # ---- import status -----------------------------------------------------------

    def report_import_statuses(self, who: Identity, cluster_id: str, statuses: Sequence[pb.ImportStatus]) -> None:
        """What member `cluster_id` (the caller) said about applying its imports (hub.engine.reports)."""
        record_reports(self._reports, self.index.imports, who, cluster_id, statuses, now=self._clock())

    # ---- the ClusterSet's end ------------------------------------------------------

    def end_plan(self) -> ClusterSetEnd:
        """What end_clusterset would delete now: every announce, export and import."""
        return self._ending.plan()

    async def end_clusterset(self, reason: str) -> ClusterSetEnd:
        """Refuse members from now on (with `reason`) and delete everything (hub.engine.ending)."""
        return await self._ending.end(reason)

    def adopt_end(self, reason: str) -> None:
        """The ClusterSet's end as the leader's ClusterSet CR tells it ("" while it stands):
        refuse or admit members from now on, deleting nothing (hub.engine.ending)."""
        self._ending.adopt(reason)

    def reopen(self) -> None:
        """A new ClusterSet of the same ID was made: members are admitted again."""
        self._ending.adopt("")

    # ---- a follower's history --------------------------------------------------------

    def rebase(self, snap: Snapshot) -> None:
        """Hold `snap` from here on; open watches resume (hub.replicas.follower)."""
        self._ledger.rebase(snap)

    def advance(self, step: Advance) -> None:
        """The leader's next revision, whole (hub.replicas.follower)."""
        self._ledger.advance(step)
