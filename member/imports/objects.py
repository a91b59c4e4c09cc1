"""The kinds of object the importer writes, as its caches watch them (one ``KindSpec`` each):
which import an object belongs to, which of them are the importer's own, and what the watch
selects. Which import kinds write which of these is said by the registry (member.imports.kinds).

Which import an object belongs to is derived from its name (or, for an EndpointSlice, a label),
so it survives restarts. Ownership is Antrea's rule: an object under the name an import needs is
the importer's when it carries the importer's annotation (whatever its value); the same key as a
label is what the watch selects on.

Some kinds are CRDs that may come and go (the MCS ServiceImport, Antrea's ClusterNetworkPolicy):
their spec lists the versions the importer writes, and they are watched from the moment the API
server serves one of them (``served``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from kube.resources import ENDPOINT_SLICES, ENDPOINTS, SERVICES, Obj, Resource, name_of, namespace_of
from mcapi import names
from mcapi.crds.antrea_policy import ANTREA_CRD_GROUP
from mcapi.resources import CLUSTER_INFO_IMPORTS, LABEL_IDENTITIES, SERVICE_IMPORTS_V1BETA1
from member.imports.discovery import ApiDiscovery
from member.imports.ownership import LABEL_IMPORTED_ACNP, LABEL_IMPORTED_SERVICE, LABEL_MANAGED_BY, MANAGED_BY

ImportNameOf = Callable[[Obj], str | None]


def acnp_resource(version: str) -> Resource:
    return Resource(ANTREA_CRD_GROUP, version, "clusternetworkpolicies", "ClusterNetworkPolicy", False)


@dataclass(frozen=True)
class KindSpec:
    """One kind of object the importer writes (for a CRD that may come and go, in one version)."""

    resource: Resource
    import_of: ImportNameOf
    # The annotation that makes an object the importer's; None: every object of the kind (as
    # the watch selects them) is.
    owner: str | None
    label_selector: str | None = None
    in_member_namespace: bool = False  # watched (and written) in the member Namespace only
    # A CRD that may come and go: the versions the importer writes, preferred first; watched
    # once one of them is served (with ``any_version``, any served version will do).
    versions: tuple[str, ...] = ()
    any_version: bool = False

    @property
    def optional(self) -> bool:
        return bool(self.versions)

    def owns(self, obj: Obj) -> bool:
        return self.owner is None or self.owner in ((obj.get("metadata") or {}).get("annotations") or {})

    def in_version(self, version: str) -> KindSpec:
        return dataclasses.replace(self, resource=dataclasses.replace(self.resource, version=version))


async def served(spec: KindSpec, apis: ApiDiscovery) -> KindSpec | None:
    """``spec`` in the version the API server serves and the importer writes; None when there is none."""
    resource = spec.resource
    version = await apis.pick_version(resource.group, resource.plural, spec.versions)
    if version is None or (version not in spec.versions and not spec.any_version):
        return None
    return spec.in_version(version)


# ---- which import an object belongs to ----------------------------------------------------


def _unprefixed(obj: Obj) -> str | None:
    name = name_of(obj)
    return name.removeprefix(names.IMPORTED_PREFIX) if name.startswith(names.IMPORTED_PREFIX) else None


def service_import_of_service(obj: Obj) -> str | None:
    base = _unprefixed(obj)
    return names.service_import_name(namespace_of(obj) or "", base) if base else None


def endpoints_import_of_endpoints(obj: Obj) -> str | None:
    base = _unprefixed(obj)
    return names.endpoints_import_name(namespace_of(obj) or "", base) if base else None


def endpoints_import_of_slice(obj: Obj) -> str | None:
    service = ((obj.get("metadata") or {}).get("labels") or {}).get(names.LABEL_MCS_SERVICE_NAME)
    return names.endpoints_import_name(namespace_of(obj) or "", service) if service else None


def service_import_of_service_import(obj: Obj) -> str | None:
    return names.service_import_name(namespace_of(obj) or "", name_of(obj))


def acnp_import_of_policy(obj: Obj) -> str | None:
    base = _unprefixed(obj)
    return names.acnp_import_name(base) if base else None


def named_after_import(obj: Obj) -> str | None:
    return name_of(obj)


# ---- the kinds -------------------------------------------------------------------------------

_IMPORTED = f"{LABEL_IMPORTED_SERVICE}=true"
_SERVICE_OWNER = names.ANNOTATION_IMPORTED_SERVICE

IMPORTED_SERVICES = KindSpec(SERVICES, service_import_of_service, _SERVICE_OWNER, _IMPORTED)
IMPORTED_ENDPOINTS = KindSpec(ENDPOINTS, endpoints_import_of_endpoints, _SERVICE_OWNER, _IMPORTED)
# Slices made before imported objects were labelled carry the managed-by label too.
IMPORTED_ENDPOINT_SLICES = KindSpec(
    ENDPOINT_SLICES, endpoints_import_of_slice, _SERVICE_OWNER, f"{LABEL_MANAGED_BY}={MANAGED_BY}"
)
# v1beta1 first: only it carries internalTrafficPolicy and trafficDistribution (the mcs-api
# conformance suite checks both, and a v1alpha1 schema would prune them). Both versions are one
# stored object, so v1alpha1 readers (Antrea's tools) still see it; a cluster with only Antrea's
# v1alpha1 CRD gets v1alpha1.
IMPORTED_SERVICE_IMPORTS = KindSpec(
    SERVICE_IMPORTS_V1BETA1,
    service_import_of_service_import,
    _SERVICE_OWNER,
    _IMPORTED,
    versions=("v1beta1", "v1alpha1"),
)
IMPORTED_POLICIES = KindSpec(
    acnp_resource("v1beta1"),
    acnp_import_of_policy,
    names.ANNOTATION_IMPORTED_ACNP,
    f"{LABEL_IMPORTED_ACNP}=true",
    versions=("v1beta1", "v1alpha1"),
    any_version=True,
)
# Every ClusterInfoImport in the member Namespace and every LabelIdentity is the importer's, as in Antrea.
IMPORTED_CLUSTER_INFOS = KindSpec(CLUSTER_INFO_IMPORTS, named_after_import, None, in_member_namespace=True)
IMPORTED_LABEL_IDENTITIES = KindSpec(LABEL_IDENTITIES, named_after_import, None)
