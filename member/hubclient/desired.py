"""The member's desired set of exports, and which of them the hub still has to hear about.

Pure bookkeeping, no I/O: the export stream takes pending names from here. Pending is a set
of names, not of versions, so rapid updates of one export coalesce into its latest value.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import grpc

from mcapi.mchub.v1 import common_area_pb2 as pb
from member.hubclient.pulse import Pulse


@dataclass(frozen=True)
class ExportRejection:
    """The hub (or the session, for an oversized export) refused one export for good.

    The export stays in the desired set but is not sent again until it changes.
    """

    code: grpc.StatusCode
    message: str


def _member_view(export: pb.ResourceExport) -> pb.ResourceExport:
    """A private copy without the fields only the hub sets."""
    copy = pb.ResourceExport()
    copy.CopyFrom(export)
    copy.ClearField("create_time")
    copy.ClearField("status")
    return copy


class DesiredExports:
    def __init__(self, max_export_bytes: int) -> None:
        self._max_bytes = max_export_bytes
        self._desired: dict[str, pb.ResourceExport] = {}
        # Names whose current desired state (value, or absence) the hub has not been sent.
        # A dict keeps first-change order, so older changes go first.
        self._pending: dict[str, None] = {}
        self._rejected: dict[str, tuple[pb.ResourceExport | None, ExportRejection]] = {}
        # Fired on every change, so the writer wakes up.
        self.changed = Pulse()

    # ---- what the member says ------------------------------------------------

    def put(self, export: pb.ResourceExport) -> ExportRejection | None:
        """Desire `export`; a rejection when it can never be sent (too large)."""
        if not export.export_name:
            raise ValueError("an export needs an export_name")
        value = _member_view(export)
        name = value.export_name
        if self._desired.get(name) == value:
            return None
        self._desired[name] = value
        self._rejected.pop(name, None)
        if value.ByteSize() > self._max_bytes:
            rejection = ExportRejection(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"export is {value.ByteSize()} bytes, more than the {self._max_bytes} a message may carry",
            )
            self._rejected[name] = (value, rejection)
            self._pending.pop(name, None)
            return rejection
        self._mark(name)
        return None

    def remove(self, export_name: str) -> None:
        rejected = self._rejected.pop(export_name, None)
        if export_name in self._desired or rejected is not None:
            self._desired.pop(export_name, None)
            self._mark(export_name)

    def replace_all(self, exports: Iterable[pb.ResourceExport]) -> list[tuple[str, ExportRejection]]:
        wanted = {e.export_name: e for e in exports}
        for name in [n for n in self._desired if n not in wanted]:
            self.remove(name)
        rejections = []
        for name, export in wanted.items():
            rejection = self.put(export)
            if rejection is not None:
                rejections.append((name, rejection))
        return rejections

    def _mark(self, name: str) -> None:
        self._pending[name] = None
        self.changed.fire()

    # ---- what the stream asks ------------------------------------------------

    def get(self, export_name: str) -> pb.ResourceExport | None:
        return self._desired.get(export_name)

    def names(self) -> frozenset[str]:
        return frozenset(self._desired)

    def is_current(self, export_name: str, value: pb.ResourceExport | None) -> bool:
        return self._desired.get(export_name) == value

    def rejection(self, export_name: str) -> ExportRejection | None:
        entry = self._rejected.get(export_name)
        return entry[1] if entry is not None else None

    def begin_sync(self) -> list[pb.ResourceExport]:
        """Everything sendable, for a sync bracket; the bracket makes every change moot."""
        self._pending.clear()
        return [v for n, v in self._desired.items() if n not in self._rejected]

    def has_pending(self, busy: set[str]) -> bool:
        return any(n not in busy for n in self._pending)

    def take_pending(self, busy: set[str], limit: int) -> list[tuple[str, pb.ResourceExport | None]]:
        """Up to `limit` changes to send, skipping names with a write in flight (they coalesce)."""
        taken: list[tuple[str, pb.ResourceExport | None]] = []
        for name in list(self._pending):
            if len(taken) >= limit:
                break
            if name in busy:
                continue
            del self._pending[name]
            taken.append((name, self._desired.get(name)))
        return taken

    def reject(self, export_name: str, value: pb.ResourceExport | None, rejection: ExportRejection) -> bool:
        """The hub refused this write; True when it refused the current desired state."""
        if not self.is_current(export_name, value):
            return False  # it changed since; the new value gets its own chance
        if value is None:
            return True  # a refused delete: the export is not ours to delete, nothing to retry
        self._rejected[export_name] = (value, rejection)
        self._pending.pop(export_name, None)
        self.changed.fire()
        return True
