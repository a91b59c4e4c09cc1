"""WorkQueue and run_reconciler semantics, without a server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
from prometheus_client import CollectorRegistry

from kube.backoff import Backoff
from kube.errors import PermanentError, TemporaryError
from kube.workqueue import QueueShutDown, WorkQueue, run_reconciler

FAST = Backoff(initial=0.01, maximum=0.08, jitter=0.0)


@contextlib.asynccontextmanager
async def reconciling(
    queue: WorkQueue[str], reconcile: Callable[[str], Awaitable[float | None]], workers: int = 2
) -> AsyncIterator[asyncio.Task[None]]:
    task = asyncio.create_task(run_reconciler(queue, reconcile, workers=workers))
    try:
        yield task
    finally:
        queue.shutdown()
        await asyncio.wait_for(task, 5)


async def test_a_key_added_repeatedly_while_pending_is_queued_once() -> None:
    queue: WorkQueue[str] = WorkQueue("t")
    for _ in range(3):
        queue.add("a")
    queue.add("b")
    assert len(queue) == 2
    assert await queue.get() == "a"
    assert await queue.get() == "b"
    queue.shutdown()


async def test_a_key_added_while_in_progress_is_handed_out_again_only_after_done() -> None:
    queue: WorkQueue[str] = WorkQueue("t")
    queue.add("a")
    key = await queue.get()
    queue.add("a")
    assert len(queue) == 0  # not visible to another worker while "a" is in progress
    queue.done(key)
    assert len(queue) == 1
    assert await queue.get() == "a"
    queue.done("a")
    queue.shutdown()


async def test_no_two_workers_reconcile_the_same_key_at_once() -> None:
    queue: WorkQueue[str] = WorkQueue("t")
    running: set[str] = set()
    overlaps = 0
    calls = 0
    release = asyncio.Event()
    started = asyncio.Event()

    async def reconcile(key: str) -> None:
        nonlocal overlaps, calls
        overlaps += key in running
        running.add(key)
        calls += 1
        started.set()
        await release.wait()
        running.discard(key)

    async with reconciling(queue, reconcile, workers=4):
        queue.add("a")
        await asyncio.wait_for(started.wait(), 5)
        for _ in range(5):
            queue.add("a")
        release.set()
        await queue.wait_idle()
    assert overlaps == 0
    assert calls == 2  # the first run, and one more for all adds made during it


async def test_add_after_delays_and_the_earliest_delay_wins() -> None:
    queue: WorkQueue[str] = WorkQueue("t")
    loop = asyncio.get_running_loop()
    start = loop.time()
    queue.add_after("a", 5.0)
    queue.add_after("a", 0.05)
    queue.add_after("a", 1.0)
    assert len(queue) == 0
    assert await asyncio.wait_for(queue.get(), 1) == "a"
    assert 0.04 <= loop.time() - start < 0.5
    queue.done("a")
    await queue.wait_idle()
    queue.shutdown()


async def test_rate_limited_requeues_back_off_exponentially_and_forget_resets() -> None:
    queue: WorkQueue[str] = WorkQueue("t", backoff=Backoff(initial=1.0, maximum=4.0, jitter=0.0))
    delays = [queue.backoff.delay(n) for n in range(5)]
    assert delays == [1.0, 2.0, 4.0, 4.0, 4.0]
    queue.add_rate_limited("a")
    queue.add_rate_limited("a")
    assert queue.num_requeues("a") == 2
    queue.forget("a")
    assert queue.num_requeues("a") == 0
    queue.shutdown()


async def test_temporary_errors_are_retried_with_backoff_until_success() -> None:
    queue: WorkQueue[str] = WorkQueue("t", backoff=FAST)
    attempts = 0
    succeeded = asyncio.Event()

    async def reconcile(key: str) -> None:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise TemporaryError("not yet")
        succeeded.set()

    async with reconciling(queue, reconcile):
        queue.add("a")
        await asyncio.wait_for(succeeded.wait(), 5)
        await queue.wait_idle()
    assert attempts == 3
    assert queue.num_requeues("a") == 0  # success forgot the failures


async def test_a_temporary_error_with_a_delay_is_retried_after_that_delay() -> None:
    queue: WorkQueue[str] = WorkQueue("t", backoff=Backoff(initial=10, maximum=10, jitter=0.0))
    times: list[float] = []
    loop = asyncio.get_running_loop()

    async def reconcile(key: str) -> None:
        times.append(loop.time())
        if len(times) == 1:
            raise TemporaryError("server busy", delay=0.05)

    async with reconciling(queue, reconcile):
        queue.add("a")
        await queue.wait_idle()
    assert len(times) == 2
    assert 0.04 <= times[1] - times[0] < 1


async def test_permanent_errors_are_dropped_and_unexpected_ones_retried() -> None:
    queue: WorkQueue[str] = WorkQueue("t", backoff=FAST)
    calls: dict[str, int] = {"bad": 0, "bug": 0}

    async def reconcile(key: str) -> None:
        calls[key] += 1
        if key == "bad":
            raise PermanentError("cannot ever work")
        if calls[key] == 1:
            raise ValueError("a bug that goes away")

    async with reconciling(queue, reconcile):
        queue.add("bad")
        queue.add("bug")
        await queue.wait_idle()
    assert calls == {"bad": 1, "bug": 2}


async def test_a_returned_delay_requeues_the_key_after_it() -> None:
    queue: WorkQueue[str] = WorkQueue("t")
    calls = 0

    async def reconcile(key: str) -> float | None:
        nonlocal calls
        calls += 1
        return 0.02 if calls < 3 else None

    async with reconciling(queue, reconcile):
        queue.add("a")
        await queue.wait_idle()
    assert calls == 3


async def test_shutdown_wakes_waiting_workers_and_refuses_new_keys() -> None:
    queue: WorkQueue[str] = WorkQueue("t")
    waiter = asyncio.create_task(queue.get())
    await asyncio.sleep(0)
    queue.shutdown()
    with pytest.raises(QueueShutDown):
        await asyncio.wait_for(waiter, 1)
    queue.add("a")
    assert len(queue) == 0


async def test_shutdown_with_drain_finishes_queued_work_first() -> None:
    queue: WorkQueue[str] = WorkQueue("t")
    done: list[str] = []

    async def reconcile(key: str) -> None:
        await asyncio.sleep(0)
        done.append(key)

    for key in ("a", "b", "c"):
        queue.add(key)
    task = asyncio.create_task(run_reconciler(queue, reconcile, workers=1))
    await asyncio.wait_for(queue.shutdown_with_drain(), 5)
    await asyncio.wait_for(task, 5)
    assert done == ["a", "b", "c"]


async def test_cancellation_stops_the_workers() -> None:
    queue: WorkQueue[str] = WorkQueue("t")
    started = asyncio.Event()

    async def reconcile(key: str) -> None:
        started.set()
        await asyncio.Event().wait()

    task = asyncio.create_task(run_reconciler(queue, reconcile, workers=2))
    queue.add("a")
    await asyncio.wait_for(started.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    queue.shutdown()


async def test_metrics_use_controller_runtime_names_on_the_given_registry() -> None:
    registry = CollectorRegistry()
    first: WorkQueue[str] = WorkQueue("first", backoff=FAST, registry=registry)
    second: WorkQueue[str] = WorkQueue("second", registry=registry)  # same registry: no duplicate metrics
    outcomes = iter([TemporaryError("once"), None])

    async def reconcile(key: str) -> None:
        outcome = next(outcomes)
        if outcome is not None:
            raise outcome

    second.add("x")
    assert registry.get_sample_value("workqueue_depth", {"name": "second"}) == 1
    async with reconciling(first, reconcile):
        first.add("a")
        await first.wait_idle()

    def total(result: str) -> float | None:
        return registry.get_sample_value(
            "controller_runtime_reconcile_total", {"controller": "first", "result": result}
        )

    assert total("error") == 1
    assert total("success") == 1
    assert registry.get_sample_value("workqueue_depth", {"name": "first"}) == 0
    second.shutdown()


async def test_wait_quiet_returns_once_every_key_was_handled_even_while_one_waits_out_its_backoff() -> None:
    queue: WorkQueue[str] = WorkQueue("t", backoff=Backoff(initial=30.0, maximum=30.0, jitter=0.0))
    handled: list[str] = []

    async def reconcile(key: str) -> None:
        handled.append(key)
        if key == "failing":
            raise TemporaryError("not yet")

    async with reconciling(queue, reconcile):
        for key in ("a", "failing", "b"):
            queue.add(key)
        async with asyncio.timeout(5):
            await queue.wait_quiet()
        assert sorted(handled) == ["a", "b", "failing"]
        assert queue.num_requeues("failing") == 1
        idle = asyncio.ensure_future(queue.wait_idle())
        await asyncio.sleep(0.05)
        assert not idle.done()  # "failing" is still due again in 30 s
        idle.cancel()


async def test_background_keys_wait_behind_every_key_added_normally_and_move_up_when_added_normally() -> None:
    queue: WorkQueue[str] = WorkQueue("t")
    for key in ("old-1", "old-2", "old-3"):
        queue.add_background(key)
    queue.add("new-1")
    queue.add_background("new-1")  # already queued in front: stays there
    queue.add("old-3")  # moves to the front lane, behind new-1
    queue.add("new-2")
    assert len(queue) == 5
    taken = []
    for _ in range(5):
        key = await queue.get()
        taken.append(key)
        queue.done(key)
    assert taken == ["new-1", "old-3", "new-2", "old-1", "old-2"]
    assert len(queue) == 0

    # Re-added in the background while in progress: handed out again after done(), once.
    queue.add_background("a")
    key = await queue.get()
    queue.add_background("a")
    queue.add("b")
    queue.done(key)
    assert [await queue.get(), await queue.get()] == ["b", "a"]
    queue.shutdown()
