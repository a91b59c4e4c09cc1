"""Announce at start and every heartbeat interval: the hub keeps the member Connected on it."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass

from kube.workqueue import WorkQueue, run_reconciler
from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc
from member.hubclient.connection import CallMetadata
from member.hubclient.errors import classify
from member.hubclient.retry import HubRetry, RetryPacing
from member.hubclient.state import StateTracker

log = logging.getLogger(__name__)

# When the hub does not say (a zero in AnnounceResponse), Antrea's interval.
DEFAULT_HEARTBEAT = 10.0
# The work queue's one key.
_ANNOUNCE = "announce"


@dataclass(frozen=True)
class AnnounceSettings:
    pacing: RetryPacing
    call_timeout: float
    # Overrides the hub's interval (tests); None: use the hub's.
    heartbeat_interval: float | None = None
    metadata: CallMetadata = ()  # the token, on every call


class Announcer:
    """One key of a work queue, level-based: announce when ``due``. A success makes the next
    announce due a heartbeat interval later, a failure after the backoff delay; ``poke`` (a
    stream lost the hub, or was told we are not joined) makes it due now, unless the hub is
    failing: a failing hub is not asked again before its delay, whatever the streams say."""

    def __init__(
        self,
        stub: pb_grpc.CommonAreaServiceAsyncStub,
        request: Callable[[], pb.AnnounceRequest],
        tracker: StateTracker,
        settings: AnnounceSettings,
        name: str = "",
    ) -> None:
        """``request()``: the announce to send now (what the member says of its cluster may change)."""
        self._stub = stub
        self._request = request
        self._tracker = tracker
        self._settings = settings
        self._queue: WorkQueue[str] = WorkQueue(f"announce-{name}")
        self._retry = HubRetry(settings.pacing, tracker)  # the announcer reports its own failures
        self._due = 0.0  # loop time of the next announce
        self._quiet_until = 0.0  # after a failure: no announce before then, poked or not
        self.attempts = 0

    def poke(self) -> None:
        now = asyncio.get_running_loop().time()
        if now < self._quiet_until:
            return
        self._due = now
        self._queue.add(_ANNOUNCE)

    async def run(self) -> None:
        """Announce now, then whenever due, until cancelled."""
        self._queue.add(_ANNOUNCE)
        try:
            await run_reconciler(self._queue, self._announce)
        finally:
            self._queue.shutdown()

    async def _announce(self, key: str) -> float:
        """Announce if due; the seconds until the next announce is due."""
        loop = asyncio.get_running_loop()
        started = loop.time()
        if started < self._due:
            return self._due - started  # an earlier schedule, overtaken by a poke
        self.attempts += 1
        try:
            response = await self._stub.Announce(
                self._request(), timeout=self._settings.call_timeout, metadata=self._settings.metadata
            )
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            error = classify(exc)
            delay = self._retry.after(error)
            log.warning(
                "announce failed",
                extra={"code": error.code.name, "details": error.details, "retryInSeconds": round(delay, 3)},
            )
            self._due = self._quiet_until = loop.time() + delay
            return delay
        self._retry.succeeded()
        interval = self._settings.heartbeat_interval or float(response.heartbeat_interval_seconds or DEFAULT_HEARTBEAT)
        if not self._tracker.state.connected:
            log.info(
                "announced to the leader",
                extra={"leaderClusterID": response.leader_cluster_id, "epoch": response.epoch},
            )
        self._tracker.announced(response.epoch, interval, response.global_cidr, response.globally_addressed)
        if self._due <= started:  # not poked meanwhile (a poke made it due again: announce at once)
            self._due = loop.time() + interval
        return max(self._due - loop.time(), 0.0)
