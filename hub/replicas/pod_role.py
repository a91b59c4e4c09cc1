"""The replica's role on its own Pod, so Services can tell the leader from the followers.

`mchub.antrea.io/hub-role: leader` marks the replica that takes writes (the Service members
send writes to selects it); every Ready replica serves watches (the watch Service selects them
all). A failed label write is logged and retried at the next role change: the role itself
lives in the Lease, the label only routes.
"""

from __future__ import annotations

import logging

from kube.client import KubeClient, PatchType
from kube.errors import KubeError
from kube.resources import PODS

log = logging.getLogger(__name__)

ROLE_LABEL = "mchub.antrea.io/hub-role"
LEADER = "leader"
FOLLOWER = "follower"


async def label_pod_role(client: KubeClient, namespace: str, pod: str, role: str) -> None:
    if not pod:
        return
    try:
        await client.patch(
            PODS, pod, {"metadata": {"labels": {ROLE_LABEL: role}}}, namespace=namespace, patch_type=PatchType.MERGE
        )
    except KubeError as exc:
        log.warning("hub could not label its pod with its role", extra={"pod": pod, "role": role, "error": str(exc)})
