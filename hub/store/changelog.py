"""Import changes kept in memory for watchers that resume: the kube store's, and a follower's.

One history (an epoch) from a base revision on. A watcher resuming after revision R gets the
changes since R, exactly; R before the base or compacted away (at most `keep` changes are
kept, whole revisions only, so a kept revision is never half there) is RevisionCompacted, R
after the newest revision RevisionInFuture, another epoch EpochMismatch: each answered with a
snapshot.
"""

from __future__ import annotations

from collections.abc import Iterable

from hub.store.base import ImportChange, check_resumable


class ChangeLog:
    def __init__(self, keep: int = 10_000) -> None:
        self._keep = keep
        self.epoch = ""
        # The newest revision of the history (it may have changed no import).
        self.revision = 0
        self._compacted_through = 0
        self._changes: list[ImportChange] = []

    @property
    def compacted_through(self) -> int:
        """The newest revision whose changes this log cannot give (its base, or what it compacted)."""
        return self._compacted_through

    def start(self, epoch: str, revision: int) -> None:
        """A new history at `revision`: nothing before it can be given exactly."""
        self.epoch, self.revision, self._compacted_through = epoch, revision, revision
        self._changes = []

    def append(self, revision: int, changes: Iterable[ImportChange]) -> None:
        """Revision `revision` and its import changes (none for one that changed no import)."""
        self.revision = revision
        self._changes.extend(changes)
        if len(self._changes) > self._keep:
            self._drop_through(self._changes[len(self._changes) - self._keep].revision - 1)

    def since(self, epoch: str, revision: int) -> list[ImportChange]:
        check_resumable(
            epoch,
            revision,
            held_epoch=self.epoch,
            held_revision=self.revision,
            compacted_through=self._compacted_through,
        )
        return [c for c in self._changes if c.revision > revision]

    def compact(self, keep_after: int) -> None:
        """Forget the changes of revisions up to `keep_after`."""
        self._drop_through(min(keep_after, self.revision))

    def _drop_through(self, revision: int) -> None:
        self._changes = [c for c in self._changes if c.revision > revision]
        self._compacted_through = max(self._compacted_through, revision)
