"""The member's import side: what the hub imports becomes objects in this cluster.

`ImportApplier.handle` consumes the HubSession's import events (it records the desired state
and returns); `start`/`stop` run its workers over the member's import caches; `settled`
waits until what was handed over was tried; `remove_all` removes everything it imported.
What each payload means is the registry's (`member.imports.kinds`).
"""

from member.imports.applier import DEFAULT_WORKERS, ImportApplier, Report
from member.imports.cluster_info_status import CONDITION_READY, set_cluster_info_import_condition
from member.imports.outcome import ImportReason, Outcome

__all__ = [
    "CONDITION_READY",
    "DEFAULT_WORKERS",
    "ImportApplier",
    "ImportReason",
    "Outcome",
    "Report",
    "set_cluster_info_import_condition",
]
