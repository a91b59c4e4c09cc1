"""Listeners that record what a session tells the member, and let a test await what it expects."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from mcapi.mchub.v1 import common_area_pb2 as pb
from member.hubclient import Delete, ExportRejection, ImportEvent, Synced, Upsert
from member.hubclient.pulse import Pulse

WAIT = 10.0


@dataclass
class ImportRecorder:
    """An import consumer that applies events to `applied`, like a member would."""

    events: list[ImportEvent] = field(default_factory=list)
    applied: dict[str, pb.ResourceImport] = field(default_factory=dict)
    pulse: Pulse = field(default_factory=Pulse)

    async def __call__(self, event: ImportEvent) -> None:
        self.events.append(event)
        if isinstance(event, Upsert):
            self.applied[event.import_name] = event.resource
        elif isinstance(event, Delete):
            self.applied.pop(event.import_name, None)
        elif isinstance(event, Synced):
            for name in event.stale_names:
                self.applied.pop(name, None)
        self.pulse.fire()

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        async with asyncio.timeout(WAIT):
            await self.pulse.wait_until(predicate)

    def since(self, start: int) -> list[ImportEvent]:
        return self.events[start:]


@dataclass
class VerdictRecorder:
    """on_verdict and on_rejected listeners."""

    verdicts: list[tuple[str, pb.ExportStatus]] = field(default_factory=list)
    rejections: list[tuple[str, ExportRejection]] = field(default_factory=list)
    pulse: Pulse = field(default_factory=Pulse)

    def on_verdict(self, name: str, status: pb.ExportStatus) -> None:
        self.verdicts.append((name, status))
        self.pulse.fire()

    def on_rejected(self, name: str, rejection: ExportRejection) -> None:
        self.rejections.append((name, rejection))
        self.pulse.fire()

    def latest(self, name: str) -> pb.ExportStatus | None:
        for seen, status in reversed(self.verdicts):
            if seen == name:
                return status
        return None

    async def wait_for(self, predicate: Callable[[], bool]) -> None:
        async with asyncio.timeout(WAIT):
            await self.pulse.wait_until(predicate)
