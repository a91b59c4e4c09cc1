"""One WatchImports stream: a snapshot or a resumption, then every change as it is committed.

The stream subscribes to the engine's imports bus first, then reads what it starts from:
a snapshot of the imports delivered to the watcher (consistent with its revision: read
without awaiting), or, asked for a revision of the engine's epoch, the changes since then
from the store's change log; either is sent once every write it holds is durable. Then it
sends what the bus brings, one change per message or in batches (hub.watch.batches),
bookmarks for the ticks, and ends when its subscription overflows: the watcher fell behind
(it resumes), or the hub is shutting down.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

from hub.engine import Engine
from hub.errors import FellBehind, Unavailable
from hub.metrics import HubMetrics
from hub.store.base import EpochMismatch, RevisionCompacted, RevisionInFuture
from hub.watch.batches import (
    MAX_BATCH_CHANGES,
    ImportBatch,
    batch_bytes,
    batched_deltas,
    batched_snapshot,
    single_deltas,
)
from hub.watch.encoded import Encoded, WatchResponse
from mcapi import trace
from mcapi.mchub.v1 import common_area_pb2 as pb


@dataclass
class _Sent:
    """Where a watch stands: the revision it sent in full; whether its subscription overflowed."""

    revision: int
    overflowed: bool = False


class WatchImportsStream:
    """One member's WatchImports call, as the hub serves it (the member's side is member.hubclient.watch)."""

    def __init__(
        self,
        engine: Engine,
        request: pb.WatchImportsRequest,
        audience: str | None,
        metrics: HubMetrics,
        max_message_bytes: int,
    ) -> None:
        """`audience`: the member watching (None: the admin, who sees every import)."""
        self._engine = engine
        self._request = request
        self._audience = audience
        self._metrics = metrics
        # How large a batch may be for this watch (None: it reads one change per message).
        self._limit = batch_bytes(max_message_bytes, request.max_message_bytes) if request.batched else None

    async def responses(self) -> AsyncIterator[WatchResponse]:
        """Until the subscription overflows; then raises FellBehind, or Unavailable at shutdown."""
        engine = self._engine
        with engine.imports_bus.subscribe() as sub:
            last = 0
            async for response in self._initial():
                last = max(last, response.revision)
                self._traced(response)
                yield response
            sent = _Sent(last)
            while True:
                # A batched watcher takes what queued behind the first item too, about one
                # message's worth at a time (the rest stays counted against its limit).
                items = [await sub.get()]
                if self._request.batched:
                    items += sub.ready(MAX_BATCH_CHANGES)
                for response in self._answer(items, sent):
                    self._traced(response)
                    yield response
                if sent.overflowed:
                    if engine.imports_bus.closed:
                        raise Unavailable("hub shutting down; resume later")
                    raise FellBehind("watch fell behind; resume from your last revision")

    def _traced(self, response: WatchResponse) -> None:
        if trace.enabled():
            message = response.decoded() if isinstance(response, Encoded) else response
            trace.mark_imports(trace.Hop.WATCH_SENT, trace.sent_imports(message), self._audience or "")

    async def _initial(self) -> AsyncIterator[WatchResponse]:
        """Snapshot or resumption, from the engine whose bus the watch subscribed to."""
        engine, request = self._engine, self._request
        reason = pb.SYNCED_REASON_INITIAL
        if request.epoch:
            reason = pb.SYNCED_REASON_EPOCH_CHANGED
            if request.epoch == engine.epoch:
                try:
                    changes = await engine.store.import_changes_since(request.epoch, request.revision)
                except EpochMismatch:
                    reason = pb.SYNCED_REASON_EPOCH_CHANGED
                except (RevisionCompacted, RevisionInFuture):
                    reason = pb.SYNCED_REASON_REVISION_COMPACTED
                else:
                    # The change log holds commits not durable yet, too: none is sent before it is.
                    await engine.published(max((c.revision for c in changes), default=0))
                    yield pb.WatchImportsResponse(epoch=engine.epoch, revision=request.revision, resumed=pb.Resumed())
                    by_revision: dict[int, list[Any]] = {}
                    for change in changes:
                        by_revision.setdefault(change.revision, []).append(change)
                    batches = [ImportBatch(r, group, engine.epoch) for r, group in sorted(by_revision.items())]
                    for response in self._deltas(batches, request.revision):
                        yield response
                    return
        # A snapshot, read without awaiting so it is consistent with its revision, and sent once
        # every write it holds is durable.
        revision, staged = engine.watch_revision, engine.revision
        imports = engine.index.imports_for(self._audience)
        await engine.published(staged)
        if self._limit is not None:
            for response in batched_snapshot(imports, engine.epoch, revision, self._limit):
                yield response
        else:
            for imp in imports:
                yield pb.WatchImportsResponse(epoch=engine.epoch, revision=revision, upsert=imp)
        yield pb.WatchImportsResponse(epoch=engine.epoch, revision=revision, synced=pb.Synced(reason=reason))

    def _answer(self, items: list[ImportBatch | None], sent: _Sent) -> Iterator[WatchResponse]:
        """What to send for items taken from the watch's subscription, in order, each message
        made when the one before was taken: their changes (those not sent yet), bookmarks for the
        ticks. ``sent`` follows the revision sent in full, and whether the subscription
        overflowed (the watch ends after what came before)."""
        changed: list[ImportBatch] = []
        for item in items:
            if item is not None and item.changes:
                if item.revision > sent.revision:
                    changed.append(item)
                continue
            yield from self._changed(changed, sent)
            changed = []
            if item is None:
                sent.overflowed = True
                return
            # A bookmark tick: everything up to the engine's revision was sent.
            sent.revision = max(sent.revision, item.revision)
            yield pb.WatchImportsResponse(epoch=self._engine.epoch, revision=sent.revision, bookmark=pb.Bookmark())
        yield from self._changed(changed, sent)

    def _changed(self, batches: list[ImportBatch], sent: _Sent) -> Iterator[Encoded]:
        """Batches published since the watch began (counted: resumed ones are not)."""
        if not batches:
            return
        yield from self._deltas(batches, sent.revision)
        self._metrics.imports_sent.inc(sum(len(b.changes) for b in batches))
        sent.revision = max([sent.revision, *(b.revision for b in batches)])

    def _deltas(self, batches: list[ImportBatch], complete: int) -> Iterator[Encoded]:
        """The batches' changes as messages, one per change or in batches of the watch's limit;
        ``complete``: the revision sent in full before them."""
        # The epoch of the history that made a batch, even if another serves by now (take-over):
        # a message holds the changes of one epoch, and a new epoch's revisions start anew.
        for n, (epoch, group) in enumerate(itertools.groupby(batches, key=lambda b: b.epoch or self._engine.epoch)):
            same_epoch = list(group)
            if n:
                complete = same_epoch[0].revision - 1  # another history: nothing of it was sent
            if self._limit is None:
                for batch in same_epoch:
                    yield from single_deltas(batch, epoch, self._audience)
            else:
                yield from batched_deltas(same_epoch, epoch, self._audience, complete, self._limit)
