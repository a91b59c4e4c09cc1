"""A watch's changes as messages: the single form, and batches bounded in changes and bytes whose
revision is where the watcher resumes."""

from __future__ import annotations

import pytest

from hub.store.base import ImportChange
from hub.watch import batches as watch_batches
from hub.watch.batches import (
    MAX_BATCH_BYTES,
    WATCH_ENVELOPE_BYTES,
    ImportBatch,
    batch_bytes,
    batched_deltas,
    batched_snapshot,
    single_deltas,
)
from mcapi.mchub.v1 import common_area_pb2 as pb

EPOCH = "e1"


def _import(name: str, *, cluster_ids: tuple[str, ...] = (), padding: int = 0) -> pb.ResourceImport:
    imp = pb.ResourceImport(import_name=name, namespace="default", name=name, cluster_ids=list(cluster_ids))
    imp.service_import.type = "ClusterSetIP"
    if padding:
        imp.service_import.clusters.append("x" * padding)
    return imp


def _batch(revision: int, *names: str, padding: int = 0) -> ImportBatch:
    return ImportBatch(revision, [ImportChange(revision, n, _import(n, padding=padding)) for n in names], EPOCH)


def _changes(responses: list[pb.WatchImportsResponse]) -> list[tuple[str, int, str]]:
    """(kind, revision, name) of every change, whichever form carried it."""
    out = []
    for response in responses:
        kind = response.WhichOneof("event")
        if kind == "changes":
            for change in response.changes.changes:
                which = change.WhichOneof("change") or ""
                name = change.upsert.import_name if which == "upsert" else change.delete.import_name
                out.append((which, change.revision, name))
        else:
            name = response.upsert.import_name if kind == "upsert" else response.delete.import_name
            out.append((kind or "", response.revision, name))
    return out


def test_batched_deltas_carry_the_same_changes_as_the_single_form_in_one_message() -> None:
    batches = [_batch(5, "a", "b"), _batch(6, "c"), ImportBatch(7, [ImportChange(7, "a", None)], EPOCH)]
    single = [r for b in batches for r in single_deltas(b, EPOCH, "west")]
    batched = list(batched_deltas(batches, EPOCH, "west", complete=4))
    assert (
        _changes(batched)
        == _changes(single)
        == [
            ("upsert", 5, "a"),
            ("upsert", 5, "b"),
            ("upsert", 6, "c"),
            ("delete", 7, "a"),
        ]
    )
    assert len(single) == 4
    assert [(r.WhichOneof("event"), r.revision, r.epoch) for r in batched] == [("changes", 7, EPOCH)]


def test_an_import_no_longer_meant_for_the_watcher_is_a_delete_in_both_forms() -> None:
    batch = ImportBatch(3, [ImportChange(3, "east-only", _import("east-only", cluster_ids=("east",)))], EPOCH)
    assert _changes(list(batched_deltas([batch], EPOCH, "west", 2))) == [("delete", 3, "east-only")]
    assert _changes(single_deltas(batch, EPOCH, "west")) == [("delete", 3, "east-only")]
    assert _changes(list(batched_deltas([batch], EPOCH, "east", 2))) == [("upsert", 3, "east-only")]


def test_a_batch_holds_at_most_max_batch_changes_and_a_split_revision_is_not_complete_before_its_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(watch_batches, "MAX_BATCH_CHANGES", 3)
    batches = [_batch(10, "a", "b"), _batch(11, "c", "d", "e", "f"), _batch(12, "g")]
    messages = list(batched_deltas(batches, EPOCH, None, complete=9))
    assert [len(m.changes.changes) for m in messages] == [3, 3, 1]
    # The first message ends inside revision 11: only 10 is complete; the second ends with 11.
    assert [m.revision for m in messages] == [10, 11, 12]
    assert [name for _, _, name in _changes(messages)] == list("abcdefg")


def test_a_batch_stays_under_its_byte_limit_and_a_larger_change_goes_alone_in_the_single_form() -> None:
    small = [_batch(r, f"s{r}", padding=250) for r in (20, 21, 22, 23)]
    large = _batch(24, "large", padding=2000)
    changes = [*small, large, _batch(25, "t", padding=10)]
    messages = list(batched_deltas(changes, EPOCH, None, complete=19, max_bytes=1000))
    assert [m.WhichOneof("event") for m in messages] == ["changes", "changes", "upsert", "changes"]
    assert all(m.changes.ByteSize() <= 1000 for m in messages if m.WhichOneof("event") == "changes")
    assert [len(m.changes.changes) for m in messages] == [3, 1, 0, 1]
    assert [m.revision for m in messages] == [22, 23, 24, 25]
    assert _changes(messages)[4] == ("upsert", 24, "large")


def test_a_batched_snapshot_carries_every_import_at_the_snapshot_revision(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch_batches, "MAX_BATCH_CHANGES", 2)
    messages = list(batched_snapshot([_import(n) for n in "abcde"], EPOCH, 40))
    assert [len(m.changes.changes) for m in messages] == [2, 2, 1]
    assert {m.revision for m in messages} == {40}
    assert _changes(messages) == [("upsert", 40, n) for n in "abcde"]


def test_a_changes_message_is_as_large_as_its_entries_say() -> None:
    messages = list(batched_deltas([_batch(1, "a", padding=100), _batch(2, "b", padding=200)], EPOCH, None, 0))
    entries = [watch_batches._entry_bytes(c.ByteSize()) for c in messages[0].changes.changes]
    assert messages[0].changes.ByteSize() == sum(entries)
    assert watch_batches._entry_bytes(127) == 129 and watch_batches._entry_bytes(128) == 131


def test_a_change_is_built_and_measured_once_per_batch_whatever_the_number_of_watchers() -> None:
    batch = _batch(30, "a")
    first = next(iter(batched_deltas([batch], EPOCH, "west", 29))).changes.changes[0]
    again = next(iter(batched_deltas([batch], EPOCH, "east", 29))).changes.changes[0]
    assert first == again
    assert list(batch.made) == [(0, True)]
    change, size = batch.made[(0, True)]
    assert size == watch_batches._entry_bytes(change.ByteSize())


def test_a_batch_fits_the_smaller_of_the_hubs_and_the_watchers_message_limits() -> None:
    mib = 1024 * 1024
    assert batch_bytes(4 * mib, 0) == MAX_BATCH_BYTES
    assert batch_bytes(4 * mib, 64 * 1024) == 64 * 1024 - WATCH_ENVELOPE_BYTES
    assert batch_bytes(256 * 1024, 4 * mib) == 256 * 1024 - WATCH_ENVELOPE_BYTES
    assert batch_bytes(4 * mib, 10) == 1  # every change goes alone
