"""A watch's changes as messages: the single form, and batches bounded in changes and bytes whose
revision is where the watcher resumes."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
from hub.watch.encoded import Encoded, change_entry
from mcapi.delivery import delivers_to
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


def _decoded(responses: Iterable[Encoded | pb.WatchImportsResponse]) -> list[pb.WatchImportsResponse]:
    return [r.decoded() if isinstance(r, Encoded) else r for r in responses]


def _changes(responses: Iterable[Encoded | pb.WatchImportsResponse]) -> list[tuple[str, int, str]]:
    """(kind, revision, name) of every change, whichever form carried it."""
    out = []
    for response in _decoded(responses):
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
    assert [(r.WhichOneof("event"), r.revision, r.epoch) for r in _decoded(batched)] == [("changes", 7, EPOCH)]


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
    messages = _decoded(batched_deltas(batches, EPOCH, None, complete=9))
    assert [len(m.changes.changes) for m in messages] == [3, 3, 1]
    # The first message ends inside revision 11: only 10 is complete; the second ends with 11.
    assert [m.revision for m in messages] == [10, 11, 12]
    assert [name for _, _, name in _changes(messages)] == list("abcdefg")


def test_a_batch_stays_under_its_byte_limit_and_a_larger_change_goes_alone_in_the_single_form() -> None:
    small = [_batch(r, f"s{r}", padding=250) for r in (20, 21, 22, 23)]
    large = _batch(24, "large", padding=2000)
    changes = [*small, large, _batch(25, "t", padding=10)]
    messages = _decoded(batched_deltas(changes, EPOCH, None, complete=19, max_bytes=1000))
    assert [m.WhichOneof("event") for m in messages] == ["changes", "changes", "upsert", "changes"]
    assert all(m.changes.ByteSize() <= 1000 for m in messages if m.WhichOneof("event") == "changes")
    assert [len(m.changes.changes) for m in messages] == [3, 1, 0, 1]
    assert [m.revision for m in messages] == [22, 23, 24, 25]
    assert _changes(messages)[4] == ("upsert", 24, "large")


def test_a_batched_snapshot_carries_every_import_at_the_snapshot_revision(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(watch_batches, "MAX_BATCH_CHANGES", 2)
    messages = _decoded(batched_snapshot([_import(n) for n in "abcde"], EPOCH, 40))
    assert [len(m.changes.changes) for m in messages] == [2, 2, 1]
    assert {m.revision for m in messages} == {40}
    assert _changes(messages) == [("upsert", 40, n) for n in "abcde"]


def _built_for(audience: str | None, batches: list[ImportBatch], epoch: str, revision: int) -> bytes:
    """The Changes message a watcher gets for these batches, built and serialized for it alone by
    protobuf (as the hub did before it shared the encoding)."""
    response = pb.WatchImportsResponse(epoch=epoch, revision=revision)
    for batch in batches:
        for change in batch.changes:
            imp = change.resource
            if imp is not None and (audience is None or delivers_to(imp, audience)):
                response.changes.changes.append(pb.ImportChange(revision=batch.revision, upsert=imp))
            else:
                delete = pb.ImportDelete(import_name=change.import_name)
                response.changes.changes.append(pb.ImportChange(revision=batch.revision, delete=delete))
    return response.SerializeToString()


def _targeted_batch(revision: int) -> ImportBatch:
    """An import for every member, one for east only, west's ClusterInfo (for every member but west),
    and a delete."""
    west_info = pb.ResourceImport(import_name="west-info", cluster_info=pb.ClusterInfo(cluster_id="west"))
    changes = [
        ImportChange(revision, "all", _import("all")),
        ImportChange(revision, "east-only", _import("east-only", cluster_ids=("east",))),
        ImportChange(revision, "west-info", west_info),
        ImportChange(revision, "gone", None),
    ]
    return ImportBatch(revision, changes, EPOCH)


@pytest.mark.parametrize(
    ("epoch", "revision", "padding"),
    [(EPOCH, 7, 0), ("", 0, 0), ("f" * 32, 2**40, 200), ("e2", 300, 20_000)],
)
def test_the_shared_encoding_is_byte_for_byte_the_message_protobuf_builds_for_each_watcher(
    epoch: str, revision: int, padding: int
) -> None:
    """Empty and long epochs, zero and many-byte revisions, entries whose lengths take 1 to 3 bytes."""
    batches = [_batch(revision, "a", "b", padding=padding), _targeted_batch(revision + 1)]
    for audience in ("west", "east", "north", None):
        sent = list(batched_deltas(batches, epoch, audience, complete=revision))
        assert [m.data for m in sent] == [_built_for(audience, batches, epoch, revision + 1)]
        assert sent[0].revision == revision + 1


def test_watchers_filtered_differently_get_their_own_content_and_alike_ones_share_it() -> None:
    batch = _targeted_batch(5)
    seen = {a: _changes(batched_deltas([batch], EPOCH, a, 4)) for a in ("west", "east", "north", None)}
    assert [kind for kind, _, _ in seen["west"]] == ["upsert", "delete", "delete", "delete"]
    assert [kind for kind, _, _ in seen["east"]] == ["upsert", "upsert", "upsert", "delete"]
    assert [kind for kind, _, _ in seen["north"]] == ["upsert", "delete", "upsert", "delete"]
    assert seen[None] == seen["east"]  # the admin sees every import; east is meant for all of these
    # One encoding per way the batch is seen, not per watcher: east and the admin share theirs.
    assert sorted(batch.views) == [(False, False), (False, True), (True, True)]
    assert batch.seen_by("east") is batch.seen_by(None)
    # And the single form the same way: west's message for change 1 is the delete, east's the upsert.
    assert [m.decoded().WhichOneof("event") for m in single_deltas(batch, EPOCH, "west")][1:3] == ["delete"] * 2
    assert single_deltas(batch, EPOCH, "east")[0] is single_deltas(batch, EPOCH, "west")[0]


def test_a_change_is_encoded_once_per_batch_whatever_the_number_of_watchers(monkeypatch: pytest.MonkeyPatch) -> None:
    encoded: list[pb.ImportChange] = []

    def counting(change: pb.ImportChange) -> bytes:
        encoded.append(change)
        return change_entry(change)

    monkeypatch.setattr(watch_batches, "change_entry", counting)
    batches = [_batch(30, "a", "b"), _batch(31, "c")]
    messages = [list(batched_deltas(batches, EPOCH, f"w{n}", 29)) for n in range(100)]
    assert len(encoded) == 3
    assert len({m[0].data for m in messages}) == 1
    # A run of a batch's changes that fills a message whole is its encoding as is, not a copy.
    assert batches[0].seen_by("w0").data is batches[0].seen_by("w1").data


def test_a_batch_fits_the_smaller_of_the_hubs_and_the_watchers_message_limits() -> None:
    mib = 1024 * 1024
    assert batch_bytes(4 * mib, 0) == MAX_BATCH_BYTES
    assert batch_bytes(4 * mib, 64 * 1024) == 64 * 1024 - WATCH_ENVELOPE_BYTES
    assert batch_bytes(256 * 1024, 4 * mib) == 256 * 1024 - WATCH_ENVELOPE_BYTES
    assert batch_bytes(4 * mib, 10) == 1  # every change goes alone


def _packed_one_by_one(batches: list[ImportBatch], complete: int, max_bytes: int) -> list[tuple[str, int, int]]:
    """The packing rule, change by change: (form, revision, changes) of each message. A change goes
    in the message being filled if it fits in bytes and count, else the message goes first; a
    change larger than a batch goes alone; a message's revision is the last one complete in it."""
    out: list[tuple[str, int, int]] = []
    count = size = 0
    for batch in batches:
        for change in batch.changes:
            entry = len(change_entry(pb.ImportChange(revision=batch.revision, upsert=change.resource)))
            if entry > max_bytes or (count and (size + entry > max_bytes or count >= watch_batches.MAX_BATCH_CHANGES)):
                if count:
                    out.append(("changes", complete, count))
                count = size = 0
            if entry > max_bytes:
                out.append(("upsert", batch.revision, 1))
            else:
                count, size = count + 1, size + entry
        complete = batch.revision
    if count:
        out.append(("changes", complete, count))
    return out


@given(
    paddings=st.lists(st.lists(st.integers(0, 300), min_size=1, max_size=6), min_size=1, max_size=8),
    max_bytes=st.integers(60, 900),
    max_changes=st.integers(1, 7),
)
def test_runs_of_shared_entries_pack_as_the_changes_one_by_one_would(
    paddings: list[list[int]], max_bytes: int, max_changes: int
) -> None:
    batches = [
        ImportBatch(r, [ImportChange(r, f"i{r}-{n}", _import(f"i{r}-{n}", padding=p)) for n, p in enumerate(sizes)])
        for r, sizes in enumerate(paddings, start=10)
    ]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(watch_batches, "MAX_BATCH_CHANGES", max_changes)
        sent = _decoded(batched_deltas(batches, EPOCH, "west", 9, max_bytes))
        expected = _packed_one_by_one(batches, 9, max_bytes)
    got = [(m.WhichOneof("event") or "", m.revision, len(m.changes.changes) or 1) for m in sent]
    assert got == expected
    assert [name for _, _, name in _changes(sent)] == [c.import_name for b in batches for c in b.changes]
