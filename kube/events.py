"""EventRecorder: core/v1 Events about objects, as `kubectl describe` shows them.

A repeat of the same event (same object, type, reason and message) bumps the
existing Event's count and lastTimestamp instead of creating another, so a
reconciler that fails in a loop leaves one line with a count, not thousands.
Recording is best effort: an API failure is logged, never raised.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from datetime import UTC, datetime
from typing import Any, Literal

from kube.client import KubeClient
from kube.conditions import format_time
from kube.errors import KubeError, NotFound
from kube.resources import EVENTS, Obj, Resource, object_ref

log = logging.getLogger(__name__)

EventType = Literal["Normal", "Warning"]
_AggregationKey = tuple[str, str, str, str, str, str]


class EventRecorder:
    def __init__(self, client: KubeClient, component: str, host: str = "", cache_size: int = 1024) -> None:
        """``component`` is the reporter users see in the Events' source (`mchub-member`)."""
        self.client = client
        self.component = component
        self.host = host
        self._cache_size = cache_size
        # aggregation key -> (namespace, name, count) of the Event written for it
        self._seen: OrderedDict[_AggregationKey, tuple[str, str, int]] = OrderedDict()
        self._lock = asyncio.Lock()

    async def normal(self, obj: Obj, reason: str, message: str, resource: Resource | None = None) -> Obj | None:
        return await self.record(obj, "Normal", reason, message, resource)

    async def warning(self, obj: Obj, reason: str, message: str, resource: Resource | None = None) -> Obj | None:
        return await self.record(obj, "Warning", reason, message, resource)

    async def record(
        self, obj: Obj, event_type: EventType, reason: str, message: str, resource: Resource | None = None
    ) -> Obj | None:
        """Write (or count again) an Event about ``obj``; ``resource`` supplies apiVersion/kind
        when the object lacks them. Returns the Event, or None if it could not be written."""
        involved = self._involved(obj, resource)
        namespace = involved.get("namespace") or "default"
        key: _AggregationKey = (
            involved.get("uid") or f"{involved['kind']}/{namespace}/{involved['name']}",
            event_type,
            reason,
            message,
            self.component,
            self.host,
        )
        async with self._lock:
            try:
                return await self._write(
                    key, namespace, involved, event_type=event_type, reason=reason, message=message
                )
            except KubeError as err:
                log.warning("eventNotRecorded", extra={"object": object_ref(obj), "reason": reason, "error": str(err)})
                return None

    async def _write(
        self,
        key: _AggregationKey,
        namespace: str,
        involved: dict[str, Any],
        *,
        event_type: EventType,
        reason: str,
        message: str,
    ) -> Obj:
        now = format_time(datetime.now(UTC))
        seen = self._seen.get(key)
        if seen is not None:
            event_ns, event_name, count = seen
            try:
                event = await self.client.patch(
                    EVENTS, event_name, {"count": count + 1, "lastTimestamp": now}, event_ns
                )
            except NotFound:
                pass  # expired (events have a TTL) or deleted: start a new one
            else:
                self._remember(key, event_ns, event_name, count + 1)
                return event
        body = {
            "metadata": {"name": f"{involved['name']}.{time.time_ns():x}", "namespace": namespace},
            "involvedObject": involved,
            "reason": reason,
            "message": message,
            "type": event_type,
            "source": {"component": self.component, **({"host": self.host} if self.host else {})},
            "firstTimestamp": now,
            "lastTimestamp": now,
            "count": 1,
            "reportingComponent": self.component,
            "reportingInstance": self.host,
        }
        event = await self.client.create(EVENTS, body, namespace)
        self._remember(key, namespace, event["metadata"]["name"], 1)
        return event

    def _remember(self, key: _AggregationKey, namespace: str, name: str, count: int) -> None:
        self._seen[key] = (namespace, name, count)
        self._seen.move_to_end(key)
        while len(self._seen) > self._cache_size:
            self._seen.popitem(last=False)

    @staticmethod
    def _involved(obj: Obj, resource: Resource | None) -> dict[str, Any]:
        meta = obj.get("metadata", {})
        involved: dict[str, Any] = {
            "apiVersion": obj.get("apiVersion") or (resource.api_version if resource else ""),
            "kind": obj.get("kind") or (resource.kind if resource else ""),
            "name": meta.get("name", ""),
        }
        if not involved["apiVersion"] or not involved["kind"]:
            raise ValueError("the object has no apiVersion/kind: pass its Resource")
        for field in ("namespace", "uid", "resourceVersion"):
            if meta.get(field):
                involved[field] = meta[field]
        return involved
