"""How the agent hands its WireGuard public key to the member: an annotation on its own Node.

``multicluster.antrea.io/wireguard-public-key=<base64 key>`` is written by the agent when
trafficEncryptionMode is wireGuard (and removed otherwise); the member copies the elected
Node's value into the Gateway CR's ``wireGuard.publicKey`` and the exported ClusterInfo.
A Node annotation rather than a write to the Gateway CR: the key is known before the Node
is elected, so the first ClusterInfo a Gateway exports already carries it, and the Gateway
CR keeps a single writer. The private key never leaves the Node (agent/wgkey.py).
The name is kept in step with member/gateway/election.py.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kube.client import KubeClient
from kube.resources import NODES
from mcapi import names

log = logging.getLogger(__name__)

ANNOTATION_WIREGUARD_PUBLIC_KEY = names.ANNOTATION_WIREGUARD_PUBLIC_KEY


def key_patch(node: Mapping[str, Any], public_key: str | None) -> dict[str, Any] | None:
    """The merge patch that makes the Node's annotation say ``public_key`` (None: absent);
    None when it already does."""
    annotations = (node.get("metadata") or {}).get("annotations") or {}
    if annotations.get(ANNOTATION_WIREGUARD_PUBLIC_KEY) == public_key:
        return None
    return {"metadata": {"annotations": {ANNOTATION_WIREGUARD_PUBLIC_KEY: public_key}}}


async def publish_key(client: KubeClient, node: Mapping[str, Any], public_key: str | None) -> bool:
    """Patch the Node if its annotation differs; True if a write was made."""
    patch = key_patch(node, public_key)
    if patch is None:
        return False
    name = str((node.get("metadata") or {}).get("name", ""))
    await client.patch(NODES, name, patch)
    log.info("wireGuardKeyPublished", extra={"node": name, "published": public_key is not None})
    return True
