"""until_set_or_done returns on the first of the two; cancel_and_wait ends tasks; neither leaves a task pending."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from kube.waiting import cancel_and_wait, on_stop_signals, until_set_or_done, until_stop_signal


def _own_pending(before: set[asyncio.Task[object]]) -> list[asyncio.Task[object]]:
    return [t for t in asyncio.all_tasks() - before if t is not asyncio.current_task() and not t.done()]


async def test_the_task_ending_first_leaves_no_event_waiter_pending() -> None:
    before = asyncio.all_tasks()
    event = asyncio.Event()
    task = asyncio.ensure_future(asyncio.sleep(0))
    await until_set_or_done(event, task)
    assert task.done()
    assert _own_pending(before) == []


async def test_the_event_set_first_returns_while_the_task_goes_on() -> None:
    event = asyncio.Event()
    task = asyncio.ensure_future(asyncio.sleep(60))
    asyncio.get_running_loop().call_soon(event.set)
    before = asyncio.all_tasks()
    await until_set_or_done(event, task)
    assert not task.done()
    assert _own_pending(before) == []
    task.cancel()


async def test_a_cancelled_caller_is_cancelled_and_leaves_nothing_pending() -> None:
    before = asyncio.all_tasks()
    never, forever = asyncio.Event(), asyncio.ensure_future(asyncio.sleep(60))
    caller = asyncio.ensure_future(until_set_or_done(never, forever))
    await asyncio.sleep(0)
    caller.cancel()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert _own_pending(before) == [forever]
    forever.cancel()


async def test_cancel_and_wait_returns_once_every_task_has_ended() -> None:
    cleaned: list[str] = []

    async def worker(name: str) -> None:
        try:
            await asyncio.sleep(60)
        finally:
            await asyncio.sleep(0)  # ending takes a turn of the loop
            cleaned.append(name)

    tasks = [asyncio.create_task(worker(n)) for n in ("a", "b")]
    await asyncio.sleep(0)
    finished = asyncio.create_task(asyncio.sleep(0))
    await finished
    await cancel_and_wait(*tasks, None, finished)
    assert all(t.cancelled() for t in tasks) and sorted(cleaned) == ["a", "b"]


async def test_a_task_stopping_what_owns_it_does_not_wait_for_itself() -> None:
    async def stop_self() -> str:
        await cancel_and_wait(asyncio.current_task())
        return "went on"

    assert await asyncio.wait_for(stop_self(), 1) == "went on"


async def test_the_callers_cancellation_reaches_the_caller() -> None:
    async def stubborn() -> None:
        while True:
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                await asyncio.sleep(0.05)
                return

    task = asyncio.create_task(stubborn())
    await asyncio.sleep(0)
    stopper = asyncio.create_task(cancel_and_wait(task))
    await asyncio.sleep(0)
    stopper.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stopper
    await asyncio.wait({task})


async def test_an_error_a_task_ends_with_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    async def failing() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            raise RuntimeError("cleanup failed") from None

    task = asyncio.create_task(failing(), name="failing-task")
    await asyncio.sleep(0)
    await cancel_and_wait(task)
    [record] = [r for r in caplog.records if r.name == "kube.waiting"]
    assert record.exc_info is not None and "cleanup failed" in str(record.exc_info[1])
    assert record.task == "failing-task"  # type: ignore[attr-defined]


async def test_until_stop_signal_returns_on_sigterm_and_removes_its_handlers() -> None:
    loop = asyncio.get_running_loop()
    loop.call_later(0.05, os.kill, os.getpid(), signal.SIGTERM)
    await asyncio.wait_for(until_stop_signal(), 5)
    assert not loop.remove_signal_handler(signal.SIGTERM)  # none left behind
    assert not loop.remove_signal_handler(signal.SIGINT)


async def test_a_stop_signal_calls_the_callback_while_in_the_block() -> None:
    called = asyncio.Event()
    with on_stop_signals(called.set):
        os.kill(os.getpid(), signal.SIGINT)
        await asyncio.wait_for(called.wait(), 5)
