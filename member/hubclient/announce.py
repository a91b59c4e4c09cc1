"""Announce at start and every heartbeat interval: the hub keeps the member Connected on it."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

from mcapi.mchub.v1 import common_area_pb2 as pb
from mcapi.mchub.v1 import common_area_pb2_grpc as pb_grpc
from member.hubclient.backoff import Backoff
from member.hubclient.connection import CallMetadata
from member.hubclient.errors import PermanentHubError, classify
from member.hubclient.pulse import sleep_or
from member.hubclient.state import StateTracker

log = logging.getLogger(__name__)

# When the hub does not say (a zero in AnnounceResponse), Antrea's interval.
DEFAULT_HEARTBEAT = 10.0


@dataclass(frozen=True)
class AnnounceSettings:
    initial_backoff: float
    max_backoff: float
    permanent_retry_delay: float
    call_timeout: float
    # Overrides the hub's interval (tests); None: use the hub's.
    heartbeat_interval: float | None = None
    metadata: CallMetadata = ()  # the token, on every call


class Announcer:
    def __init__(
        self,
        stub: pb_grpc.CommonAreaServiceAsyncStub,
        request: pb.AnnounceRequest,
        tracker: StateTracker,
        settings: AnnounceSettings,
    ) -> None:
        self._stub = stub
        self._request = request
        self._tracker = tracker
        self._settings = settings
        # Set by streams that lost the hub or were told we are not joined: announce now.
        self._poked = asyncio.Event()
        self.attempts = 0

    def poke(self) -> None:
        self._poked.set()

    async def run(self) -> None:
        backoff = Backoff(self._settings.initial_backoff, self._settings.max_backoff)
        while True:
            self._poked.clear()
            self.attempts += 1
            try:
                response = await self._stub.Announce(
                    self._request, timeout=self._settings.call_timeout, metadata=self._settings.metadata
                )
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                error = classify(exc)
                permanent = isinstance(error, PermanentHubError)
                if permanent:
                    self._tracker.joined.clear()
                self._tracker.lost(error.message, needs_operator=permanent)
                delay = self._settings.permanent_retry_delay if permanent else backoff.next_delay()
                log.warning(
                    "announce failed",
                    extra={"code": error.code.name, "details": error.details, "retryInSeconds": round(delay, 3)},
                )
                # A failing hub is not asked again before the delay, whatever the streams say.
                await asyncio.sleep(delay)
                continue
            backoff.reset()
            interval = self._settings.heartbeat_interval or float(
                response.heartbeat_interval_seconds or DEFAULT_HEARTBEAT
            )
            if not self._tracker.state.connected:
                log.info(
                    "announced to the leader",
                    extra={"leaderClusterID": response.leader_cluster_id, "epoch": response.epoch},
                )
            self._tracker.announced(response.epoch, interval)
            await sleep_or(self._poked, interval)
