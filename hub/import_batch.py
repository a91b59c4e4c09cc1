"""What one commit changed in imports, as published to every watcher."""

from __future__ import annotations

from dataclasses import dataclass, field

from hub.store.base import ImportChange
from mcapi.mchub.v1 import common_area_pb2 as pb


@dataclass(frozen=True)
class ImportBatch:
    revision: int
    changes: list[ImportChange]
    # The history the batch belongs to ("": the epoch of the engine that published it). A
    # follower changes its epoch in place, and a batch queued before must keep its own.
    epoch: str = ""
    # Each change as watchers see it, made once for all of them: (position, delivered to the
    # watcher) -> the upsert (delivered) or the delete (deleted, or no longer meant for that
    # member) with its size in a batch; and the same as a message of its own
    # (``hub.grpc.watch_messages``). A batched message holds copies of the changes it carries.
    made: dict[tuple[int, bool], tuple[pb.ImportChange, int]] = field(default_factory=dict, compare=False, repr=False)
    responses: dict[tuple[int, bool], pb.WatchImportsResponse] = field(default_factory=dict, compare=False, repr=False)
