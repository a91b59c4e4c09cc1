"""What the agent tells the member on its own Node: annotations, written only when they differ.

* ``multicluster.antrea.io/wireguard-public-key=<base64 key>`` when trafficEncryptionMode is
  wireGuard (removed otherwise): the member copies the elected Node's value into the Gateway CR's
  ``wireGuard.publicKey`` and the exported ClusterInfo. A Node annotation rather than a write to
  the Gateway CR: the key is known before the Node is elected, so the first ClusterInfo a Gateway
  exports already carries it, and the Gateway CR keeps a single writer. The private key never
  leaves the Node (agent/wgkey.py).
* ``mchub.antrea.io/unreachable-gateway=<Node>`` while this candidate's probes of the active
  Gateway go unanswered (mcapi.gateway_nodes): the member moves the Gateway at once.

The names are mcapi's, which the member reads too (member and agent share no module but mcapi).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kube.client import KubeClient
from kube.resources import NODES
from mcapi import names
from mcapi.gateway_nodes import ANNOTATION_UNREACHABLE_GATEWAY

log = logging.getLogger(__name__)

ANNOTATION_WIREGUARD_PUBLIC_KEY = names.ANNOTATION_WIREGUARD_PUBLIC_KEY


def annotations_patch(node: Mapping[str, Any], wanted: Mapping[str, str | None]) -> dict[str, Any] | None:
    """The merge patch that makes the Node's annotations say ``wanted`` (None: absent); None
    when they already do."""
    current = (node.get("metadata") or {}).get("annotations") or {}
    changes = {key: value for key, value in wanted.items() if current.get(key) != value}
    return {"metadata": {"annotations": changes}} if changes else None


def wanted_annotations(public_key: str | None, unreachable_gateway: str | None) -> dict[str, str | None]:
    return {ANNOTATION_WIREGUARD_PUBLIC_KEY: public_key, ANNOTATION_UNREACHABLE_GATEWAY: unreachable_gateway}


async def publish_annotations(client: KubeClient, node: Mapping[str, Any], wanted: Mapping[str, str | None]) -> bool:
    """Patch the Node if its annotations differ from ``wanted``; True if a write was made."""
    patch = annotations_patch(node, wanted)
    if patch is None:
        return False
    name = str((node.get("metadata") or {}).get("name", ""))
    await client.patch(NODES, name, patch)
    log.info("nodeAnnotationsPublished", extra={"node": name, "annotations": patch["metadata"]["annotations"]})
    return True
