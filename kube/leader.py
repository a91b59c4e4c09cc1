"""Leader election with a coordination.k8s.io/v1 Lease.

Candidates race to write their identity into one Lease. The holder renews it
every ``retry_period``; the others take it over once they have seen it unchanged
for its leaseDurationSeconds, measured on their own clock from when they last
saw it change (so clock skew between replicas does not matter). A leader that has
not renewed for ``renew_deadline`` steps down (before its lease can expire for the
others), as does one that finds another holder in the Lease. On stop the leader
releases the Lease by clearing the holder, so a successor takes over at once.

A leader that stepped down only because it could not renew in time (a stalled process, a
slow API server) and then finds the Lease still naming it, untouched by anyone, takes it
back with its next attempt, which follows at once: the Lease keeps its acquireTime and
leaseTransitions (one tenure, as client-go records it), and the log says `leaseReacquired`
instead of `leaderElected`, so that an operator tells a hiccup from a failover.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Self

from kube.client import KubeClient
from kube.errors import AlreadyExists, Conflict, KubeError, NotFound
from kube.resources import LEASES
from kube.waiting import cancel_and_wait

log = logging.getLogger(__name__)

Callback = Callable[[], Awaitable[None]]


@dataclass(frozen=True)
class LeaseTiming:
    """Seconds. renew_deadline < lease_duration, so a leader gives up before others may take over."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def __post_init__(self) -> None:
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            raise ValueError("need 0 < retry_period < renew_deadline < lease_duration")


