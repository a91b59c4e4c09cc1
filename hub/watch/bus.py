"""In-process fan-out of committed changes to open streams.

Each subscriber owns one bounded queue (as grpc's health servicer keeps one
per watcher). Publishing never blocks the writer: a subscriber that falls
further behind than its limit is marked overflowed and its stream ends with a
"resume" status, after which the member resumes from its last revision and
the store replays exactly what it missed. The limit counts what the items
weigh (an import batch: its changes), so what a slow watcher holds is bounded
whatever the batch sizes.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


def _one(_: object) -> int:
    return 1


@dataclass(eq=False)
class Subscription(Generic[T]):
    limit: int
    # What an item counts against the limit.
    weight: Callable[[T], int] = _one
    # What was offered and not taken yet, each with its weight. None marks the overflow: the
    # reader sees it after what it was already given, in order. (A deque and one waiter, not an
    # asyncio.Queue: the bus offers every commit to every watcher, and the queue's bookkeeping
    # for many getters and putters was a good part of what a watcher cost per commit.)
    items: deque[tuple[T | None, int]] = field(default_factory=deque)
    # The weight of what is queued.
    held: int = 0
    overflowed: bool = False
    # Set when the publisher ended this subscription on purpose (Bus.end): why.
    ended: str = ""
    # The reader waiting in get(), woken by the next item.
    _waiter: asyncio.Future[None] | None = None

    def offer(self, item: T) -> None:
        if self.overflowed:
            return
        weight = self.weight(item)
        if self.held and self.held + weight > self.limit:
            self.overflow()
            return
        self.held += weight
        self._put(item, weight)

    def overflow(self) -> None:
        self.overflowed = True
        self._put(None, 0)

    def _put(self, item: T | None, weight: int) -> None:
        self.items.append((item, weight))
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def get(self) -> T | None:
        """The next item, or None once the subscription has overflowed."""
        while not self.items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item, weight = self.items.popleft()
        self.held -= weight
        return item

    def ready(self, max_weight: int) -> list[T | None]:
        """What is queued now, in order, without waiting, until it weighs ``max_weight`` (None
        last once it has overflowed): the rest stays queued and counted against the limit."""
        items: list[T | None] = []
        taken = 0
        while taken < max_weight and self.items:
            item, weight = self.items.popleft()
            self.held -= weight
            taken += weight
            items.append(item)
        return items


class Bus(Generic[T]):
    """Broadcast to every subscriber of a topic (a cluster ID, or "" for all)."""

    def __init__(self, limit: int, weight: Callable[[T], int] = _one) -> None:
        self._limit = limit
        self._weight = weight
        self._subs: dict[str, set[Subscription[T]]] = {}
        self.closed = False

    def close(self) -> None:
        """End every subscription (shutdown): each reader's next get() is None."""
        self.closed = True
        for subs in self._subs.values():
            for sub in subs:
                sub.overflow()

    def overflow_all(self) -> None:
        """Tell every current subscriber to resume (as if it fell behind); new ones are welcome."""
        for subs in self._subs.values():
            for sub in subs:
                if not sub.overflowed:
                    sub.overflow()

    def end(self, topic: str, reason: str) -> None:
        """End the subscriptions of one topic (e.g. a member removed): their next get() is None
        and their `ended` says why."""
        for sub in list(self._subs.get(topic, ())):
            if not sub.overflowed:
                sub.ended = reason
                sub.overflow()

    @contextmanager
    def subscribe(self, topic: str = "") -> Iterator[Subscription[T]]:
        sub: Subscription[T] = Subscription(self._limit, self._weight)
        self._subs.setdefault(topic, set()).add(sub)
        try:
            yield sub
        finally:
            subs = self._subs.get(topic)
            if subs is not None:
                subs.discard(sub)
                if not subs:
                    del self._subs[topic]

    def publish(self, item: T, topic: str = "") -> None:
        for sub in list(self._subs.get(topic, ())):
            sub.offer(item)

    def publish_all(self, item: T) -> None:
        """To every subscriber of every topic (bookmark ticks)."""
        for subs in list(self._subs.values()):
            for sub in list(subs):
                sub.offer(item)

    def count(self, topic: str | None = None) -> int:
        if topic is None:
            return sum(len(s) for s in self._subs.values())
        return len(self._subs.get(topic, ()))
