"""The workers of a keyed work queue as one task: started once, closed with the queue.

A controller starts them (`start`) when it is ready, or lets the first key start them
(`add`: the hub's writers beside its engine are handed keys from callbacks that must not
block, often before any task of their own exists). `close` shuts the queue down (queued keys
and pending retries dropped, later keys ignored) and ends the workers.
"""

from __future__ import annotations

import asyncio
from collections.abc import Hashable
from typing import Generic, TypeVar

from kube.waiting import cancel_and_wait
from kube.workqueue import Reconcile, WorkQueue, run_reconciler

K = TypeVar("K", bound=Hashable)


class QueueWorker(Generic[K]):
    def __init__(self, queue: WorkQueue[K], reconcile: Reconcile[K], *, workers: int = 1) -> None:
        self.queue = queue
        self._reconcile = reconcile
        self._workers = workers
        self._task: asyncio.Task[None] | None = None

    @property
    def closed(self) -> bool:
        return self.queue.shutting_down

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self) -> None:
        """Start the workers, unless they run or the queue was closed."""
        if self.closed or self.running:
            return
        work = run_reconciler(self.queue, self._reconcile, workers=self._workers)
        self._task = asyncio.get_running_loop().create_task(work, name=self.queue.name)

    def add(self, key: K) -> None:
        """Queue `key` (nothing once closed), starting the workers if they are not running."""
        if self.closed:
            return
        self.queue.add(key)
        self.start()

    async def settled(self) -> None:
        """Until every key added so far was handled, retries included."""
        await self.queue.wait_idle()

    async def close(self) -> None:
        self.queue.shutdown()
        task, self._task = self._task, None
        await cancel_and_wait(task)
