"""The store contract every backend (sqlite, kube) implements.

The hub keeps its working index in memory and writes through a Store. A
Store owns three facts the wire depends on:

- durability: `commit` returns only when the batch survives a crash (the
  hub sends verdicts after `commit` returns);
- a global revision, bumped once per committed batch, and a change log of
  imports keyed by it, so a watcher can resume;
- an epoch naming the history revisions belong to. A backend whose change log
  survives restarts (sqlite) keeps its epoch; one that rebuilds its index from
  scratch (kube) starts a new epoch, and resuming watchers get a snapshot.
"""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from datetime import datetime

from mcapi.mchub.v1 import common_area_pb2 as pb


class StoreError(Exception):
    """Base of the store's typed errors."""


class EpochMismatch(StoreError):
    """The watcher's epoch is not this store's: its revisions mean nothing here."""

    def __init__(self, asked: str, current: str) -> None:
        super().__init__(f"epoch {asked!r} is not the store's epoch {current!r}")
        self.asked = asked
        self.current = current


class RevisionCompacted(StoreError):
    """The changes after `asked` were compacted away; the oldest kept is `oldest`."""

    def __init__(self, asked: int, oldest: int) -> None:
        super().__init__(
            f"revision {asked} is too old: changes before revision {oldest} were compacted; take a fresh snapshot"
        )
        self.asked = asked
        self.oldest = oldest


class RevisionInFuture(StoreError):
    """The watcher claims a revision this store never reached."""

    def __init__(self, asked: int, current: int) -> None:
        super().__init__(f"revision {asked} is newer than the store's revision {current}")
        self.asked = asked
        self.current = current


def check_resumable(epoch: str, revision: int, *, held_epoch: str, held_revision: int, compacted_through: int) -> None:
    """Whether the changes after `revision` of `epoch` can be given exactly from a change log of
    `held_epoch` up to `held_revision`, compacted through `compacted_through`; raises why not."""
    if epoch != held_epoch:
        raise EpochMismatch(epoch, held_epoch)
    if revision > held_revision:
        raise RevisionInFuture(revision, held_revision)
    if revision < compacted_through:
        raise RevisionCompacted(revision, compacted_through)


@dataclass(frozen=True)
class ClusterInventory:
    """What a member says of its cluster in its announces (KEP-2149 and KEP-4322's inputs).

    cluster_uid: who the cluster is, whatever ID it claims ("" from an older member);
    kubernetes_version: its API server's version; properties: its ClusterProperties, sorted
    (name, value) pairs; control_plane_healthy: its API server's /readyz as the member found it
    (None: not checked), control_plane_message: why not healthy.
    """

    cluster_uid: str = ""
    kubernetes_version: str = ""
    properties: tuple[tuple[str, str], ...] = ()
    control_plane_healthy: bool | None = None
    control_plane_message: str = ""

    @property
    def property_map(self) -> dict[str, str]:
        return dict(self.properties)


@dataclass(frozen=True)
class MemberRecord:
    """What the hub knows of a member (Antrea's MemberClusterAnnounce)."""

    cluster_id: str
    cluster_set_id: str
    leader_cluster_id: str
    # UTC, timezone-aware.
    joined: datetime
    last_heartbeat: datetime
    # What the member says of its cluster and the block the hub gives it, by keyword only: given
    # by position, one would silently land in the other's place.
    _: KW_ONLY
    inventory: ClusterInventory = field(default_factory=ClusterInventory)
    # The member's block of the ClusterSet's global CIDR ("" when none: hub.merge.global_addressing).
    global_cidr: str = ""


@dataclass(frozen=True)
class ImportChange:
    """One entry of the import change log: an upsert (resource set) or a delete."""

    revision: int
    import_name: str
    resource: pb.ResourceImport | None


@dataclass
class WriteBatch:
    """Everything one hub decision changes; committed atomically as one revision."""

    put_exports: list[pb.ResourceExport] = field(default_factory=list)
    delete_exports: list[str] = field(default_factory=list)
    put_imports: list[pb.ResourceImport] = field(default_factory=list)
    delete_imports: list[str] = field(default_factory=list)
    put_members: list[MemberRecord] = field(default_factory=list)
    delete_members: list[str] = field(default_factory=list)

    def is_empty(self) -> bool:
        return not (
            self.put_exports
            or self.delete_exports
            or self.put_imports
            or self.delete_imports
            or self.put_members
            or self.delete_members
        )


