"""until_set_or_done: returns on the first of the two and leaves no task of its own pending."""

from __future__ import annotations

import asyncio

import pytest

from kube.waiting import until_set_or_done


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
