"""Waiting for whichever comes first, an Event or the end of a task, without leaving a task behind.

`asyncio.wait` needs futures, so an Event's wait() becomes a task of its own. Cancelling that
task is not enough: until the loop runs it once more it is still pending, and a loop closed
in between destroys it pending ("Task was destroyed but it is pending"). Here it is cancelled
and then waited for.
"""

from __future__ import annotations

import asyncio
from typing import Any


async def until_set_or_done(event: asyncio.Event, task: asyncio.Future[Any]) -> None:
    """Return once ``event`` is set or ``task`` is done (its result is not looked at)."""
    if event.is_set() or task.done():
        return
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({waiter, task}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not waiter.done():
            waiter.cancel()
            # asyncio.wait, not await: a cancellation of the caller still reaches the caller.
            await asyncio.wait({waiter})