@dataclass(frozen=True)
class StoreCounts:
    """What a store did since it opened, in counts that do not vary with load."""

    transactions: int
    statements: int
    syncs: int  # fsyncs that made commits durable (one may serve many transactions)


@dataclass(frozen=True)
class Snapshot:
    """The whole durable state at one revision."""

    epoch: str
    revision: int
    exports: dict[str, pb.ResourceExport]
    imports: dict[str, pb.ResourceImport]
    members: dict[str, MemberRecord]


class Store(abc.ABC):
    """A durable home for exports, imports and members. See the module doc."""

    @property
    @abc.abstractmethod
    def epoch(self) -> str:
        """The history this store's revisions belong to (valid after open)."""

    @property
    @abc.abstractmethod
    def revision(self) -> int:
        """The revision of the last committed batch (0 for an empty store)."""

    @property
    def max_record_bytes(self) -> int | None:
        """The largest export or import this store can hold, as record_bytes() measures it;
        None when it has no limit of its own. A batch holding a larger record fails whole, so
        the hub refuses the export that would make one before it commits (hub.engine.fit)."""
        return None

    def record_bytes(self, record: pb.ResourceExport | pb.ResourceImport) -> int:
        """How large `record` is as this store keeps it; by default its protobuf encoding."""
        return record.ByteSize()

    @property
    def watch_revision(self) -> int:
        """The revision watchers are told in snapshots and bookmarks: by default every revision;
        a store whose followers learn only import changes (kube) says its last import change."""
        return self.revision

    @abc.abstractmethod
    async def open(self) -> Snapshot:
        """Open (creating when absent) and return the current state."""

    @abc.abstractmethod
    async def close(self) -> None:
        """Release the store; idempotent."""

    @abc.abstractmethod
    async def commit(self, batch: WriteBatch) -> int:
        """Apply the batch atomically and durably; return its new revision.

        Deleting a name that does not exist is not an error. An import put or
        deleted is appended to the change log at the new revision. An empty
        batch writes nothing and returns the current revision.
        """

    # ---- commits in two steps (stores that can: `stages`) ------------------------------------
    #
    # `stage` commits at once, visibly to the store's readers, and `synced` waits until that
    # commit is durable: a store that makes many commits durable with one fsync (sqlite) lets
    # the hub commit the next write while the last one syncs. Nothing a staged commit wrote may
    # be told to anyone before `synced` returned for its revision.

    @property
    def stages(self) -> bool:
        """Whether this store commits in two steps (`stage`, then `synced`); else only `commit`."""
        return False

    def stage(self, batch: WriteBatch) -> int:
        """Apply the batch atomically now, not yet durably; return its new revision (as `commit`)."""
        raise NotImplementedError(f"{type(self).__name__} commits in one step: use commit")

    async def synced(self, revision: int) -> None:
        """Until every commit up to `revision` is durable (at once for a store that does not stage)."""
        return None

    @property
    def durable_revision(self) -> int:
        """The newest revision known durable."""
        return self.revision

    def watch_durable(self, listener: Callable[[int], None]) -> None:
        """Have `listener(revision)` called on the event loop each time `durable_revision` moves
        (a store that does not stage never calls it: its commits are durable when they return)."""
        return None

    def counts(self) -> StoreCounts | None:
        """Transactions, statements and fsyncs since open (None: this store does not count them)."""
        return None

    @abc.abstractmethod
    async def snapshot(self) -> Snapshot:
        """The current state, read consistently."""

    @abc.abstractmethod
    async def import_changes_since(self, epoch: str, revision: int) -> list[ImportChange]:
        """Import changes with revision > `revision`, oldest first.

        Raises EpochMismatch, RevisionCompacted or RevisionInFuture when the
        changes cannot be given exactly.
        """

    @abc.abstractmethod
    async def compact(self, keep_after: int) -> None:
        """Forget change-log entries with revision <= keep_after.

        Afterwards, import_changes_since(r) for r < keep_after raises
        RevisionCompacted; r == keep_after still works.
        """
