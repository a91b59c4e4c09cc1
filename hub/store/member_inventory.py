"""A member's ClusterInventory as one JSON text, the way both stores keep it (a SQLite column, an
annotation of the MemberClusterAnnounce), and back.

Empty inventories are "" (an older member, or a record written before inventories existed), and
a text this hub cannot read is an InvalidInventory (a StoreError): a store never guesses.
"""

from __future__ import annotations

import json
from typing import Any

from hub.store.base import ClusterInventory, StoreError


class InvalidInventory(StoreError, ValueError):
    """A stored inventory that is not what inventory_json wrote."""


def inventory_json(inventory: ClusterInventory) -> str:
    """The inventory as compact JSON with sorted keys ("" when it says nothing)."""
    if inventory == ClusterInventory():
        return ""
    body: dict[str, Any] = {
        "clusterUID": inventory.cluster_uid,
        "kubernetesVersion": inventory.kubernetes_version,
        "properties": dict(inventory.properties),
    }
    if inventory.control_plane_healthy is not None:
        body["controlPlane"] = {"healthy": inventory.control_plane_healthy, "message": inventory.control_plane_message}
    return json.dumps(body, sort_keys=True, separators=(",", ":"))


def inventory_from_json(text: str, cluster_id: str) -> ClusterInventory:
    if not text:
        return ClusterInventory()
    try:
        body = json.loads(text)
        properties = body.get("properties") or {}
        control = body.get("controlPlane")
        if not isinstance(properties, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in properties.items()
        ):
            raise TypeError("properties is not a map of strings")
        return ClusterInventory(
            cluster_uid=str(body.get("clusterUID") or ""),
            kubernetes_version=str(body.get("kubernetesVersion") or ""),
            properties=tuple(sorted(properties.items())),
            control_plane_healthy=None if control is None else bool(control.get("healthy")),
            control_plane_message="" if control is None else str(control.get("message") or ""),
        )
    except (ValueError, TypeError, AttributeError) as err:
        raise InvalidInventory(f"member {cluster_id!r}: unreadable inventory ({err})") from None
