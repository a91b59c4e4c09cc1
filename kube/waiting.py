"""Waiting without leaving a task behind: for an Event or a task, for tasks being cancelled,
and for the signal that stops a program.

`asyncio.wait` needs futures, so an Event's wait() becomes a task of its own. Cancelling that
task is not enough: until the loop runs it once more it is still pending, and a loop closed
in between destroys it pending ("Task was destroyed but it is pending"). Every task mchub
stops is therefore cancelled and then waited for, by ``cancel_and_wait``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Iterator
from typing import Any

log = logging.getLogger(__name__)


async def until_set_or_done(event: asyncio.Event, task: asyncio.Future[Any]) -> None:
    """Return once ``event`` is set or ``task`` is done (its result is not looked at)."""
    if event.is_set() or task.done():
        return
    waiter = asyncio.ensure_future(event.wait())
    try:
        await asyncio.wait({waiter, task}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        await cancel_and_wait(waiter)


async def cancel_and_wait(*tasks: asyncio.Future[Any] | None) -> None:
    """Cancel the tasks given and return once every one has ended.

    None, a task already done and the calling task itself (a task stopping what owns it) are
    passed over. asyncio.wait, not await: a task's own end is not the caller's error, and a
    cancellation of the caller still reaches the caller. An error a task ended with instead
    of its cancellation is logged (and so not left for asyncio to call never retrieved).
    """
    current = asyncio.current_task()
    pending = {task for task in tasks if task is not None and task is not current and not task.done()}
    if not pending:
        return
    for task in pending:
        task.cancel()
    await asyncio.wait(pending)
    for task in pending:
        error = None if task.cancelled() else task.exception()
        if error is not None:
            log.warning("a task ended with an error as it was stopped", exc_info=error, extra={"task": _name(task)})


def _name(task: asyncio.Future[Any]) -> str:
    return task.get_name() if isinstance(task, asyncio.Task) else repr(task)


@contextlib.contextmanager
def on_stop_signals(callback: Callable[[], object]) -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM call ``callback`` (where the loop can take signal
    handlers: its main thread, not Windows); the handlers are removed when the block ends."""
    loop = asyncio.get_running_loop()
    handled = []
    for sig in (signal.SIGINT, signal.SIGTERM):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, callback)
            handled.append(sig)
    try:
        yield
    finally:
        for sig in handled:
            loop.remove_signal_handler(sig)


async def until_stop_signal() -> None:
    """Return on SIGINT or SIGTERM: what a program serving until it is told to stop awaits."""
    stop = asyncio.Event()
    with on_stop_signals(stop.set):
        await stop.wait()
