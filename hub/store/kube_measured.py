"""The CRs the kube store measured for the hub's size check, kept for the commit that writes them.

The engine measures every record of a write (Store.record_bytes, hub.engine.fit), then commits
that write. Turning a record into its CR (a pydantic model, then JSON) is the costly part of
both, about a second for a 2 MB export: the CR measured is kept here, with its size, and the
commit takes it instead of converting the record again. A record is known by its type and its
deterministic encoding, so one changed since it was measured is converted afresh.

A commit takes what it writes and forgets the rest: measures of a write the engine then refused,
in part or whole. Meanwhile at most `budget` bytes are kept, counting each CR's JSON and its key
(the record's encoding, about as large again); a record measured past that is converted again
when written, so a refused write never holds much memory.
"""

from __future__ import annotations

from typing import Any

from hub.store.kube_codec import cr_bytes, measured_cr
from mcapi.mchub.v1 import common_area_pb2 as pb

Record = pb.ResourceExport | pb.ResourceImport
RecordKind = type[pb.ResourceExport] | type[pb.ResourceImport]
# Room for a write of a few thousand records, or of several near MAX_CR_BYTES (1.4 MB).
DEFAULT_BUDGET = 16 * 1024 * 1024


class MeasuredCRs:
    def __init__(self, namespace: str, budget: int = DEFAULT_BUDGET) -> None:
        self._namespace = namespace
        self._budget = budget
        self._kept: dict[tuple[type, bytes], tuple[dict[str, Any], int]] = {}
        self._kept_bytes = 0

    def size(self, record: Record) -> int:
        """How large the CR of `record` is, as the size check counts it (kube_codec.measured_cr)."""
        key = _key(record)
        kept = self._kept.get(key)
        if kept is not None:
            return kept[1]
        cr = measured_cr(record, self._namespace, type(record))
        size = cr_bytes(cr)
        held = size + len(key[1])  # the key is the record's encoding: about as large again
        if self._kept_bytes + held <= self._budget:
            self._kept[key] = (cr, size)
            self._kept_bytes += held
        return size

    def take(self, record: object, kind: RecordKind) -> tuple[dict[str, Any], int]:
        """The CR of `record`, which must be a `kind` (kube_codec.InvalidRecord otherwise), and its
        size, for the commit that writes it: the one measured, or converted now. The CR is the
        caller's to change."""
        if isinstance(record, kind):
            key = _key(record)
            kept = self._kept.pop(key, None)
            if kept is not None:
                self._kept_bytes -= kept[1] + len(key[1])
                return kept
        cr = measured_cr(record, self._namespace, kind)
        return cr, cr_bytes(cr)

    def clear(self) -> None:
        self._kept.clear()
        self._kept_bytes = 0


def _key(record: Record) -> tuple[type, bytes]:
    return type(record), record.SerializeToString(deterministic=True)
