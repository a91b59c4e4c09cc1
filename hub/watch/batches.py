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

Every watcher of a commit sees its changes alike, but for the few imports meant for some members
only (delivers_to_all): each change is encoded once per commit and way it is seen (hub.watch.encoded),
and a watcher's messages join those bytes, in both forms: what a watcher costs per change is a
share of a copy, not a message built and serialized for it.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import TypeVar

from hub.store.base import ImportChange
from hub.watch.encoded import Encoded, change_entry, changes_message
from mcapi.delivery import delivers_to, delivers_to_all
from mcapi.mchub.v1 import common_area_pb2 as pb

# Well under the 4 MiB a member's channel takes by default.
MAX_BATCH_BYTES = 1024 * 1024
MAX_BATCH_CHANGES = 1000
# What a WatchImportsResponse adds around its import: the field's tag and length (6), the
# epoch (2 + 32 hex digits) and the revision (11), with room to spare.
WATCH_ENVELOPE_BYTES = 64


@dataclass(frozen=True)
class _View:
    """A run of changes as one watcher sees them, encoded as entries of a Changes message."""

    # Each change delivered (an upsert) or not (a delete), in order.
    delivered: tuple[bool, ...]
    # The entries (hub.watch.encoded.change_entry), joined.
    data: bytes
    # Where each entry starts in ``data``, and its end last: entry n is data[offsets[n]:offsets[n + 1]].
    offsets: list[int]


def _view(changes: Sequence[pb.ImportChange], delivered: tuple[bool, ...]) -> _View:
    entries = [change_entry(change) for change in changes]
    offsets = [0]
    for entry in entries:
        offsets.append(offsets[-1] + len(entry))
    return _View(delivered, b"".join(entries), offsets)


@dataclass(frozen=True)
class ImportBatch:
    """What one commit changed in imports, as published to every watcher."""

    revision: int
    changes: list[ImportChange]
    # The history the batch belongs to ("": the epoch of the engine that published it). A
    # follower changes its epoch in place, and a batch queued before must keep its own.
    epoch: str = ""
    # The changes as watchers see them, made once for all watchers alike: by whether the
    # watcher receives each change meant for some members only (`_targeted`) -> their entries;
    # and each change as a message of its own (`single_deltas`): (position, delivered) -> it.
    views: dict[tuple[bool, ...], _View] = field(default_factory=dict, compare=False, repr=False)
    responses: dict[tuple[int, bool], Encoded] = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def _targeted(self) -> list[int]:
        """The positions of the upserts that some members do not receive (the rest: all or none do)."""
        return [n for n, c in enumerate(self.changes) if c.resource is not None and not delivers_to_all(c.resource)]

    def seen_by(self, audience: str | None) -> _View:
        """The batch's changes as ``audience`` must see them (None: the admin, who sees every import)."""
        targeted = self._targeted
        key = tuple(audience is None or delivers_to(self._upsert(n), audience) for n in targeted) if targeted else ()
        view = self.views.get(key)
        if view is None:
            delivered = [c.resource is not None for c in self.changes]
            for n, receives in zip(targeted, key, strict=True):
                delivered[n] = receives
            messages = [self._change(n, d) for n, d in enumerate(delivered)]
            view = self.views[key] = _view(messages, tuple(delivered))
        return view

    def single(self, n: int, delivered: bool, epoch: str) -> Encoded:
        """Change n as a message of its own: the upsert (delivered) or the delete."""
        response = self.responses.get((n, delivered))
        if response is None:
            response = self.responses[(n, delivered)] = Encoded.of(_single(epoch, self._change(n, delivered)))
        return response

    def _upsert(self, n: int) -> pb.ResourceImport:
        resource = self.changes[n].resource
        assert resource is not None  # `_targeted` holds upserts only
        return resource

    def _change(self, n: int, delivered: bool) -> pb.ImportChange:
        """Change n: the upsert (delivered to the watcher) or the delete (deleted, or no longer
        meant for that member)."""
        if delivered:
            return pb.ImportChange(revision=self.revision, upsert=self._upsert(n))
        delete = pb.ImportDelete(import_name=self.changes[n].import_name)
        return pb.ImportChange(revision=self.revision, delete=delete)


def batch_bytes(hub_limit: int, watcher_limit: int) -> int:
    """How large a batch may be for a watcher that takes messages of ``watcher_limit`` bytes (0:
    any) from a hub that sends at most ``hub_limit``: the message around it must fit both."""
    limit = min(hub_limit, watcher_limit) if watcher_limit else hub_limit
    return max(1, min(MAX_BATCH_BYTES, limit - WATCH_ENVELOPE_BYTES))


