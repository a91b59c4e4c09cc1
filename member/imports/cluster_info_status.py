"""ClusterInfoImport status: conditions in Antrea's shape (no observedGeneration),
lastTransitionTime moving only when a condition flips, written only when changed.

Other reconcilers (CIDR overlap checks, gateway health) call this too; each owns
its condition types and leaves the others as they are.
"""

from __future__ import annotations

import copy
from datetime import datetime

from kube.client import KubeClient
from kube.conditions import Status, set_condition
from kube.resources import Obj, name_of, namespace_of
from mcapi.resources import CLUSTER_INFO_IMPORTS

CONDITION_READY = "Ready"


async def set_cluster_info_import_condition(
    client: KubeClient,
    live: Obj,
    condition_type: str,
    status: Status,
    *,
    reason: str = "",
    message: str = "",
    now: datetime | None = None,
) -> Obj:
    """Set one condition on the ClusterInfoImport ``live``; returns it as written (or unchanged).

    The write is conditional on ``live``'s resourceVersion: a Conflict means it was read
    before someone else's write, and the caller should read again and retry.
    """
    conditions = copy.deepcopy((live.get("status") or {}).get("conditions") or [])
    if not set_condition(conditions, condition_type, status, reason, message, now=now):
        return live
    patch = {"metadata": {"resourceVersion": live["metadata"]["resourceVersion"]}, "status": {"conditions": conditions}}
    return await client.patch_status(CLUSTER_INFO_IMPORTS, name_of(live), patch, namespace_of(live))
