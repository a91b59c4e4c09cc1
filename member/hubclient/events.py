"""What the session tells the member about its imports, in the order it must apply them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from mcapi.mchub.v1 import common_area_pb2 as pb


@dataclass(frozen=True)
class WatchPosition:
    """Where an import watch resumes: the hub's epoch and the last revision fully applied.

    Persist it (e.g. in an annotation) with the names of the imports applied, and pass both
    to a new session: after a restart it resumes with exactly the missed changes.
    """

    epoch: str = ""
    revision: int = 0


@dataclass(frozen=True)
class Upsert:
    """Create or update the local objects of this import."""

    resource: pb.ResourceImport

    @property
    def import_name(self) -> str:
        return self.resource.import_name


@dataclass(frozen=True)
class Delete:
    """Delete the local objects of this import."""

    import_name: str


@dataclass(frozen=True)
class Synced:
    """A snapshot ended: `names` is every import the hub has for this member.

    `stale_names` are imports the session delivered before (or was told of at start) that
    the snapshot did not contain: delete them. When the session knew nothing of what the
    member holds, `stale_names` is empty and the member compares its own objects with `names`.
    """

    reason: pb.SyncedReason.ValueType
    names: frozenset[str]
    stale_names: frozenset[str]


@dataclass(frozen=True)
class Resumed:
    """The watch continues where it left off: no snapshot follows, only missed changes."""


ImportEvent = Upsert | Delete | Synced | Resumed

# Applies one event and returns; returning is the acknowledgement. Raising means "not applied":
# the session restarts the watch from its last position after a backoff and delivers it again.
ImportConsumer = Callable[[ImportEvent], Awaitable[None]]
