"""Workers for a keyed work queue that run only once there is work, until closed.

The hub's writers beside the engine (hub.import_outcomes, hub.kubectl_exports) are handed
keys from callbacks that must not block, often before or without an event loop task of their
own: the first key starts kube.workqueue.run_reconciler on the queue, and close shuts the
queue down (queued keys and pending retries dropped, later keys ignored) and ends the workers.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Hashable
from typing import Generic, TypeVar

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

    def add(self, key: K) -> None:
        """Queue `key` (nothing once closed), starting the workers if they are not running."""
        if self.closed:
            return
        self.queue.add(key)
        if not self.running:
            work = run_reconciler(self.queue, self._reconcile, workers=self._workers)
            self._task = asyncio.get_running_loop().create_task(work, name=self.queue.name)

    async def settled(self) -> None:
        """Until every key added so far was handled, retries included."""
        await self.queue.wait_idle()

    async def close(self) -> None:
        self.queue.shutdown()
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
