"""The one reaction of the member's hub loops to a failed call (member.hubclient.retry)."""

from __future__ import annotations

import grpc
import pytest

from mcapi import names
from member.hubclient.errors import (
    NotJoinedHubError,
    PermanentHubError,
    ResumeHubError,
    TemporaryHubError,
)
from member.hubclient.retry import HubRetry, RetryPacing
from member.hubclient.state import StateTracker

PACING = RetryPacing(initial=1.0, maximum=8.0, permanent=60.0)


class _Asked:
    def __init__(self) -> None:
        self.times = 0

    def __call__(self) -> None:
        self.times += 1


def _joined() -> StateTracker:
    tracker = StateTracker()
    tracker.announced("e1", 10.0)
    return tracker


def _stream_retry(tracker: StateTracker) -> tuple[HubRetry, _Asked]:
    asked = _Asked()
    return HubRetry(PACING, tracker, ask_announce=asked), asked


@pytest.mark.parametrize("announcer", [False, True])
def test_a_lost_hub_shows_at_once_asks_for_an_announce_and_backs_off(announcer: bool) -> None:
    tracker = _joined()
    retry, asked = _stream_retry(tracker)
    if announcer:
        retry = HubRetry(PACING, tracker)
    delays = [retry.after(TemporaryHubError(grpc.StatusCode.UNAVAILABLE, "connection refused")) for _ in range(5)]
    assert not tracker.state.connected
    assert "cannot reach the leader" in tracker.state.last_error
    assert tracker.joined.is_set()  # the hub may be back at once: the streams need no new announce
    assert asked.times == (0 if announcer else 5)
    assert delays[0] == pytest.approx(1.0, rel=0.25)
    assert delays[-1] == pytest.approx(8.0, rel=0.25)  # doubling, capped


def test_success_starts_the_backoff_over() -> None:
    retry, _ = _stream_retry(_joined())
    for _ in range(4):
        retry.after(TemporaryHubError(grpc.StatusCode.DEADLINE_EXCEEDED, "slow"))
    retry.succeeded()
    assert retry.after(TemporaryHubError(grpc.StatusCode.DEADLINE_EXCEEDED, "slow")) == pytest.approx(1.0, rel=0.25)


def test_a_stream_leaves_other_transient_failures_to_the_announcer() -> None:
    tracker = _joined()
    retry, asked = _stream_retry(tracker)
    retry.after(TemporaryHubError(grpc.StatusCode.RESOURCE_EXHAUSTED, "busy"))
    assert tracker.state.connected and asked.times == 0


def test_the_announcer_reports_every_failure_of_its_own() -> None:
    tracker = _joined()
    HubRetry(PACING, tracker).after(TemporaryHubError(grpc.StatusCode.DEADLINE_EXCEEDED, "timed out"))
    assert not tracker.state.connected and not tracker.state.needs_operator


def test_a_refusal_of_who_we_are_needs_the_operator_and_waits_the_permanent_delay() -> None:
    tracker = _joined()
    retry, asked = _stream_retry(tracker)
    delay = retry.after(
        PermanentHubError(grpc.StatusCode.ALREADY_EXISTS, "east is taken", names.REASON_CLUSTER_ID_IN_USE)
    )
    assert delay == PACING.permanent
    assert not tracker.joined.is_set()  # streams wait until an announce is answered again
    assert tracker.state.needs_operator
    assert tracker.state.refused_reason == names.REASON_CLUSTER_ID_IN_USE
    assert asked.times == 1


@pytest.mark.parametrize("announcer", [False, True])
def test_not_joined_clears_joined_and_asks_for_an_announce(announcer: bool) -> None:
    tracker = _joined()
    retry, asked = _stream_retry(tracker)
    if announcer:
        retry = HubRetry(PACING, tracker)
    retry.after(NotJoinedHubError(grpc.StatusCode.FAILED_PRECONDITION, "not a member"))
    assert not tracker.joined.is_set()
    assert not tracker.state.needs_operator
    # The announcer says why in the state; a stream asks the announcer, which will.
    assert tracker.state.connected is not announcer
    assert asked.times == (0 if announcer else 1)


def test_a_resume_goes_again_after_the_initial_delay_and_changes_nothing() -> None:
    tracker = _joined()
    retry, asked = _stream_retry(tracker)
    for _ in range(3):
        retry.after(TemporaryHubError(grpc.StatusCode.UNAVAILABLE, "gone"))
    tracker.announced("e1", 10.0)
    assert retry.after(ResumeHubError(grpc.StatusCode.ABORTED, "fell behind")) == PACING.initial
    assert tracker.state.connected and asked.times == 3


def test_a_failure_of_our_own_only_backs_off() -> None:
    tracker = _joined()
    retry, asked = _stream_retry(tracker)
    assert retry.after(RuntimeError("apply failed")) == pytest.approx(1.0, rel=0.25)
    assert tracker.state.connected and tracker.joined.is_set() and asked.times == 0
