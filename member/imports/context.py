"""What every import writer needs to know about the cluster it writes into."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from kube.client import KubeClient
from kube.errors import NotFound
from mcapi.mchub.v1 import common_area_pb2 as pb
from member.imports.caches import ImportCaches, OwnedKind
from member.imports.discovery import ApiDiscovery
from member.imports.local_endpoints import LocalEndpoints
from member.imports.objects import KindSpec, served
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
    # This cluster's Endpoints (the export controller's watch): its own share of an Endpoints
    # import is written from them (member.imports.local_endpoints); None: as the hub merged it.
    local_endpoints: LocalEndpoints | None = None
    # The latest import of a name the hub delivered (None: none): an Endpoints import is written
    # as its ServiceImport's cluster selectors choose (member.imports.selection).
    desired: Callable[[str], pb.ResourceImport | None] = lambda _: None

    def require_namespace(self, namespace: str) -> None:
        require_namespace(namespace, self.cluster_id, self.caches.namespace(namespace))

    async def watched(self, spec: KindSpec) -> OwnedKind | None:
        """The kind of a CRD that may come and go (``spec.optional``), watched in the version served
        now; None when its CRD is not installed."""
        version = await served(spec, self.apis)
        if version is None:
            return None
        return await self.watched_if_served(self.caches.optional_kind(version))

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
