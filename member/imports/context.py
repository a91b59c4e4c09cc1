"""What every import writer needs to know about the cluster it writes into."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from kube.client import KubeClient
from kube.errors import NotFound
from member.imports.caches import ImportCaches, OwnedKind, served_service_import, service_import_kind
from member.imports.discovery import ApiDiscovery
from member.imports.ownership import ObjectWriter, require_namespace

T = TypeVar("T")


@dataclass(frozen=True)
class ImportContext:
    client: KubeClient
    cluster_id: str
    member_namespace: str
    apis: ApiDiscovery
    clock: Callable[[], datetime]
    caches: ImportCaches
    writer: ObjectWriter

    def require_namespace(self, namespace: str) -> None:
        require_namespace(namespace, self.cluster_id, self.caches.namespace(namespace))

    async def service_imports(self) -> OwnedKind | None:
        """The watched ServiceImports of the served version, None when the MCS CRD is not installed."""
        resource = await served_service_import(self.apis)
        if resource is None:
            return None
        return await self.watched_if_served(self.caches.optional_kind(service_import_kind(resource)))

    async def watched_if_served(self, watch: Awaitable[T]) -> T | None:
        """What ``watch`` (the caches' watch of a CRD's kind that discovery lists: an optional kind,
        the Tiers) gives; None when listing that kind answers 404: the CRD went away after
        discovery's answer (which is reused for a while), so it counts as not installed and
        discovery is asked again next time, instead of the importer failing on a kind that no
        longer exists."""
        try:
            return await watch
        except NotFound:
            self.apis.forget()
            return None
