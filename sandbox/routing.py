"""Parsing API paths (/api/v1/..., /apis/<group>/<version>/...) into what they address."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import unquote

from sandbox import errors
from sandbox.resources import ResourceCatalog, ResourceType

_NAMESPACE_SUBRESOURCES = ("status", "finalize")


@dataclass(frozen=True)
class GroupVersion:
    group: str
    version: str


@dataclass(frozen=True)
class ResourcePath:
    rt: ResourceType
    namespace: str | None
    name: str | None
    subresource: str | None


def split_group_version(path: str) -> tuple[GroupVersion, list[str]] | None:
    """(group/version, remaining segments) of an API path, None for non-API paths."""
    segments = [unquote(s) for s in path.split("/") if s]
    if len(segments) >= 2 and segments[0] == "api":
        return GroupVersion("", segments[1]), segments[2:]
    if len(segments) >= 3 and segments[0] == "apis":
        return GroupVersion(segments[1], segments[2]), segments[3:]
    return None


def builtin_group_version(catalog: ResourceCatalog, gv: GroupVersion) -> bool:
    """Whether built-in kinds serve this group/version (the core group always answers)."""
    return gv.group == "" or any(not rt.from_crd for rt in catalog.in_group_version(gv.group, gv.version))


def resolve(catalog: ResourceCatalog, gv: GroupVersion, rest: list[str]) -> ResourcePath:
    namespace: str | None = None
    if len(rest) >= 3 and rest[0] == "namespaces" and not (len(rest) == 3 and rest[2] in _NAMESPACE_SUBRESOURCES):
        namespace, rest = rest[1], rest[2:]
    if not rest or len(rest) > 3:
        raise errors.unknown_resource()
    rt = catalog.lookup(gv.group, gv.version, rest[0])
    if rt is None:
        raise errors.unknown_path(builtin_group_version(catalog, gv))
    name = rest[1] if len(rest) > 1 else None
    subresource = rest[2] if len(rest) > 2 else None
    # A CRD named in the other scope is no match for the CRD handler: the fallback answers.
    if namespace is not None and not rt.namespaced:
        raise errors.unknown_path(not rt.from_crd)
    if rt.namespaced and namespace is None and name is not None:
        raise errors.unknown_path(not rt.from_crd)
    if subresource is not None and subresource not in rt.subresources:
        raise errors.unknown_resource()
    return ResourcePath(rt, namespace, name, subresource)
