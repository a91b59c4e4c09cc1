"""Ending the ClusterSet: whether it ended, and deleting everything when it does.

The one holder of why the ClusterSet this engine serves ended ("" while it stands). Members
are refused with that reason (ClusterSetEnded) until a new ClusterSet is made. It ends here
(`end`: refuse, then delete every announce, export and import), or it is known to have
ended elsewhere (`adopt`: the leader ClusterSet CR was deleted while this replica did not
serve; whoever serves deletes), and with the kube store it stands again once the CR is made
again (`adopt("")`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from hub.engine.ledger import Ledger
from hub.errors import ClusterSetEnded
from hub.merge.ownership import ADMIN_OWNER
from hub.store.base import WriteBatch

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ClusterSetEnd:
    """What ending the ClusterSet deletes (a plan: revision 0) or deleted: everything."""

    members: list[str]
    exports: list[str]
    imports: list[str]
    revision: int = 0


class Ending:
    def __init__(self, ledger: Ledger) -> None:
        self._ledger = ledger
        self._reason = ""

    @property
    def reason(self) -> str:
        """Why the ClusterSet ended; "" while it stands."""
        return self._reason

    def refusal(self) -> ClusterSetEnded | None:
        """The refusal of a member's announce or export now (None while the ClusterSet stands)."""
        return ClusterSetEnded(self._reason) if self._reason else None

    def plan(self) -> ClusterSetEnd:
        """What `end` would delete now: every announce, export and import."""
        index = self._ledger.index
        return ClusterSetEnd(sorted(index.members), sorted(index.exports), sorted(index.imports))

    async def end(self, reason: str) -> ClusterSetEnd:
        """The ClusterSet was deleted: refuse members from now on (with `reason`) and delete
        every announce, export and import. Idempotent: run again, it deletes what is left."""
        ledger = self._ledger
        async with ledger.lock:
            self._reason = reason
            plan = self.plan()
            batch = WriteBatch(delete_exports=plan.exports, delete_imports=plan.imports, delete_members=plan.members)
            revision = await ledger.commit_and_publish(batch) if not batch.is_empty() else 0
        for owner in (*plan.members, ADMIN_OWNER):
            ledger.verdicts_bus.end(owner, reason)
        if not batch.is_empty():
            log.info(
                "clusterset ended",
                extra={"members": len(plan.members), "exports": len(plan.exports), "imports": len(plan.imports)},
            )
        return ClusterSetEnd(plan.members, plan.exports, plan.imports, revision)

    def adopt(self, reason: str) -> None:
        """The ClusterSet's end as it is known elsewhere (`reason`, or "" while it stands): the
        leader's ClusterSet CR was deleted, or made again. Members are refused, or admitted,
        from now on; nothing is deleted here (the serving replica's `end` does that)."""
        self._reason = reason