def _micro_time(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(
        self,
        client: KubeClient,
        namespace: str,
        name: str,
        identity: str,
        *,
        timing: LeaseTiming | None = None,
        on_started_leading: Callback | None = None,
        on_stopped_leading: Callback | None = None,
    ) -> None:
        """Callbacks are awaited in the election loop: they must return promptly (start long work as a task)."""
        self.client = client
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.timing = timing or LeaseTiming()
        self._on_started = on_started_leading
        self._on_stopped = on_stopped_leading
        self._leading = asyncio.Event()
        self._not_leading = asyncio.Event()
        self._not_leading.set()
        self._observed_spec: dict[str, Any] | None = None
        self._observed_at = 0.0
        # Whether the last successful attempt continued this elector's own tenure (the Lease named it).
        self._continued_tenure = False
        self._task: asyncio.Task[None] | None = None

    def is_leader(self) -> bool:
        return self._leading.is_set()

    async def wait_leading(self) -> None:
        await self._leading.wait()

    async def wait_not_leading(self) -> None:
        await self._not_leading.wait()

    @property
    def holder(self) -> str:
        """Another candidate holding the Lease, as this elector last saw it ("" if none, or if the
        Lease named this one): where callers refused by this candidate should go. A candidate that
        stepped down may still be named by a Lease it no longer renews; it must not send callers
        back to itself, and while it leads it needs no hint."""
        holder = self._observed_holder()
        return "" if holder == self.identity else holder

    def _observed_holder(self) -> str:
        return str((self._observed_spec or {}).get("holderIdentity") or "")

    # Lifecycle

    def start(self) -> asyncio.Task[None]:
        if self._task is None:
            self._task = asyncio.create_task(self.run(), name=f"leader-{self.namespace}/{self.name}")
        return self._task

    async def stop(self, release: bool = True) -> None:
        """Stop competing; a leader steps down and (unless ``release`` is False) frees the Lease."""
        task, self._task = self._task, None
        await cancel_and_wait(task)
        was_leading = self.is_leader()
        await self._step_down()
        if was_leading and release:
            await self._release()

    async def __aenter__(self) -> Self:
        self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    async def run(self) -> None:
        while True:
            await self._acquire()
            await self._become_leader()
            await self._renew_until_lost()
            await self._step_down()

    # Phases

    async def _acquire(self) -> None:
        while True:
            if await self._attempt():
                return
            # Jitter so that candidates freed at the same moment do not collide every time.
            await asyncio.sleep(self.timing.retry_period * random.uniform(1.0, 1.2))

    async def _renew_until_lost(self) -> None:
        loop = asyncio.get_running_loop()
        last_renew = loop.time()
        while True:
            await asyncio.sleep(self.timing.retry_period)
            remaining = self.timing.renew_deadline - (loop.time() - last_renew)
            try:
                async with asyncio.timeout(max(remaining, 0.001)):
                    renewed = await self._attempt()
            except TimeoutError:
                renewed = False
            if renewed:
                last_renew = loop.time()
                continue
            if self.holder:
                log.warning("leaseLost", extra={"lease": self._ref(), "holder": self.holder})
                return
            if loop.time() - last_renew >= self.timing.renew_deadline:
                log.warning("leaseRenewDeadlineExceeded", extra={"lease": self._ref()})
                return

    async def _become_leader(self) -> None:
        if self._continued_tenure:
            # The Lease still named this identity: a leader that stepped down after a missed
            # renewal, or a process restarted with the same identity before the Lease expired.
            log.info("leaseReacquired", extra={"lease": self._ref(), "identity": self.identity})
        else:
            log.info("leaderElected", extra={"lease": self._ref(), "identity": self.identity})
        self._not_leading.clear()
        self._leading.set()
        await self._callback(self._on_started)

    async def _step_down(self) -> None:
        if not self._leading.is_set():
            return
        log.info("leaderSteppedDown", extra={"lease": self._ref(), "identity": self.identity})
        self._leading.clear()
        self._not_leading.set()
        await self._callback(self._on_stopped)

    async def _callback(self, callback: Callback | None) -> None:
        if callback is None:
            return
        try:
            await callback()
        except asyncio.CancelledError:
            raise
        except Exception:
            log.exception("leaderCallbackFailed", extra={"lease": self._ref()})

    # One try

    async def _attempt(self) -> bool:
        """Acquire or renew once; False when someone else holds a live lease or the write lost a race."""
        try:
            return await self._try_acquire_or_renew()
        except (Conflict, AlreadyExists):
            return False  # another candidate wrote first
        except KubeError as err:
            log.warning("leaseUpdateFailed", extra={"lease": self._ref(), "error": str(err)})
            return False

    async def _try_acquire_or_renew(self) -> bool:
        loop = asyncio.get_running_loop()
        now = datetime.now(UTC)
        try:
            lease = await self.client.get(LEASES, self.name, self.namespace)
        except NotFound:
            spec = self._spec(now, None)
            self._continued_tenure = False
            await self.client.create(
                LEASES, {"metadata": {"name": self.name, "namespace": self.namespace}, "spec": spec}, self.namespace
            )
            self._observe(spec, loop.time())
            return True
        spec = lease.get("spec") or {}
        self._observe(spec, loop.time())
        holder = spec.get("holderIdentity") or ""
        if holder and holder != self.identity and not self._expired(loop.time()):
            return False
        new_spec = self._spec(now, spec)
        self._continued_tenure = holder == self.identity
        await self.client.replace(LEASES, {**lease, "spec": new_spec})
        self._observe(new_spec, loop.time())
        return True

    def _spec(self, now: datetime, current: dict[str, Any] | None) -> dict[str, Any]:
        current = current or {}
        renewing = current.get("holderIdentity") == self.identity
        transitions = int(current.get("leaseTransitions") or 0)
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": max(1, math.ceil(self.timing.lease_duration)),
            "acquireTime": current.get("acquireTime") if renewing else _micro_time(now),
            "renewTime": _micro_time(now),
            "leaseTransitions": transitions if renewing or not current else transitions + 1,
        }

    def _observe(self, spec: dict[str, Any], at: float) -> None:
        if spec != self._observed_spec:
            self._observed_spec = dict(spec)
            self._observed_at = at

    def _expired(self, now: float) -> bool:
        duration = float((self._observed_spec or {}).get("leaseDurationSeconds") or self.timing.lease_duration)
        return self._observed_at + duration <= now

    async def _release(self) -> None:
        now = _micro_time(datetime.now(UTC))
        try:
            # Read afresh: the last renewal may have been cut short by the stop, leaving a stale copy.
            lease = await self.client.get(LEASES, self.name, self.namespace)
            spec = dict(lease.get("spec") or {})
            if spec.get("holderIdentity") != self.identity:
                return
            spec.update({"holderIdentity": None, "leaseDurationSeconds": 1, "renewTime": now, "acquireTime": now})
            await self.client.replace(LEASES, {**lease, "spec": spec})
            log.info("leaseReleased", extra={"lease": self._ref(), "identity": self.identity})
        except KubeError as err:
            # Someone already holds it again, or the server is gone: it expires on its own.
            log.warning("leaseReleaseFailed", extra={"lease": self._ref(), "error": str(err)})

    def _ref(self) -> str:
        return f"{self.namespace}/{self.name}"
