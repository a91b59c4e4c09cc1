"""A keyed work queue and the reconciler loop that drains it.

The queue's promises, the ones controllers are written against:

* a key waiting in the queue is there once, however often it is added;
* a key is never handed to two workers at once: added while in progress, it is
  queued again when its worker calls ``done``;
* ``add_rate_limited`` waits a per-key delay that doubles with every failure up to
  a cap, and ``forget`` resets it (after a success);
* ``add_after`` delays an add; the earliest pending delay of a key wins;
* ``add_background`` queues a key behind every key added with ``add`` (clean-ups that must
  not hold up new work); adding it with ``add`` moves it to the front lane.

``run_reconciler`` is the worker loop: reconcile(key) returns None (done) or a
number of seconds (look again then), or raises a typed error; only cancellation
escapes a worker.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable, Hashable
from typing import Generic, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from kube.backoff import Backoff
from kube.errors import PermanentError, TemporaryError
from kube.metrics import once_per_registry

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)

# A key's delay after failures: 5 ms doubling up to 1000 s, controller-runtime's defaults.
PER_KEY_BACKOFF = Backoff(initial=0.005, maximum=1000.0, jitter=0.0)


class QueueShutDown(Exception):
    """get() on a queue that was shut down (and, when draining, is empty)."""


class WorkqueueMetrics:
    """controller-runtime's metric names, on a registry the caller owns (one per test/process)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        r = registry
        self.depth = Gauge("workqueue_depth", "Current depth of the work queue", ["name"], registry=r)
        self.adds = Counter("workqueue_adds_total", "Adds handled by the work queue", ["name"], registry=r)
        self.retries = Counter("workqueue_retries_total", "Rate-limited re-adds", ["name"], registry=r)
        self.reconcile_total = Counter(
            "controller_runtime_reconcile_total", "Reconciliations per controller", ["controller", "result"], registry=r
        )
        self.reconcile_errors = Counter(
            "controller_runtime_reconcile_errors_total",
            "Reconciliation errors per controller",
            ["controller"],
            registry=r,
        )
        self.reconcile_time = Histogram(
            "controller_runtime_reconcile_time_seconds", "Time per reconciliation", ["controller"], registry=r
        )

    @classmethod
    def for_registry(cls, registry: CollectorRegistry) -> WorkqueueMetrics:
        """The metrics on ``registry``, created once: several queues may share one registry."""
        return once_per_registry(cls, registry)


