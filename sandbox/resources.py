"""What the sandbox serves: resource types, their versions, and the catalog of them.

A ResourceType is one (group, version, plural) as discovery lists it. Objects are
stored per (group, plural) - the "storage key" - in the storage version, so one
object is visible through every served version of its resource. Reading through
another version rewrites apiVersion; for custom resources a version's codec also
prunes and defaults by the schemas involved (sandbox.kinds.custom_resources), which
is what a real apiserver does for CRDs with conversion strategy None.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from kube.resources import Obj
from sandbox.errors import FieldError

GroupResource = tuple[str, str]

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")
CREATE_ONLY = ("create",)


@dataclass(frozen=True)
class PrinterColumn:
    """A CRD additionalPrinterColumns entry (also used for built-in Table columns)."""

    name: str
    type: str
    json_path: str
    description: str = ""
    priority: int = 0
    format: str = ""


@dataclass(frozen=True)
class ObjectView:
    """Converts between a resource's stored shape and the shape one API version shows.

    events.k8s.io/v1 Events are core/v1 Events with renamed fields; both views
    share one storage, as in a real cluster.
    """

    to_storage: Callable[[Obj], Obj]
    from_storage: Callable[[Obj], Obj]
    field_path: Callable[[str], str]


class SchemaCodec(Protocol):
    """A custom resource version's structural-schema handling (sandbox.kinds.custom_resources)."""

    def decode(self, obj: Obj) -> Obj:
        """A request body as this version accepts it (pruned, defaulted)."""
        ...

    def validate(self, obj: Obj, subresource: str | None) -> list[FieldError]: ...

    def encode(self, obj: Obj) -> Obj:
        """The object as stored."""
        ...

    def read(self, stored: Obj) -> Obj:
        """A stored object as this version shows it."""
        ...


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    status_subresource: bool = False
    extra_subresources: tuple[str, ...] = ()
    tracks_generation: bool = False
    # Kinds whose Go types carry patch strategies accept strategic merge patches;
    # custom resources do not (the apiserver answers 415).
    strategic_merge: bool = True
    # Field selectors beyond metadata.name/metadata.namespace, as the apiserver allows per kind.
    selectable_fields: tuple[str, ...] = ()
    printer_columns: tuple[PrinterColumn, ...] | None = None
    storage_group: str | None = None
    storage_version: str | None = None
    view: ObjectView | None = None
    from_crd: bool = False
    allow_create_on_update: bool = False
    codec: SchemaCodec | None = field(default=None, compare=False, hash=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def storage_key(self) -> GroupResource:
        return (self.storage_group if self.storage_group is not None else self.group, self.plural)

    @property
    def stored_api_version(self) -> str:
        group = self.storage_group if self.storage_group is not None else self.group
        version = self.storage_version or self.version
        return f"{group}/{version}" if group else version

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def subresources(self) -> tuple[str, ...]:
        return (("status",) if self.status_subresource else ()) + self.extra_subresources

    def read(self, stored: Obj) -> Obj:
        """The stored object's content as this version shows it, still in the stored apiVersion."""
        return self.codec.read(stored) if self.codec else stored

    def to_api(self, stored: Obj) -> Obj:
        """The stored object as this version shows it (a new dict; stored is not touched)."""
        obj = self.view.from_storage(stored) if self.view else dict(self.read(stored))
        obj["apiVersion"] = self.api_version
        obj["kind"] = self.kind
        return obj

    def to_storage(self, obj: Obj) -> Obj:
        stored = self.view.to_storage(obj) if self.view else obj
        stored["apiVersion"] = self.stored_api_version
        stored["kind"] = self.kind
        return stored


@dataclass
class ResourceCatalog:
    """Every served resource type, looked up the ways HTTP paths and discovery need."""

    _types: dict[tuple[str, str, str], ResourceType] = field(default_factory=dict)
    # Versions in the order discovery lists them (preferred first), per group.
    _group_versions: dict[str, list[str]] = field(default_factory=dict)

    def add(self, rt: ResourceType) -> None:
        self._types[(rt.group, rt.version, rt.plural)] = rt
        versions = self._group_versions.setdefault(rt.group, [])
        if rt.version not in versions:
            versions.append(rt.version)

    def remove_where(self, predicate: Callable[[ResourceType], bool]) -> None:
        for key in [k for k, rt in self._types.items() if predicate(rt)]:
            del self._types[key]
        for group in list(self._group_versions):
            live = {v for (g, v, _) in self._types if g == group}
            kept = [v for v in self._group_versions[group] if v in live]
            if kept:
                self._group_versions[group] = kept
            else:
                del self._group_versions[group]

    def set_version_order(self, group: str, versions: list[str]) -> None:
        known = self._group_versions.get(group, [])
        self._group_versions[group] = [v for v in versions if v in known] + [v for v in known if v not in versions]

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._types.get((group, version, plural))

    def groups(self) -> list[str]:
        return [g for g in self._group_versions if g]

    def versions(self, group: str) -> list[str]:
        return list(self._group_versions.get(group, []))

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [rt for (g, v, _), rt in self._types.items() if g == group and v == version]

    def for_storage_key(self, key: GroupResource) -> Iterator[ResourceType]:
        return (rt for rt in self._types.values() if rt.storage_key == key)

    def preferred_for_storage_key(self, key: GroupResource) -> ResourceType | None:
        """The type that reads stored objects without a view (their own group and version)."""
        candidates = [rt for rt in self.for_storage_key(key) if rt.view is None]
        for rt in candidates:
            if rt.storage_version in (None, rt.version):
                return rt
        return candidates[0] if candidates else None

    def all(self) -> list[ResourceType]:
        return list(self._types.values())
