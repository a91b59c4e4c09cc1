"""What the member's announces say of its cluster: the hub's view of it (KEP-2149, KEP-4322).

A part of every membership, started before the hub session so its first announce carries it:

- the cluster's UID (its kube-system Namespace's uid): who the cluster is, whatever ID it
  claims; the hub holds a cluster ID to one UID while it is a member;
- its ClusterProperties (member.about.properties), at once whenever one changes;
- its Kubernetes version (``/version``) and its control plane's health (``/readyz``), asked
  every ``probe_interval`` seconds.

The session announces again at once when any of it changes (and only then, beside its
heartbeats). ClusterProperties the hub could not take are left out with a warning: values of
more than 1024 characters (a ClusterProfile holds no longer one), and any beyond the first 128
by name.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from typing import Protocol

from kube.client import KubeClient
from kube.errors import KubeError
from kube.resources import NAMESPACES
from kube.waiting import cancel_and_wait
from mcapi.cluster_selection import MAX_VALUE_CHARS
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.about.properties import ClusterProperties

log = logging.getLogger(__name__)

# What the hub takes of one announce (hub.engine.identity).
MAX_PROPERTIES = 128
SYSTEM_NAMESPACE = "kube-system"
DEFAULT_PROBE_INTERVAL = 30.0
MAX_MESSAGE_CHARS = 1024


class InventorySink(Protocol):
    """Where the inventory goes: the hub session (HubSession.set_inventory)."""

    def set_inventory(self, inventory: pb.AnnounceRequest) -> None: ...


def announced_properties(values: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """The properties an announce carries, and the names left out."""
    kept: dict[str, str] = {}
    left_out: list[str] = []
    for name in sorted(values):
        value = values[name]
        if len(value) > MAX_VALUE_CHARS or len(kept) >= MAX_PROPERTIES:
            left_out.append(name)
        else:
            kept[name] = value
    return kept, left_out


class InventoryReporter:
    def __init__(
        self,
        client: KubeClient,
        properties: ClusterProperties,
        sink: InventorySink,
        *,
        probe_interval: float = DEFAULT_PROBE_INTERVAL,
    ) -> None:
        self._client = client
        self._properties = properties
        self._sink = sink
        self._probe_interval = probe_interval
        self._uid = ""
        self._version = ""
        self._health = pb.ControlPlaneHealth(healthy=True)
        self._warned: set[str] = set()
        self._task: asyncio.Task[None] | None = None
        self._unlisten: Callable[[], None] | None = None

    async def start(self) -> None:
        self._uid = await self._cluster_uid()
        await self._probe()
        self._unlisten = self._properties.add_listener(self._property_changed)
        self._tell()
        self._task = asyncio.create_task(self._probe_loop(), name="member-inventory-probe")

    async def stop(self) -> None:
        unlisten, self._unlisten = self._unlisten, None
        if unlisten is not None:
            unlisten()
        await cancel_and_wait(self._task)
        self._task = None

    async def _cluster_uid(self) -> str:
        try:
            namespace = await self._client.get(NAMESPACES, SYSTEM_NAMESPACE)
        except KubeError as err:
            log.warning(
                "the cluster's UID (its kube-system Namespace's) is unknown: the hub cannot hold its cluster ID "
                "to this cluster",
                extra={"error": str(err)},
            )
            return ""
        return str((namespace.get("metadata") or {}).get("uid") or "")

    async def _probe(self) -> None:
        try:
            self._version = str((await self._client.server_version()).get("gitVersion") or "")
        except KubeError as err:
            log.info("the cluster's version could not be read", extra={"error": str(err)})
        try:
            await self._client.text("/readyz")
            self._health = pb.ControlPlaneHealth(healthy=True)
        except KubeError as err:
            self._health = pb.ControlPlaneHealth(healthy=False, message=str(err)[:MAX_MESSAGE_CHARS])

    async def _probe_loop(self) -> None:
        while True:
            await asyncio.sleep(self._probe_interval)
            await self._probe()
            self._tell()

    def _property_changed(self, name: str) -> None:
        self._tell()

    def _tell(self) -> None:
        properties, left_out = announced_properties(self._properties.values())
        for name in set(left_out) - self._warned:
            log.warning(
                "cluster property not announced: its value is longer than a ClusterProfile holds, or there "
                "are more than the hub takes",
                extra={"property": name, "maxValueChars": MAX_VALUE_CHARS, "maxProperties": MAX_PROPERTIES},
            )
        self._warned = set(left_out)
        self._sink.set_inventory(
            pb.AnnounceRequest(
                cluster_uid=self._uid,
                kubernetes_version=self._version,
                properties=properties,
                control_plane=self._health,
            )
        )
