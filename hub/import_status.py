"""What members said about applying their imports (ReportImportStatus), kept in memory.

By import name, then by reporting cluster. Reports go with the import they are about and
with the member that made them (`forget`, after every commit); the REST facade shows them as
ResourceImport status.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from hub.store.base import WriteBatch
from kube.conditions import format_time


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
        # The kube store's hub writes reports into the ResourceImport CRs (hub.import_outcomes).
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
