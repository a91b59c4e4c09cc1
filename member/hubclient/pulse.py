"""A change signal many waiters can block on until a condition of their choosing holds."""

from __future__ import annotations

import asyncio
from collections.abc import Callable


class Pulse:
    """`fire()` after changing some state; `wait_until(predicate)` re-checks on every fire."""

    def __init__(self) -> None:
        self._event = asyncio.Event()

    def fire(self) -> None:
        # Waiters hold the old event; a fresh one makes the next wait block again.
        self._event.set()
        self._event = asyncio.Event()

    async def wait(self) -> None:
        """Until the next fire."""
        await self._event.wait()

    async def wait_until(self, predicate: Callable[[], bool]) -> None:
        """Return once `predicate()` is true (bound it with `asyncio.timeout`)."""
        while not predicate():
            await self._event.wait()


async def sleep_or(event: asyncio.Event, delay: float) -> bool:
    """Sleep `delay` seconds unless `event` is set first; True when the event ended the sleep."""
    if event.is_set():
        return True
    try:
        async with asyncio.timeout(delay):
            await event.wait()
    except TimeoutError:
        return False
    return True
