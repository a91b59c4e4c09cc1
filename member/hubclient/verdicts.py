"""The latest verdict of each export, and which answers are news worth telling the member."""

from __future__ import annotations

from mcapi.mchub.v1 import common_area_pb2 as pb

DELETED = pb.ExportStatus(verdict=pb.VERDICT_DELETED)


class VerdictBook:
    def __init__(self) -> None:
        self._status: dict[str, pb.ExportStatus] = {}
        # The value each status was given for, so a new value's first answer is news.
        self._judged: dict[str, pb.ResourceExport] = {}

    def get(self, export_name: str) -> pb.ExportStatus | None:
        return self._status.get(export_name)

    def answered(self, export_name: str, value: pb.ResourceExport, status: pb.ExportStatus) -> bool:
        """The answer to an upsert of `value`; True when the member should hear it."""
        news = self._status.get(export_name) != status or self._judged.get(export_name) != value
        self._status[export_name] = status
        self._judged[export_name] = value
        return news

    def changed(self, export_name: str, status: pb.ExportStatus) -> bool:
        """An unsolicited verdict; True when it differs from the one known."""
        if self._status.get(export_name) == status:
            return False
        self._status[export_name] = status
        return True

    def forget(self, export_name: str) -> None:
        self._status.pop(export_name, None)
        self._judged.pop(export_name, None)
