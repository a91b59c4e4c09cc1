"""What one commit changed in imports (ImportBatch), and a watch's changes as WatchImportsResponse messages.

The engine publishes an ImportBatch per commit to every watcher (hub.watch.bus).

Two forms. The single form sends each change alone (an upsert or a delete), as every member
reads it. The batched form, for a watcher that asked (WatchImportsRequest.batched), packs the
changes that are ready together (a snapshot's imports, the commits queued behind the one being
sent) into Changes messages of at most ``MAX_BATCH_CHANGES`` changes and ``MAX_BATCH_BYTES``,
or less when the watcher or the hub takes smaller messages (``batch_bytes``): a burst of
thousands of imports is a few messages, not one per import, for the hub, the transport and
the member alike. A change larger than a batch may be goes alone in the single form, so no
message is larger than the one import in it (the hub refuses imports that a message could not
carry).

A batched message's revision is the last revision whose changes it and the messages before it
carried in full: the watcher's resume position after applying it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from hub.store.base import ImportChange
from mcapi.delivery import delivers_to
from mcapi.mchub.v1 import common_area_pb2 as pb

# Well under the 4 MiB a member's channel takes by default.
MAX_BATCH_BYTES = 1024 * 1024
MAX_BATCH_CHANGES = 1000
# What a WatchImportsResponse adds around its import: the field's tag and length (6), the
# epoch (2 + 32 hex digits) and the revision (11), with room to spare.
WATCH_ENVELOPE_BYTES = 64


@dataclass(frozen=True)
class ImportBatch:
    """What one commit changed in imports, as published to every watcher."""

    revision: int
    changes: list[ImportChange]
    # The history the batch belongs to ("": the epoch of the engine that published it). A
    # follower changes its epoch in place, and a batch queued before must keep its own.
    epoch: str = ""
    # Each change as watchers see it, made once for all of them: (position, delivered to the
    # watcher) -> the upsert (delivered) or the delete (deleted, or no longer meant for that
    # member) with its size in a batch; and the same as a message of its own (`single_deltas`).
    # A batched message holds copies of the changes it carries.
    made: dict[tuple[int, bool], tuple[pb.ImportChange, int]] = field(default_factory=dict, compare=False, repr=False)
    responses: dict[tuple[int, bool], pb.WatchImportsResponse] = field(default_factory=dict, compare=False, repr=False)


def batch_bytes(hub_limit: int, watcher_limit: int) -> int:
    """How large a batch may be for a watcher that takes messages of ``watcher_limit`` bytes (0:
    any) from a hub that sends at most ``hub_limit``: the message around it must fit both."""
    limit = min(hub_limit, watcher_limit) if watcher_limit else hub_limit
    return max(1, min(MAX_BATCH_BYTES, limit - WATCH_ENVELOPE_BYTES))


def _change(batch: ImportBatch, n: int, audience: str | None) -> tuple[pb.ImportChange, int]:
    """Change n of the batch as this watcher must see it, and its size in a batch; made once
    for all watchers alike: the upsert (delivered to it) or the delete (deleted, or no longer
    meant for that member)."""
    change = batch.changes[n]
    imp = change.resource
    delivered = imp is not None and (audience is None or delivers_to(imp, audience))
    made = batch.made.get((n, delivered))
    if made is None:
        if delivered:
            message = pb.ImportChange(revision=batch.revision, upsert=imp)
        else:
            message = pb.ImportChange(revision=batch.revision, delete=pb.ImportDelete(import_name=change.import_name))
        made = batch.made[(n, delivered)] = (message, _entry_bytes(message.ByteSize()))
    return made


def _single(epoch: str, change: pb.ImportChange) -> pb.WatchImportsResponse:
    if change.HasField("upsert"):
        return pb.WatchImportsResponse(epoch=epoch, revision=change.revision, upsert=change.upsert)
    return pb.WatchImportsResponse(epoch=epoch, revision=change.revision, delete=change.delete)


def single_deltas(batch: ImportBatch, epoch: str, audience: str | None) -> list[pb.WatchImportsResponse]:
    """The batch's changes one per message, each made once for every watcher of the batch."""
    responses = []
    for n in range(len(batch.changes)):
        change, _ = _change(batch, n, audience)
        key = (n, change.HasField("upsert"))
        response = batch.responses.get(key)
        if response is None:
            response = _single(epoch, change)
            batch.responses[key] = response
        responses.append(response)
    return responses


def _entry_bytes(size: int) -> int:
    """What a change of ``size`` bytes adds to a Changes message: its tag, its length, itself."""
    length = 1
    while size >= 0x80 << (7 * (length - 1)):
        length += 1
    return 1 + length + size


class _Packer:
    """Changes, in order, into messages of at most ``max_bytes`` of changes."""

    def __init__(self, epoch: str, max_bytes: int) -> None:
        self._epoch = epoch
        self._max_bytes = max_bytes
        self._pending: list[pb.ImportChange] = []
        self._bytes = 0

    def add(self, change: pb.ImportChange, size: int, revision: int) -> Iterator[pb.WatchImportsResponse]:
        """Add a change of ``size`` bytes in a batch; yields what had to go first. ``revision``:
        the message revision of what is pending before this change (complete up to there)."""
        if size > self._max_bytes:
            yield from self.flush(revision)
            yield _single(self._epoch, change)
            return
        if self._pending and (self._bytes + size > self._max_bytes or len(self._pending) >= MAX_BATCH_CHANGES):
            yield from self.flush(revision)
        self._pending.append(change)
        self._bytes += size

    def flush(self, revision: int) -> Iterator[pb.WatchImportsResponse]:
        if not self._pending:
            return
        response = pb.WatchImportsResponse(epoch=self._epoch, revision=revision)
        response.changes.changes.extend(self._pending)
        self._pending, self._bytes = [], 0
        yield response


def batched_deltas(
    batches: Sequence[ImportBatch], epoch: str, audience: str | None, complete: int, max_bytes: int = MAX_BATCH_BYTES
) -> Iterator[pb.WatchImportsResponse]:
    """The changes of these batches (in revision order) in as few messages as fit, each made when
    the one before was taken. ``complete``: the revision every change before the first batch
    belongs to; ``max_bytes``: of changes in a message (``batch_bytes``)."""
    packer = _Packer(epoch, max_bytes)
    for batch in batches:
        for n in range(len(batch.changes)):
            change, size = _change(batch, n, audience)
            yield from packer.add(change, size, complete)
        complete = batch.revision
    yield from packer.flush(complete)


def batched_snapshot(
    imports: Iterable[pb.ResourceImport], epoch: str, revision: int, max_bytes: int = MAX_BATCH_BYTES
) -> Iterator[pb.WatchImportsResponse]:
    """A snapshot's imports (all at ``revision``) in as few messages as fit."""
    packer = _Packer(epoch, max_bytes)
    for imp in imports:
        change = pb.ImportChange(revision=revision, upsert=imp)
        yield from packer.add(change, _entry_bytes(change.ByteSize()), revision)
    yield from packer.flush(revision)
