"""The member's import side: what the hub imports becomes objects in this cluster.

`ImportApplier.handle` is the HubSession's `on_import_event`; `start`/`stop` run its
Namespace watch and retries; `remove_all` removes everything it imported.
"""

from member.imports.applier import ImportApplier, Report
from member.imports.cluster_info_status import CONDITION_READY, set_cluster_info_import_condition
from member.imports.outcome import ImportReason, Outcome

__all__ = [
    "CONDITION_READY",
    "ImportApplier",
    "ImportReason",
    "Outcome",
    "Report",
    "set_cluster_info_import_condition",
]
