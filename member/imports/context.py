"""What every import writer needs to know about the cluster it writes into."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from kube.client import KubeClient
from kube.errors import NotFound
from kube.resources import SERVICE_IMPORTS, SERVICE_IMPORTS_V1BETA1, Resource
from mcapi import names
from member.imports.caches import ImportCaches, OwnedKind, service_import_kind
from member.imports.discovery import ApiDiscovery
from member.imports.ownership import ObjectWriter, require_namespace

# v1beta1 first: only it carries internalTrafficPolicy and trafficDistribution (the
# mcs-api conformance suite checks both, and a v1alpha1 schema would prune them).
# Both versions are one stored object, so v1alpha1 readers (Antrea's tools) still see it;
# a cluster with only Antrea's v1alpha1 CRD gets v1alpha1.
T = TypeVar("T")

SERVICE_IMPORT_VERSIONS = {"v1beta1": SERVICE_IMPORTS_V1BETA1, "v1alpha1": SERVICE_IMPORTS}


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

    async def service_import_resource(self) -> Resource | None:
        """The MCS ServiceImport version to write, None when the MCS CRD is not installed."""
        version = await self.apis.pick_version(names.MCS_GROUP, "serviceimports", tuple(SERVICE_IMPORT_VERSIONS))
        return SERVICE_IMPORT_VERSIONS.get(version) if version else None

    async def service_imports(self) -> OwnedKind | None:
        """The watched ServiceImports of the served version, None when the MCS CRD is not installed."""
        resource = await self.service_import_resource()
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
