"""Base classes every Kubernetes object model here is built on.

Two rules make the models behave like the Go types users know:

* JSON names are the Kubernetes spellings (``clusterID``, ``podCIDRs``), given
  as aliases; Python code may use either the attribute or the alias.
* Serialising follows Go's ``omitempty``: an optional field whose value is
  ``None``, ``""``, ``[]`` or ``{}`` is left out, so what ``to_dict()`` sends to
  an API server is what a Go client would send. Required fields, and those a
  class lists in ``KEEP_EMPTY``, are always written.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PlainSerializer,
    SerializationInfo,
    SerializerFunctionWrapHandler,
    model_serializer,
    model_validator,
)


def _as_utc(value: datetime) -> datetime:
    # metav1.Time is always UTC on the wire; a naive value is taken as UTC.
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def _format_kube_time(value: datetime) -> str:
    # metav1.Time has second precision and a literal "Z".
    return _as_utc(value).strftime("%Y-%m-%dT%H:%M:%SZ")


KubeTime = Annotated[
    datetime,
    AfterValidator(_as_utc),
    PlainSerializer(_format_kube_time, return_type=str, when_used="json"),
]
"""metav1.Time: RFC 3339 in UTC, second precision."""

Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1, json_schema_extra={"format": "int32"})]
Int64 = Annotated[int, Field(json_schema_extra={"format": "int64"})]
IntOrString = Annotated[int | str, Field(json_schema_extra={"x-kubernetes-int-or-string": True})]
ConditionStatus = Literal["True", "False", "Unknown"]

PRESERVE_UNKNOWN: dict[str, Any] = {"x-kubernetes-preserve-unknown-fields": True}
"""json_schema_extra for a free-form object (an ACNP spec, a raw payload)."""


def _is_empty(value: object) -> bool:
    if value is None or value == "":
        return True
    return isinstance(value, list | dict) and not value


class KubeModel(BaseModel):
    """A part of a Kubernetes object: aliases and omitempty serialisation.

    Strict by default (unknown fields are errors); models of other APIs' types
    (core/v1, MCS) and of metadata opt into ``extra="allow"``.
    """

    model_config = ConfigDict(populate_by_name=True, extra="forbid")

    # Field names (Python names) written even when empty.
    KEEP_EMPTY: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _omit_empty(self, handler: SerializerFunctionWrapHandler, info: SerializationInfo) -> Any:
        data = handler(self)
        if not isinstance(data, dict):
            return data
        for name, field in type(self).model_fields.items():
            if field.is_required() or name in self.KEEP_EMPTY:
                continue
            if _is_empty(getattr(self, name)):
                key = field.alias if info.by_alias and field.alias else name
                data.pop(key, None)
        return data


class ObjectReference(KubeModel):
    """core/v1 ObjectReference (an Endpoints address's targetRef)."""

    model_config = ConfigDict(extra="allow")

    api_version: str = Field(default="", alias="apiVersion")
    kind: str = ""
    name: str = ""
    namespace: str = ""
    uid: str = ""
    resource_version: str = Field(default="", alias="resourceVersion")
    field_path: str = Field(default="", alias="fieldPath")


class OwnerReference(KubeModel):
    """metav1.OwnerReference."""

    model_config = ConfigDict(extra="allow")
    KEEP_EMPTY = frozenset({"api_version", "kind", "name", "uid"})

    api_version: str = Field(default="", alias="apiVersion")
    kind: str = ""
    name: str = ""
    uid: str = ""
    controller: bool | None = None
    block_owner_deletion: bool | None = Field(default=None, alias="blockOwnerDeletion")


class ObjectMeta(KubeModel):
    """metav1.ObjectMeta. Tolerant: managedFields and the like are kept as they come."""

    model_config = ConfigDict(extra="allow")

    name: str = ""
    generate_name: str = Field(default="", alias="generateName")
    namespace: str = ""
    labels: dict[str, str] = Field(default_factory=dict)
    annotations: dict[str, str] = Field(default_factory=dict)
    resource_version: str = Field(default="", alias="resourceVersion")
    generation: int | None = None
    uid: str = ""
    creation_timestamp: KubeTime | None = Field(default=None, alias="creationTimestamp")
    deletion_timestamp: KubeTime | None = Field(default=None, alias="deletionTimestamp")
    finalizers: list[str] = Field(default_factory=list)
    owner_references: list[OwnerReference] = Field(default_factory=list, alias="ownerReferences")


@dataclass(frozen=True)
class PrinterColumn:
    """One additionalPrinterColumns entry of a CRD version."""

    name: str
    json_path: str
    type: str = "string"
    description: str = ""


AGE_COLUMN = PrinterColumn(name="Age", json_path=".metadata.creationTimestamp", type="date")


class KubeObject(KubeModel):
    """A top-level object: apiVersion, kind, metadata, and the class constants
    a client needs to address it (group/version/plural, namespaced or not),
    plus what its CustomResourceDefinition declares for this version."""

    GROUP: ClassVar[str]
    VERSION: ClassVar[str]
    KIND: ClassVar[str]
    PLURAL: ClassVar[str]
    NAMESPACED: ClassVar[bool]
    API_VERSION: ClassVar[str]
    # CRD facts, as the upstream CRD YAML declares them.
    PRINTER_COLUMNS: ClassVar[tuple[PrinterColumn, ...]] = ()
    SHORT_NAMES: ClassVar[tuple[str, ...]] = ()
    CATEGORIES: ClassVar[tuple[str, ...]] = ()
    STORAGE: ClassVar[bool] = True
    STATUS_SUBRESOURCE: ClassVar[bool] = False
    # The CRD's own annotations (a *.k8s.io group needs api-approved.kubernetes.io).
    CRD_ANNOTATIONS: ClassVar[tuple[tuple[str, str], ...]] = ()

    api_version: str = Field(default="", alias="apiVersion")
    kind: str = ""
    metadata: ObjectMeta = Field(default_factory=ObjectMeta)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        group = getattr(cls, "GROUP", None)
        version = getattr(cls, "VERSION", None)
        if group is not None and version is not None:
            cls.API_VERSION = f"{group}/{version}" if group else version

    @model_validator(mode="after")
    def _fill_type_meta(self) -> Self:
        # apiVersion/kind are implied by the class; a different value means the
        # caller parsed an object into the wrong model.
        cls = type(self)
        if not hasattr(cls, "KIND"):
            return self
        if self.api_version and self.api_version != cls.API_VERSION:
            raise ValueError(f"apiVersion {self.api_version!r} is not {cls.API_VERSION!r}")
        if self.kind and self.kind != cls.KIND:
            raise ValueError(f"kind {self.kind!r} is not {cls.KIND!r}")
        self.api_version = cls.API_VERSION
        self.kind = cls.KIND
        return self

    def to_dict(self) -> dict[str, Any]:
        """The JSON document a Kubernetes client sends for this object."""
        data: dict[str, Any] = self.model_dump(mode="json", by_alias=True, exclude_none=True)
        return data
