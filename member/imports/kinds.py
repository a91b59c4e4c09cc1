"""The registry of import kinds: what the importer does with a ResourceImport, by its payload.

An entry says how an import of that payload is applied, which kinds of object it writes, and
whether it lives in the import's Namespace. Everything else follows from it:

* apply: ``ImportApplier`` applies an import with its payload's ``apply``;
* cache: ``ImportCaches`` watches every kind an entry writes, from the member's start (a CRD
  that may come and go, once it is served), selecting and indexing its objects as the kind's
  ``KindSpec`` says (member.imports.objects);
* ownership: the ``KindSpec`` says which objects are the importer's, and only those are
  updated or deleted;
* delete: an import that goes away (even one this process never saw) has every object of
  those kinds that is ours and belongs to it deleted;
* waiting: a namespaced import is blocked until its Namespace exists and applied at once when
  it appears.

Adding a kind is one entry. A payload ``gateway_health`` written as ConfigMaps in the member
Namespace, say, would be::

    ImportKind(
        "gateway_health",
        apply_gateway_health,  # async (ImportContext, pb.ResourceImport) -> None
        writes=(
            KindSpec(
                CONFIG_MAPS,
                named_after_import,
                owner="multicluster.antrea.io/imported-health",
                label_selector="multicluster.antrea.io/imported-health=true",
                in_member_namespace=True,
            ),
        ),
    ),
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mcapi.mchub.v1 import common_area_pb2 as pb
from member.imports.cluster_info import apply_cluster_info
from member.imports.endpoints import apply_endpoints
from member.imports.label_identity import apply_label_identity
from member.imports.objects import (
    IMPORTED_CLUSTER_INFOS,
    IMPORTED_ENDPOINT_SLICES,
    IMPORTED_ENDPOINTS,
    IMPORTED_LABEL_IDENTITIES,
    IMPORTED_POLICIES,
    IMPORTED_SERVICE_IMPORTS,
    IMPORTED_SERVICES,
    KindSpec,
)
from member.imports.policies import apply_acnp
from member.imports.services import apply_service_import

if TYPE_CHECKING:
    from member.imports.context import ImportContext

Apply = Callable[["ImportContext", pb.ResourceImport], Awaitable[object]]


@dataclass(frozen=True)
class ImportKind:
    payload: str  # the ResourceImport payload field
    apply: Apply  # create or update the import's objects; raises ImportBlocked when this cluster stops it
    writes: tuple[KindSpec, ...]  # the kinds of object it makes, in the order they are deleted
    namespaced: bool = False  # written in the import's Namespace


IMPORT_KINDS: Mapping[str, ImportKind] = {
    kind.payload: kind
    for kind in (
        ImportKind(
            "service_import",
            apply_service_import,
            (IMPORTED_SERVICES, IMPORTED_SERVICE_IMPORTS),
            namespaced=True,
        ),
        ImportKind("endpoints", apply_endpoints, (IMPORTED_ENDPOINTS, IMPORTED_ENDPOINT_SLICES), namespaced=True),
        ImportKind("cluster_network_policy", apply_acnp, (IMPORTED_POLICIES,)),
        ImportKind("cluster_info", apply_cluster_info, (IMPORTED_CLUSTER_INFOS,)),
        ImportKind("label_identity", apply_label_identity, (IMPORTED_LABEL_IDENTITIES,)),
    )
}


def written_kinds() -> list[KindSpec]:
    """Every kind of object the import kinds write, once each, in the registry's order."""
    found: dict[str, KindSpec] = {}
    for kind in IMPORT_KINDS.values():
        for spec in kind.writes:
            found.setdefault(spec.resource.qualified_name, spec)
    return list(found.values())


def import_kind(message: pb.ResourceImport) -> ImportKind | None:
    """The entry of this import's payload; None when it has none (or one this member does not know)."""
    payload = message.WhichOneof("payload")
    return IMPORT_KINDS.get(payload) if payload else None
