"""In-process fan-out of committed changes to open streams.

Each subscriber owns one bounded queue (as grpc's health servicer keeps one
per watcher). Publishing never blocks the writer: a subscriber that falls
further behind than its limit is marked overflowed and its stream ends with a
"resume" status, after which the member resumes from its last revision and
the store replays exactly what it missed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")


@dataclass(eq=False)
class Subscription(Generic[T]):
    limit: int
    # None in the queue marks the overflow: the reader sees it after what it
    # was already given, in order.
    queue: asyncio.Queue[T | None] = field(default_factory=asyncio.Queue)
    overflowed: bool = False
    # Set when the publisher ended this subscription on purpose (Bus.end): why.
    ended: str = ""

    def offer(self, item: T) -> None:
        if self.overflowed:
            return
        if self.queue.qsize() >= self.limit:
            self.overflowed = True
            self.queue.put_nowait(None)
            return
        self.queue.put_nowait(item)

    async def get(self) -> T | None:
        """The next item, or None once the subscription has overflowed."""
        return await self.queue.get()


class Bus(Generic[T]):
    """Broadcast to every subscriber of a topic (a cluster ID, or "" for all)."""

    def __init__(self, limit: int) -> None:
        self._limit = limit
        self._subs: dict[str, set[Subscription[T]]] = {}
        self.closed = False

    def close(self) -> None:
        """End every subscription (shutdown): each reader's next get() is None."""
        self.closed = True
        for subs in self._subs.values():
            for sub in subs:
                sub.overflowed = True
                sub.queue.put_nowait(None)

    def overflow_all(self) -> None:
        """Tell every current subscriber to resume (as if it fell behind); new ones are welcome."""
        for subs in self._subs.values():
            for sub in subs:
                if not sub.overflowed:
                    sub.overflowed = True
                    sub.queue.put_nowait(None)

    def end(self, topic: str, reason: str) -> None:
        """End the subscriptions of one topic (e.g. a member removed): their next get() is None
        and their `ended` says why."""
        for sub in list(self._subs.get(topic, ())):
            if not sub.overflowed:
                sub.ended = reason
                sub.overflowed = True
                sub.queue.put_nowait(None)

    @contextmanager
    def subscribe(self, topic: str = "") -> Iterator[Subscription[T]]:
        sub: Subscription[T] = Subscription(self._limit)
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
