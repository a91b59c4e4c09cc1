"""The one reaction of the member's hub loops (announce, export stream, import watch) to a failed call.

Each loop used to classify errors itself, and they drifted: a watch told "not joined" kept
retrying on its backoff while the export stream asked for an announce. Here one rule says,
for every loop, what the session's state shows, whether the announcer is asked to try now,
and how long to wait:

* ABORTED (the hub asks to resume: a watch fell behind): at once, after the initial delay.
* The hub refuses who we are (token, cluster ID, ClusterSet; ``PermanentHubError``): the
  member is not joined; the state says so with the hub's words for the operator; the next
  attempt waits ``permanent`` seconds.
* FAILED_PRECONDITION (the hub does not know this member now): not joined; the announcer
  is asked, and streams wait for it (they wait on ``tracker.joined``).
* UNAVAILABLE (the hub or the network is gone): the state shows it at once, whichever loop
  noticed first, and the announcer is asked, since it tells soonest whether the hub is back.
* Anything else (deadline, overload, an import the member failed to apply): backoff.

The announcer reports every failure of its own (it is the loop that owns "connected"); the
streams report only what the announcer may not have seen yet (UNAVAILABLE, a refusal).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import grpc

from kube.backoff import Backoff, Retries
from member.hubclient.errors import HubCallError, NotJoinedHubError, PermanentHubError, ResumeHubError
from member.hubclient.state import StateTracker


@dataclass(frozen=True)
class RetryPacing:
    """Seconds between attempts: ``initial`` doubling up to ``maximum`` while the hub or the
    network fails, ``permanent`` while the hub refuses who we are (only the operator fixes it)."""

    initial: float
    maximum: float
    permanent: float


class HubRetry:
    """One loop's consecutive failures, and what each one means for the session."""

    def __init__(
        self,
        pacing: RetryPacing,
        tracker: StateTracker,
        *,
        ask_announce: Callable[[], None] | None = None,
    ) -> None:
        """``ask_announce``: make an announce due now (None: this loop is the announcer, and it
        reports every failure itself)."""
        self._pacing = pacing
        self._tracker = tracker
        self._ask_announce = ask_announce
        self._retries = Retries(Backoff(pacing.initial, pacing.maximum))

    def succeeded(self) -> None:
        """The hub answered: the next failure starts from the initial delay again."""
        self._retries.reset()

    def after(self, error: Exception) -> float:
        """Record ``error`` (a failed attempt); the seconds to wait before the next attempt."""
        if not isinstance(error, HubCallError):  # ours, not the hub's (an import failed to apply)
            return self._retries.next_delay()
        if isinstance(error, ResumeHubError):
            return self._pacing.initial
        announcer = self._ask_announce is None
        if isinstance(error, PermanentHubError):
            self._tracker.joined.clear()
            self._tracker.lost(error.message, needs_operator=True, reason=error.reason)
            self._announce()
            return self._pacing.permanent
        if isinstance(error, NotJoinedHubError):
            self._tracker.joined.clear()
        if announcer or error.code == grpc.StatusCode.UNAVAILABLE:
            self._tracker.lost(error.message, reason=error.reason)
        if isinstance(error, NotJoinedHubError) or error.code == grpc.StatusCode.UNAVAILABLE:
            self._announce()
        return self._retries.next_delay()

    def _announce(self) -> None:
        if self._ask_announce is not None:
            self._ask_announce()
