"""The parts of a controller process, started in order and stopped in reverse: teardown written once.

controller-runtime's Manager and Runnable, asyncio-native and small. A ``Runnable`` has
``start()``, which returns once the part is ready (its caches synced, its workers running) or
raises, and ``stop()``, which undoes whatever ``start()`` got done: also after a ``start()``
that failed or was cancelled half-way, so that no part needs a teardown of its own on its way up.

``Manager.start()`` starts its runnables one after another, each ready before the next starts.
When one fails (or the start is cancelled), that one and every one started before it are
stopped, in reverse, and the error is raised. ``Manager.stop()`` stops them in reverse, goes on
past a stop that fails, and raises the first failure at the end. A Manager is a Runnable
itself: parts nest (a group that its owner stops ahead of the rest).

``Watches`` is a controller's first part: its informers, ready once every first list is in.
``Step`` makes a part of two coroutine functions, for a process whose parts are its own methods.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Coroutine, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from kube.informer import Informer

log = logging.getLogger(__name__)


class Runnable(Protocol):
    async def start(self) -> None:
        """Return once ready; raise when it cannot be (stop() is called even then)."""

    async def stop(self) -> None:
        """Undo what start() got done, however far it got; a no-op when there is nothing to undo."""


class Manager:
    def __init__(self, name: str, runnables: Iterable[Runnable] = ()) -> None:
        self.name = name
        self._runnables = list(runnables)
        self._started: list[Runnable] = []  # in start order; a failed start's runnable included
        self._running = False

    async def start(self) -> None:
        if self._running:
            raise RuntimeError(f"{self.name} is already started")
        self._running = True
        for runnable in self._runnables:
            self._started.append(runnable)  # stopped too if its own start fails half-way
            try:
                await runnable.start()
            except BaseException:
                await self._stop_started()  # what failed there is logged; the start's error is raised
                raise

    async def stop(self) -> None:
        failure = await self._stop_started()
        if failure is not None:
            raise failure

    async def _stop_started(self) -> BaseException | None:
        """Stop what was started, in reverse, each whatever the others do; the first failure."""
        first: BaseException | None = None
        started, self._started = self._started, []
        self._running = False
        for runnable in reversed(started):
            try:
                await runnable.stop()
            except BaseException as err:  # the others are stopped all the same
                log.error(
                    "runnableStopFailed",
                    extra={"manager": self.name, "runnable": type(runnable).__name__, "error": repr(err)},
                    exc_info=not isinstance(err, asyncio.CancelledError),
                )
                first = first or err
        return first


@dataclass(frozen=True)
class Step:
    """A Runnable of two coroutine functions; ``stop`` must cope with a ``start`` that got part of the way."""

    start: Callable[[], Coroutine[Any, Any, None]]
    stop: Callable[[], Coroutine[Any, Any, None]]


class Watches:
    """A controller's informers as one Runnable: ``start()`` starts them one after another and
    returns once each has its first list in its cache (TimeoutError after ``sync_timeout``
    seconds for all of them; None: no limit); ``stop()`` stops them."""

    def __init__(self, *informers: Informer, sync_timeout: float | None = None) -> None:
        self._informers = list(informers)
        self.sync_timeout = sync_timeout

    async def start(self) -> None:
        async with asyncio.timeout(self.sync_timeout):
            for informer in self._informers:
                await informer.wait_synced()

    async def stop(self) -> None:
        for informer in self._informers:
            await informer.stop()