def _single(epoch: str, change: pb.ImportChange) -> pb.WatchImportsResponse:
    if change.HasField("upsert"):
        return pb.WatchImportsResponse(epoch=epoch, revision=change.revision, upsert=change.upsert)
    return pb.WatchImportsResponse(epoch=epoch, revision=change.revision, delete=change.delete)


def single_deltas(batch: ImportBatch, epoch: str, audience: str | None) -> list[Encoded]:
    """The batch's changes one per message, each made once for every watcher of the batch."""
    view = batch.seen_by(audience)
    return [batch.single(n, delivered, epoch) for n, delivered in enumerate(view.delivered)]


class _Packer:
    """Changes, in order, into messages of at most ``max_bytes`` of changes."""

    def __init__(self, epoch: str, max_bytes: int) -> None:
        self._epoch = epoch
        self._max_bytes = max_bytes
        # Entries, or runs of entries, of the message being filled.
        self._pending: list[bytes] = []
        self._bytes = 0
        self._count = 0

    def add(self, view: _View, revision: int, single: Callable[[int], Encoded]) -> Iterator[Encoded]:
        """Add the changes of ``view``; yields what had to go first. ``revision``: the message
        revision of what is pending before these changes (complete up to there); ``single``:
        change n as a message of its own, for a change larger than a batch may be."""
        offsets, end = view.offsets, len(view.offsets) - 1
        start = 0
        while start < end:
            if offsets[start + 1] - offsets[start] > self._max_bytes:
                yield from self.flush(revision)
                yield single(start)
                start += 1
                continue
            # The longest run from ``start`` that fits the room left, in changes and in bytes (a
            # change larger than a batch never fits: the run stops before it).
            last = min(end, start + MAX_BATCH_CHANGES - self._count)
            room = offsets[start] + self._max_bytes - self._bytes
            stop = bisect.bisect_right(offsets, room, start, last + 1) - 1
            if stop == start:  # the message is full (an empty one takes any change but a larger one)
                yield from self.flush(revision)
                continue
            self._pending.append(view.data[offsets[start] : offsets[stop]])
            self._bytes += offsets[stop] - offsets[start]
            self._count += stop - start
            start = stop

    def flush(self, revision: int) -> Iterator[Encoded]:
        if not self._pending:
            return
        message = changes_message(self._epoch, revision, self._pending, self._bytes)
        self._pending, self._bytes, self._count = [], 0, 0
        yield message


def batched_deltas(
    batches: Sequence[ImportBatch], epoch: str, audience: str | None, complete: int, max_bytes: int = MAX_BATCH_BYTES
) -> Iterator[Encoded]:
    """The changes of these batches (in revision order) in as few messages as fit, each made when
    the one before was taken. ``complete``: the revision every change before the first batch
    belongs to; ``max_bytes``: of changes in a message (``batch_bytes``)."""
    packer = _Packer(epoch, max_bytes)
    for batch in batches:
        view = batch.seen_by(audience)
        yield from packer.add(view, complete, partial(_batch_single, batch, view, epoch))
        complete = batch.revision
    yield from packer.flush(complete)


def _batch_single(batch: ImportBatch, view: _View, epoch: str, n: int) -> Encoded:
    return batch.single(n, view.delivered[n], epoch)


def batched_snapshot(
    imports: Iterable[pb.ResourceImport], epoch: str, revision: int, max_bytes: int = MAX_BATCH_BYTES
) -> Iterator[Encoded]:
    """A snapshot's imports (all at ``revision``) in as few messages as fit, made a batch's worth at a time."""
    packer = _Packer(epoch, max_bytes)
    for changes in _chunks((pb.ImportChange(revision=revision, upsert=imp) for imp in imports), MAX_BATCH_CHANGES):
        view = _view(changes, (True,) * len(changes))
        yield from packer.add(view, revision, partial(_snapshot_single, epoch, changes))
    yield from packer.flush(revision)


def _snapshot_single(epoch: str, changes: list[pb.ImportChange], n: int) -> Encoded:
    return Encoded.of(_single(epoch, changes[n]))


T = TypeVar("T")


def _chunks(items: Iterable[T], size: int) -> Iterator[list[T]]:
    chunk: list[T] = []
    for item in items:
        chunk.append(item)
        if len(chunk) == size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk
