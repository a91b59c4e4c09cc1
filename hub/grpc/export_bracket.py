"""The Export stream's state: idle, or inside a sync bracket.

    idle --sync_begin--> bracket --sync_end--> idle

Upserts and deletes are allowed in both states; in a bracket they also mark
which names the member still has (an upsert mentions a name, a delete drops
it), and sync_end sweeps the caller's exports the bracket did not mention. A
sync_begin in a bracket or a sync_end outside one is out of order: it raises
OutOfOrder and changes nothing (the stream then ends; see the proto).
"""

from __future__ import annotations

from hub.errors import OutOfOrder


class SyncBracket:
    def __init__(self) -> None:
        # None when idle; else the names mentioned since sync_begin.
        self._mentioned: set[str] | None = None

    def begin(self) -> None:
        if self._mentioned is not None:
            raise OutOfOrder(
                "sync_begin while a sync bracket is open; end it with sync_end first "
                "(the open bracket is abandoned: nothing was swept)"
            )
        self._mentioned = set()

    def mention(self, export_name: str) -> None:
        if self._mentioned is not None:
            self._mentioned.add(export_name)

    def drop(self, export_name: str) -> None:
        if self._mentioned is not None:
            self._mentioned.discard(export_name)

    def mentioned(self) -> set[str]:
        """What to keep at sync_end; raises OutOfOrder outside a bracket. Does not close it."""
        if self._mentioned is None:
            raise OutOfOrder("sync_end without a sync_begin")
        return set(self._mentioned)

    def end(self) -> None:
        """Close the bracket once its sweep is done."""
        self._mentioned = None
