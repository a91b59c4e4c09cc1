"""The member's import watch reads batched messages (Changes): each change applied as if it came
alone, the position moved to the message's revision only once that revision is complete.

The hub side is scripted here (a stream of messages): what a real hub sends is covered by
tests/integration/test_hub_watch.py and, through whole sessions, by test_session_imports.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import grpc
import pytest

from mcapi.mchub.v1 import common_area_pb2 as pb
from member.hubclient import Delete, Synced, Upsert
from member.hubclient.retry import HubRetry, RetryPacing
from member.hubclient.state import StateTracker
from member.hubclient.watch import ImportApplyError, ImportWatch, WatchSettings
from tests.member_hubclient.recorders import ImportRecorder

EPOCH = "epoch-1"


class _ScriptedCall:
    """One WatchImports call that answers with the script, then ends."""

    def __init__(self, script: Sequence[pb.WatchImportsResponse]) -> None:
        self._script = list(script)

    async def read(self) -> Any:
        await asyncio.sleep(0)
        return self._script.pop(0) if self._script else grpc.aio.EOF

    def cancel(self) -> bool:
        return True


class _ScriptedHub:
    def __init__(self, script: Sequence[pb.WatchImportsResponse]) -> None:
        self.script = script
        self.requests: list[pb.WatchImportsRequest] = []

    def WatchImports(self, request: pb.WatchImportsRequest, metadata: Any = ()) -> _ScriptedCall:
        self.requests.append(request)
        return _ScriptedCall(self.script)


def _upsert(name: str, revision: int) -> pb.ImportChange:
    return pb.ImportChange(revision=revision, upsert=pb.ResourceImport(import_name=name, name=name))


def _delete(name: str, revision: int) -> pb.ImportChange:
    return pb.ImportChange(revision=revision, delete=pb.ImportDelete(import_name=name))


def _changes(revision: int, *changes: pb.ImportChange) -> pb.WatchImportsResponse:
    response = pb.WatchImportsResponse(epoch=EPOCH, revision=revision)
    response.changes.changes.extend(changes)
    return response


def _synced(revision: int) -> pb.WatchImportsResponse:
    return pb.WatchImportsResponse(epoch=EPOCH, revision=revision, synced=pb.Synced(reason=pb.SYNCED_REASON_INITIAL))


async def _watch(
    script: Sequence[pb.WatchImportsResponse], consumer: Any, moves: list[int] | None = None
) -> tuple[ImportWatch, _ScriptedHub]:
    """Run one stream of the script through an ImportWatch; ``moves`` records every position."""
    hub = _ScriptedHub(script)
    settings = WatchSettings(RetryPacing(0.01, 0.01, 0.01))
    watch = ImportWatch(hub, "west", consumer, StateTracker(), settings)  # type: ignore[arg-type]
    if moves is not None:
        advance = watch._advance

        def recording(revision: int) -> None:
            advance(revision)
            moves.append(watch.position.revision)

        watch._advance = recording  # type: ignore[method-assign]
    await watch._stream(HubRetry(settings.pacing, StateTracker()))
    return watch, hub


async def test_the_member_asks_for_batches_and_applies_a_batched_snapshot_then_synced() -> None:
    recorder = ImportRecorder()
    script = [_changes(5, _upsert("a", 5), _upsert("b", 5)), _changes(5, _upsert("c", 5)), _synced(5)]
    watch, hub = await _watch(script, recorder)
    assert [r.batched for r in hub.requests] == [True]
    assert [type(e).__name__ for e in recorder.events] == ["Upsert", "Upsert", "Upsert", "Synced"]
    synced = recorder.events[-1]
    assert isinstance(synced, Synced) and synced.names == {"a", "b", "c"}
    assert watch.position.revision == 5 and watch.position.epoch == EPOCH


async def test_the_position_moves_to_a_message_revision_and_never_past_a_revision_still_incomplete() -> None:
    recorder = ImportRecorder()
    moves: list[int] = []
    script = [
        _synced(5),
        _changes(7, _upsert("a", 6), _upsert("b", 7)),
        # Revision 9 goes on in the next message: this one completes only 8.
        _changes(8, _upsert("c", 8), _delete("a", 9)),
        _changes(9, _upsert("d", 9)),
    ]
    watch, _ = await _watch(script, recorder, moves)
    assert [(type(e).__name__, getattr(e, "import_name", "")) for e in recorder.events[1:]] == [
        ("Upsert", "a"),
        ("Upsert", "b"),
        ("Upsert", "c"),
        ("Delete", "a"),
        ("Upsert", "d"),
    ]
    # Each change moves the position to its revision - 1, each message to its revision: 9 is
    # reached only with the message that completes it.
    assert moves == [5, 6, 7, 7, 8, 8, 8, 9]
    assert watch.position.revision == 9


async def test_a_change_that_fails_to_apply_keeps_the_position_below_its_revision() -> None:
    applied: list[str] = []

    async def consumer(event: Any) -> None:
        if isinstance(event, Upsert | Delete):
            if event.import_name == "bad":
                raise RuntimeError("cannot apply")
            applied.append(event.import_name)

    script = [_synced(5), _changes(8, _upsert("a", 6), _upsert("bad", 7), _upsert("c", 8))]
    hub = _ScriptedHub(script)
    settings = WatchSettings(RetryPacing(0.01, 0.01, 0.01))
    watch = ImportWatch(hub, "west", consumer, StateTracker(), settings)  # type: ignore[arg-type]
    with pytest.raises(ImportApplyError):
        await watch._stream(HubRetry(settings.pacing, StateTracker()))
    assert applied == ["a"]
    # As in the single form, applying a change of revision r moves the position to r - 1: the
    # watch resumes with all of 6 again, and then 7 (applying is idempotent).
    assert watch.position.revision == 5
