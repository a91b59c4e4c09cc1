"""What members said about applying their imports (ReportImportStatus), kept in memory.

By import name, then by reporting cluster. Reports go with the import they are about and
with the member that made them (`forget`, after every commit); the REST facade shows them as
ResourceImport status.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from hub.store.base import WriteBatch


@dataclass(frozen=True)
class ImportStatusEntry:
    succeeded: bool
    reason: str
    message: str
    reported: datetime


class ImportStatusBook(dict[str, dict[str, ImportStatusEntry]]):
    def record(self, import_name: str, cluster_id: str, entry: ImportStatusEntry) -> None:
        self.setdefault(import_name, {})[cluster_id] = entry

    def forget(self, batch: WriteBatch) -> None:
        """Drop the reports about imports the batch deletes and those of members it removes."""
        for name in batch.delete_imports:
            self.pop(name, None)
        for cluster_id in batch.delete_members:
            for name, reports in list(self.items()):
                reports.pop(cluster_id, None)
                if not reports:
                    del self[name]
