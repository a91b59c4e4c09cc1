"""What members said about applying their imports (ReportImportStatus), kept in memory.

By import name, then by reporting cluster. Reports go with the import they are about and
with the member that made them (`forget`, after every commit); the REST facade shows them as
ResourceImport status.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from hub.auth.identity import Identity
from hub.errors import Forbidden, InvalidRequest, quote
from hub.store.base import WriteBatch
from kube.conditions import format_time
from mcapi.delivery import delivers_to
from mcapi.mchub.v1 import common_area_pb2 as pb

log = logging.getLogger(__name__)

# Reports in one ReportImportStatuses call (proto/mchub/v1/common_area.proto says so too).
MAX_REPORTS_PER_CALL = 1000


@dataclass(frozen=True)
class ImportStatusEntry:
    succeeded: bool
    reason: str
    message: str
    reported: datetime


# Told of every report kept (import name, cluster ID, entry); must not block.
ImportStatusListener = Callable[[str, str, ImportStatusEntry], None]


class ImportStatusBook(dict[str, dict[str, ImportStatusEntry]]):
    def __init__(self) -> None:
        super().__init__()
        # The kube store's hub writes reports into the ResourceImport CRs (hub.leader_cluster.import_outcomes).
        self.listeners: list[ImportStatusListener] = []

    def record(self, import_name: str, cluster_id: str, entry: ImportStatusEntry) -> None:
        self.setdefault(import_name, {})[cluster_id] = entry
        for listener in self.listeners:
            listener(import_name, cluster_id, entry)

    def forget(self, batch: WriteBatch) -> None:
        """Drop the reports about imports the batch deletes and those of members it removes."""
        for name in batch.delete_imports:
            self.pop(name, None)
        for cluster_id in batch.delete_members:
            for name, reports in list(self.items()):
                reports.pop(cluster_id, None)
                if not reports:
                    del self[name]


def record_reports(
    book: ImportStatusBook,
    imports: Mapping[str, pb.ResourceImport],
    who: Identity,
    cluster_id: str,
    statuses: Sequence[pb.ImportStatus],
    *,
    now: datetime,
) -> None:
    """Keep what member ``cluster_id`` (the caller, `who`) said about its imports; all or
    nothing: Forbidden if the caller is not that member, InvalidRequest if a report is invalid
    or there are too many, and none kept."""
    if who.admin or cluster_id != who.cluster_id:
        raise Forbidden(f"token belongs to {who.describe()}, not cluster {quote(cluster_id)}")
    if len(statuses) > MAX_REPORTS_PER_CALL:
        raise InvalidRequest(f"{len(statuses)} reports in one call; at most {MAX_REPORTS_PER_CALL}")
    for position, status in enumerate(statuses):
        if not status.import_name:
            raise InvalidRequest(f"import_name is required (report {position + 1} of {len(statuses)})")
    for status in statuses:
        imp = imports.get(status.import_name)
        if imp is not None and not delivers_to(imp, cluster_id):
            # Not this member's import: acknowledged, kept nowhere. (A report about an import
            # the hub does not hold is kept until an import of that name is deleted or the
            # member is removed.)
            log.debug(
                "import status report ignored", extra={"clusterID": cluster_id, "import": quote(status.import_name)}
            )
            continue
        book.record(
            status.import_name, cluster_id, ImportStatusEntry(status.succeeded, status.reason, status.message, now)
        )
        if not status.succeeded:
            log.warning(
                "member could not apply import",
                extra={"clusterID": cluster_id, "import": quote(status.import_name), "reason": quote(status.reason)},
            )


def cluster_statuses(reports: dict[str, ImportStatusEntry]) -> list[dict[str, object]]:
    """``status.clusterStatuses`` of a ResourceImport, from the reports about it."""
    return [
        {
            "clusterID": cluster_id,
            "conditions": [
                {
                    "type": "Succeeded",
                    "status": "True" if entry.succeeded else "False",
                    "reason": entry.reason,
                    "message": entry.message,
                    "lastTransitionTime": format_time(entry.reported),
                }
            ],
        }
        for cluster_id, entry in sorted(reports.items())
    ]
