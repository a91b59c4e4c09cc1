"""Whether what an upsert would write fits where it goes: the store, and members' watches.

A record the store cannot hold (Store.max_record_bytes) fails the whole batch it is written
in: the caller would hear UNAVAILABLE, retry for ever, and hold up every export sent with it.
An import larger than the hub's largest gRPC message could be stored but never reach a member.
Both are bad input, so both are decided before the commit, on the write the merge made: the
export to blame is refused (TooLarge: INVALID_ARGUMENT, HTTP 400) and the exports before it
are written, as with any refusal of the call (Engine.upsert_many).

The export to blame is the first of the call, in order, with which its merge group
(hub.merge.grouping) stops fitting: the export itself too large, or the import its group
makes grown past the limit (an Endpoints import concatenates every exporter's endpoints, so
each export may be small and their import still too large). Groups are merged again one
prefix at a time only when something did not fit, and only the groups that did not.

Deletes (an export's, the end of a sync bracket, a member's removal) are checked too
(`RecordLimits.first_misfit`, `refusal`), though they mostly shrink records: with strict ports,
the exports whose ports differ from the oldest's are skipped and their endpoints left out, and
deleting the oldest lets them in, so the Endpoints import can grow past a limit. Such a delete
is refused (TooLarge) rather than left to fail in the store, or to make an import no member can
be sent; nothing of it is written. (Ending the ClusterSet deletes every record: nothing grows.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from hub.errors import TooLarge, quote
from hub.merge import GroupKey, group_key, import_names_for_group
from hub.store.base import Store, WriteBatch
from hub.watch.batches import WATCH_ENVELOPE_BYTES
from mcapi.mchub.v1 import common_area_pb2 as pb


@dataclass(frozen=True)
class Planned:
    """What upserting some exports writes: the exports as stored, by name (those back to what is
    stored left out), and the write the merge makes of them (None when there is nothing to write)."""

    latest: dict[str, pb.ResourceExport]
    batch: WriteBatch | None


# The plan of an upsert of these exports, in this order (the engine's: Engine._plan).
Plan = Callable[[Sequence[pb.ResourceExport]], Planned]


@dataclass(frozen=True)
class Oversize:
    """A record of a write that does not fit, and why."""

    kind: str  # "export" or "import"
    name: str
    size: int
    limit: int
    too_large: str  # "too large for the hub's store", ...
    measured: str  # "as the store keeps it", ...


class RecordLimits:
    """The limits records are held to: the store's, and for imports, the watch's message size."""

    def __init__(self, store: Store, max_message_bytes: int) -> None:
        self._store = store
        self._max_message_bytes = max_message_bytes

    def oversize(self, record: pb.ResourceExport | pb.ResourceImport) -> Oversize | None:
        if isinstance(record, pb.ResourceImport):
            kind, name = "import", record.import_name
        else:
            kind, name = "export", record.export_name
        limit = self._store.max_record_bytes
        if limit is not None and (size := self._store.record_bytes(record)) > limit:
            return Oversize(kind, name, size, limit, "too large for the hub's store", "as the store keeps it")
        if kind == "import" and (size := record.ByteSize() + WATCH_ENVELOPE_BYTES) > self._max_message_bytes:
            limit = self._max_message_bytes
            return Oversize(kind, name, size, limit, "too large to deliver to members", "in a WatchImports message")
        return None

    def first_misfit(self, batch: WriteBatch) -> Oversize | None:
        """The first record `batch` puts that does not fit (any write: one of deletes, too)."""
        records: list[pb.ResourceExport | pb.ResourceImport] = [*batch.put_exports, *batch.put_imports]
        for record in records:
            if (oversize := self.oversize(record)) is not None:
                return oversize
        return None

    def misfits(self, batch: WriteBatch) -> dict[GroupKey, Oversize]:
        """The groups of the batch with a record that does not fit (the first found of each)."""
        keys = {group_key(e) for e in batch.put_exports}
        # A write of puts only holds an export of every group it touched: its imports map back.
        group_of_import = {name: key for key in keys for name in import_names_for_group(key)}
        found: dict[GroupKey, Oversize] = {}
        for export in batch.put_exports:
            if (oversize := self.oversize(export)) is not None:
                found.setdefault(group_key(export), oversize)
        for imp in batch.put_imports:
            if (oversize := self.oversize(imp)) is not None:
                found.setdefault(group_of_import[imp.import_name], oversize)
        return found


@dataclass(frozen=True)
class Fitted:
    """How many of the admitted exports are written, what they write, and the refusal of the next."""

    kept: int
    planned: Planned
    refusal: TooLarge | None


def fit(exports: Sequence[pb.ResourceExport], plan: Plan, limits: RecordLimits) -> Fitted:
    """The longest prefix of `exports` whose write fits, and the refusal of the export after it."""
    kept, refusal = len(exports), None
    while True:  # each round keeps fewer exports; none kept writes nothing
        planned = plan(exports[:kept])
        misfits = limits.misfits(planned.batch) if planned.batch is not None else {}
        if not misfits:
            return Fitted(kept, planned, refusal)
        kept, refusal = _blame(exports[:kept], misfits, plan, limits)


def _blame(
    exports: Sequence[pb.ResourceExport], misfits: dict[GroupKey, Oversize], plan: Plan, limits: RecordLimits
) -> tuple[int, TooLarge]:
    first: tuple[int, Oversize] | None = None
    for n, export in enumerate(exports):
        key = group_key(export)
        if key not in misfits:
            continue
        first = first or (n, misfits[key])
        batch = plan([e for e in exports[: n + 1] if group_key(e) == key]).batch
        oversize = limits.misfits(batch).get(key) if batch is not None else None
        if oversize is not None:
            return n, _refusal(export, oversize)
    # Reachable: no prefix of the group, merged alone, is too large, yet the call's write of it
    # is. A group's merge reads only its own exports but for two things: a new label identity
    # takes the lowest ID the write's other groups left free (alone, it may get a shorter one;
    # tests/integration/test_hub_record_limits.py shows it), and a new export name sent twice in
    # one call under two groups (a dash-ambiguous Service name, a renamed policy) is in both
    # groups alone but in the last one only in the whole write. The group's first export of the
    # call is refused then, and fit's next round checks what is left. `first` is set: a group
    # the write holds has an export of the call (regroup merges only the groups they are in).
    assert first is not None, "a group that does not fit holds an export of the call"
    n, oversize = first
    return n, _refusal(exports[n], oversize)


def refusal(cause: str, oversize: Oversize) -> TooLarge:
    """The refusal of `cause` ("export 'x'", "deleting export 'x'"), which would make `oversize`."""
    return TooLarge(
        f"{cause} would make {oversize.kind} {quote(oversize.name)} {oversize.too_large} ({_sizes(oversize)})"
    )


def _refusal(export: pb.ResourceExport, oversize: Oversize) -> TooLarge:
    if oversize.kind == "export" and oversize.name == export.export_name:
        return TooLarge(f"export {quote(export.export_name)} is {oversize.too_large} ({_sizes(oversize)})")
    return refusal(f"export {quote(export.export_name)}", oversize)


def _sizes(oversize: Oversize) -> str:
    return f"{oversize.size} bytes {oversize.measured}, at most {oversize.limit}"
