"""What applying one import came to, in the words reported to the hub.

An import either succeeds, or is *blocked* by something in this cluster that
only the cluster can change (a missing Namespace, a user's object under the
name we need, a missing CRD or Tier, an object the API server refuses). A
blocked import is acknowledged to the hub, reported failed and tried again
later; any other failure (the API server unreachable, a write conflict) is
raised, so the hub session delivers the event again.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from kube.resources import Obj, Resource


class ImportReason(StrEnum):
    """The reason reported with an import's status (ReportImportStatus.reason)."""

    SUCCEEDED = "Succeeded"
    NAMESPACE_NOT_FOUND = "NamespaceNotFound"
    # An object we would write exists and was not made by the importer.
    CONFLICT = "ImportConflict"
    CRD_NOT_INSTALLED = "CRDNotInstalled"
    TIER_NOT_FOUND = "TierNotFound"
    # The API server refused what the import asks for (422), or the payload cannot be converted.
    INVALID = "InvalidImport"


@dataclass(frozen=True)
class Outcome:
    succeeded: bool
    reason: ImportReason
    message: str = ""


SUCCEEDED = Outcome(True, ImportReason.SUCCEEDED)


@dataclass(frozen=True)
class Conflicting:
    """A user's object standing where an imported one should be: the Warning Event goes on it."""

    resource: Resource
    object: Obj


class ImportBlocked(Exception):
    """The import cannot be applied until something in this cluster changes."""

    def __init__(self, reason: ImportReason, message: str, conflicting: Conflicting | None = None) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.conflicting = conflicting

    @property
    def outcome(self) -> Outcome:
        return Outcome(False, self.reason, self.message)