class WorkQueue(Generic[K]):
    def __init__(
        self,
        name: str,
        backoff: Backoff = PER_KEY_BACKOFF,
        registry: CollectorRegistry | None = None,
    ) -> None:
        self.name = name
        self.backoff = backoff
        self.metrics = WorkqueueMetrics.for_registry(registry) if registry is not None else None
        if self.metrics is not None:  # labels() checks its arguments on every call: look them up once
            self._adds = self.metrics.adds.labels(name)
            self._depth = self.metrics.depth.labels(name)
        self._queue: deque[K] = deque()
        self._dirty: set[K] = set()  # waiting in a lane, or re-added while processing
        # The background lane: its entries may be stale (a key moved to the front lane, or
        # handed out through an older entry); _background_keys says which keys belong there.
        self._background: deque[K] = deque()
        self._background_keys: set[K] = set()
        self._background_len = 0  # keys waiting in the background lane
        self._processing: set[K] = set()
        self._failures: dict[K, int] = {}
        self._delayed: dict[K, tuple[float, asyncio.TimerHandle]] = {}
        self._ready = asyncio.Event()  # set when a key may be waiting (or on shutdown)
        self._idle = asyncio.Event()
        self._idle.set()
        self._quiet = asyncio.Event()  # nothing queued or in progress (delayed keys may wait)
        self._quiet.set()
        self._shutting_down = False
        self._draining = False

    # Adding

    def add(self, key: K) -> None:
        if self._shutting_down:
            return
        if self.metrics:
            self._adds.inc()
        if key in self._dirty:
            if key in self._background_keys:
                self._background_keys.discard(key)
                if key not in self._processing:  # waiting in the background lane: to the front
                    self._background_len -= 1
                    self._queue.append(key)
                    self._wake()
            return
        self._dirty.add(key)
        self._idle.clear()
        self._quiet.clear()
        if key in self._processing:
            return  # done() queues it again, so no second worker gets it meanwhile
        self._queue.append(key)
        self._update_depth()
        self._wake()

    def add_background(self, key: K) -> None:
        """Queue ``key`` behind every key added with ``add`` (one already queued stays where it is)."""
        if self._shutting_down:
            return
        if self.metrics:
            self._adds.inc()
        if key in self._dirty:
            return
        self._dirty.add(key)
        self._background_keys.add(key)
        self._idle.clear()
        self._quiet.clear()
        if key in self._processing:
            return
        self._background.append(key)
        self._background_len += 1
        self._update_depth()
        self._wake()

    def add_after(self, key: K, delay: float) -> None:
        if self._shutting_down:
            return
        if delay <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        due = loop.time() + delay
        pending = self._delayed.get(key)
        if pending is not None:
            if pending[0] <= due:
                return
            pending[1].cancel()
        self._delayed[key] = (due, loop.call_at(due, self._fire, key))
        self._idle.clear()

    def _fire(self, key: K) -> None:
        self._delayed.pop(key, None)
        self.add(key)
        self._check_idle()

    def add_rate_limited(self, key: K) -> None:
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        if self.metrics:
            self.metrics.retries.labels(self.name).inc()
        self.add_after(key, self.backoff.delay(failures))

    def forget(self, key: K) -> None:
        """Reset the key's failure count (its next add_rate_limited waits the base delay)."""
        self._failures.pop(key, None)

    def num_requeues(self, key: K) -> int:
        return self._failures.get(key, 0)

    # Taking

    async def get(self) -> K:
        """The next key; the caller must call done(key) when it has finished with it."""
        while True:
            if self._shutting_down and not self._draining:
                raise QueueShutDown(self.name)
            if self._queue or self._background_len:
                break
            if self._shutting_down:
                raise QueueShutDown(self.name)  # drained
            # Several getters may wake for one key; the losers find the queue empty and wait again.
            self._ready.clear()
            await self._ready.wait()
        key = self._queue.popleft() if self._queue else self._next_background()
        self._dirty.discard(key)
        self._processing.add(key)
        self._update_depth()
        return key

    def _next_background(self) -> K:
        while True:
            key = self._background.popleft()
            if key in self._background_keys and key not in self._processing:
                self._background_keys.discard(key)
                self._background_len -= 1
                return key

    def done(self, key: K) -> None:
        self._processing.discard(key)
        if key in self._dirty and not self._shutting_down:
            if key in self._background_keys:
                self._background.append(key)
                self._background_len += 1
            else:
                self._queue.append(key)
            self._update_depth()
            self._wake()
        elif key in self._dirty:
            self._dirty.discard(key)
            self._background_keys.discard(key)
        self._check_idle()

    def __len__(self) -> int:
        return len(self._queue) + self._background_len

    @property
    def shutting_down(self) -> bool:
        return self._shutting_down

    # Stopping

    def shutdown(self) -> None:
        """Stop now: pending and delayed keys are dropped, waiting get()s raise QueueShutDown."""
        self._stop(drain=False)
        self._queue.clear()
        self._background.clear()
        self._background_keys.clear()
        self._background_len = 0
        self._dirty.clear()
        self._update_depth()
        self._check_idle()

    async def shutdown_with_drain(self) -> None:
        """Refuse new adds, let workers take what is queued, and wait until all of it is done."""
        self._stop(drain=True)
        self._check_idle()
        await self._idle.wait()

    async def wait_idle(self) -> None:
        """Until nothing is queued, delayed or in progress (tests use it instead of sleeping)."""
        self._check_idle()
        await self._idle.wait()

    async def wait_quiet(self) -> None:
        """Until nothing is queued or in progress: every key added so far was handled once,
        though keys waiting out a delay (a retry's backoff, add_after) may come back."""
        self._check_idle()
        await self._quiet.wait()

    def _stop(self, drain: bool) -> None:
        self._shutting_down = True
        self._draining = drain
        for _, handle in self._delayed.values():
            handle.cancel()
        self._delayed.clear()
        self._wake()

    def _wake(self) -> None:
        self._ready.set()

    def _check_idle(self) -> None:
        if self._queue or self._background_len or self._processing:
            return
        self._quiet.set()
        if not self._delayed:
            self._idle.set()
            if self._shutting_down:
                self._wake()

    def _update_depth(self) -> None:
        if self.metrics:
            self._depth.set(len(self))


Reconcile = Callable[[K], Awaitable[float | None]]


async def run_reconciler(
    queue: WorkQueue[K],
    reconcile: Reconcile[K],
    workers: int = 1,
    name: str | None = None,
) -> None:
    """Run ``workers`` workers on ``queue`` until it shuts down (or this is cancelled).

    Outcomes of reconcile(key):
    * returns None: success, the key's backoff is reset;
    * returns seconds: success, looked at again after that long;
    * TemporaryError with a delay: retried after that delay; without one, with backoff;
    * PermanentError: logged and dropped until the key is added again;
    * any other exception: logged with its traceback and retried with backoff.
    """
    controller = name or queue.name
    async with asyncio.TaskGroup() as group:
        for index in range(workers):
            group.create_task(_worker(queue, reconcile, controller), name=f"{controller}-worker-{index}")


async def _worker(queue: WorkQueue[K], reconcile: Reconcile[K], controller: str) -> None:
    while True:
        try:
            key = await queue.get()
        except QueueShutDown:
            return
        try:
            await _reconcile_one(queue, reconcile, controller, key)
        finally:
            queue.done(key)


async def _reconcile_one(queue: WorkQueue[K], reconcile: Reconcile[K], controller: str, key: K) -> None:
    metrics = queue.metrics
    started = time.monotonic()
    result = "success"
    try:
        requeue_after = await reconcile(key)
    except asyncio.CancelledError:
        raise
    except TemporaryError as err:
        result = "error"
        log.warning("reconcileRetry", extra={"controller": controller, "key": str(key), "error": str(err)})
        if err.delay is not None:
            queue.add_after(key, err.delay)
        else:
            queue.add_rate_limited(key)
    except PermanentError as err:
        result = "error"
        log.error("reconcileFailed", extra={"controller": controller, "key": str(key), "error": str(err)})
        queue.forget(key)
    except Exception as err:
        result = "error"
        log.exception("reconcileError", extra={"controller": controller, "key": str(key), "error": str(err)})
        queue.add_rate_limited(key)
    else:
        queue.forget(key)
        if requeue_after is not None:
            result = "requeue_after"
            queue.add_after(key, requeue_after)
    if metrics:
        metrics.reconcile_time.labels(controller).observe(time.monotonic() - started)
        metrics.reconcile_total.labels(controller, result).inc()
        if result == "error":
            metrics.reconcile_errors.labels(controller).inc()
