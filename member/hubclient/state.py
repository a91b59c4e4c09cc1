"""The session's connection state, as the member writes it into ClusterSet status."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime

from member.hubclient.pulse import Pulse

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ConnectionState:
    """What the member knows of its leader.

    connected: the last Announce succeeded and no stream has lost the hub since.
    last_error: why not, as a sentence for a condition message ("" when connected).
    needs_operator: the hub refused who we are (token, ClusterSet ID); retrying alone won't fix it.
    refused_reason: the kind of the hub's refusal of who we are, when it said (ClusterIDInUse,
    ClusterIDImmutable; mcapi.names), "" otherwise.
    epoch, heartbeat_interval: as the hub last said in AnnounceResponse.
    global_cidr, globally_addressed: the member's global block and verdict, as the hub last said
    in AnnounceResponse (hub.merge.global_addressing).
    exports_synced: the Export stream's sync bracket completed on the current stream.
    imports_synced: the watch delivered Synced or Resumed on the current stream.
    since: when `connected` last flipped.
    """

    connected: bool = False
    last_error: str = ""
    needs_operator: bool = False
    refused_reason: str = ""
    epoch: str = ""
    heartbeat_interval: float = 0.0
    global_cidr: str = ""
    globally_addressed: bool = False
    exports_synced: bool = False
    imports_synced: bool = False
    since: datetime = dataclasses.field(default_factory=lambda: datetime.now(UTC))


StateListener = Callable[[ConnectionState], None]


class StateTracker:
    """Holds the state, tells the listener of every change, and lets tasks await conditions."""

    def __init__(self, on_change: StateListener | None = None) -> None:
        self._state = ConnectionState()
        self._on_change = on_change
        self._pulse = Pulse()
        # Set while the hub knows this member (an Announce succeeded); streams wait for it.
        self.joined = asyncio.Event()

    @property
    def state(self) -> ConnectionState:
        return self._state

    def update(self, **changes: object) -> None:
        new = dataclasses.replace(self._state, **changes)  # type: ignore[arg-type]
        if new.connected != self._state.connected:
            new = dataclasses.replace(new, since=datetime.now(UTC))
        if new == self._state:
            return
        self._state = new
        self._pulse.fire()
        if self._on_change is not None:
            try:
                self._on_change(new)
            except Exception:  # a listener's bug must not stop the session
                log.exception("state listener failed")

    def announced(
        self, epoch: str, heartbeat_interval: float, global_cidr: str = "", globally_addressed: bool = False
    ) -> None:
        self.joined.set()
        self.update(
            connected=True,
            last_error="",
            needs_operator=False,
            refused_reason="",
            epoch=epoch,
            heartbeat_interval=heartbeat_interval,
            global_cidr=global_cidr,
            globally_addressed=globally_addressed,
        )

    def lost(self, message: str, *, needs_operator: bool = False, reason: str = "") -> None:
        self.update(connected=False, last_error=message, needs_operator=needs_operator, refused_reason=reason)

    async def wait_until(self, predicate: Callable[[ConnectionState], bool]) -> None:
        await self._pulse.wait_until(lambda: predicate(self._state))
